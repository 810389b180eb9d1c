"""The separated device model's inputs and its use by the what-if, on data the lab cannot make
(missing seek counters, collinear writes, a stored separation that makes no sense): the service
falls back to the plain line and says why."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime
from typing import Any

import numpy as np
import pytest

from basil.app.modelling import (
    MAX_SEPARATION_ERROR,
    DatastoreFit,
    destage_intervals,
    kept_separation,
    separation_details,
    separation_errors,
)
from basil.app.whatif import device_params
from basil.core.consolidation import (
    DESTAGE_FROM_READS,
    PARALLELISM_PAPER,
    ReadInterval,
    SeparatedFit,
    separate_destage,
)
from basil.core.device_model import (
    SOURCE_CARRIED,
    SOURCE_FIT,
    SOURCE_PRIOR,
    AggregatedInterval,
    DeviceFit,
    FitStatus,
)
from basil.store import Store
from basil.store.fits import DatastoreModel
from basil.store.samples import DevicePoints, DiskSampleIn, cached_random_writes, record_disk_samples
from tests.store.builders import T0

NOW = datetime(2026, 11, 26, tzinfo=UTC)


def interval(ts: int, oio: float, latency_ms: float) -> AggregatedInterval:
    return AggregatedInterval(f"{ts}", oio, latency_ms, 100.0, 8.0, 0.0, 1, time=float(ts))


def sample(
    vm: str, ts: int, writes: float, latency: float, seeks: tuple[float, float, float] | None
) -> DiskSampleIn:
    small, medium, large = seeks if seeks is not None else (None, None, None)
    return DiskSampleIn(
        "vc", vm, "scsi0:1", ts, 100.0, writes, 1.0, 0.1, 8.0, latency, 8.0, 8.0, small, medium, large
    )


def test_destaged_operations_are_the_cached_writes_times_their_random_share(store: Store) -> None:
    with store.session() as session:
        record_disk_samples(
            session,
            [
                # cached (≤ 1 ms; whole-ms counters read 0), 60 % random, beside one writing through (9 ms)
                sample("vm-1", T0 + 20, 100.0, 0.0, (40.0, 30.0, 30.0)),
                sample("vm-2", T0 + 20, 50.0, 9.0, (0.0, 0.0, 100.0)),
                sample("vm-1", T0 + 40, 100.0, 1.0, (40.0, 50.0, 10.0)),
                sample("vm-2", T0 + 40, 30.0, 0.0, (0.0, 10.0, 0.0)),
                # a cached writer without seek counters: its random share, so D, unknown
                sample("vm-1", T0 + 60, 100.0, 0.0, None),
                sample("vm-2", T0 + 60, 20.0, 0.0, (5.0, 5.0, 0.0)),
                # an uncached writer without seek counters does not matter: not destaged later
                sample("vm-1", T0 + 80, 100.0, 0.0, (0.0, 0.0, 0.0)),  # no seeks counted: unknown
                sample("vm-2", T0 + 100, 50.0, 9.0, None),
                sample("vm-3", T0 + 100, 50.0, 0.0, (1.0, 0.0, 0.0)),  # not on the datastore
            ],
        )
    with store.read_session() as session:
        writes = cached_random_writes(
            session, "vc", [("vm-1", "scsi0:1"), ("vm-2", "scsi0:1")], T0, T0 + 120, write_cache_ms=1.0
        )
    found = {ts: (w.random_iops, w.unknown) for ts, w in writes.items()}
    assert found == {
        T0 + 20: (pytest.approx(60.0), 0),
        T0 + 40: (pytest.approx(60.0 + 30.0), 0),
        T0 + 60: (pytest.approx(10.0), 1),
        T0 + 80: (0.0, 1),
        T0 + 100: (0.0, 0),
    }
    kept = [interval(T0 + 20 * k, 2.0 + k, 10.0 + k) for k in range(1, 7)]  # T0 + 120: no sample
    out = destage_intervals(kept, writes, write_cost=2.0)
    assert [(i.oio, i.latency_ms, i.destaged_ops) for i in out] == [
        (3.0, 11.0, pytest.approx(120.0)),
        (4.0, 12.0, pytest.approx(180.0)),
        (7.0, 15.0, 0.0),
    ]


def lab_like(ratio: np.ndarray, noise: float, seed: int = 3) -> list[ReadInterval]:
    """Intervals of L = (a + b·OIO) / (1 − D·c/1000), D = ratio × read IOPS (Little: OIO / L)."""
    rng = np.random.default_rng(seed)
    a, b, c = 6.0, 0.5, 2.0
    out = []
    for oio, r in zip(np.linspace(2.0, 30.0, len(ratio)), ratio, strict=True):
        # Solve L = a + b·oio + c·(D·L/1000) with D = r·1000·oio / L: L = a + b·oio + c·r·oio.
        latency = (a + b * oio + c * r * oio) * (1 + noise * rng.standard_normal())
        out.append(ReadInterval(float(oio), float(latency), float(r * 1000.0 * oio / latency)))
    return out


def test_collinear_writes_are_not_taken_for_a_separation() -> None:
    # Writes in a fixed proportion to the reads: OIO and destaging move together, no separation.
    assert separate_destage(lab_like(np.full(40, 0.4), noise=0.02)) is None
    # Nearly so (the mix varies by ±5 %): least squares gives a split, its errors say it is not one.
    near = lab_like(np.random.default_rng(0).uniform(0.38, 0.42, 40), noise=0.02)
    fit = separate_destage(near)
    assert fit is not None
    assert separation_errors(near, fit)[0] > MAX_SEPARATION_ERROR
    # Mixes that vary between intervals tell them apart.
    varied = lab_like(np.random.default_rng(1).uniform(0.0, 1.0, 40), noise=0.02)
    fit = separate_destage(varied)
    assert fit is not None
    b_err, c_err = separation_errors(varied, fit)
    assert b_err <= MAX_SEPARATION_ERROR
    assert c_err is not None
    assert c_err <= MAX_SEPARATION_ERROR
    assert fit.slope_ms == pytest.approx(0.5, rel=0.2)
    assert fit.destage_ms == pytest.approx(2.0, rel=0.1)


def model(ds: str, details: dict[str, Any], quality: str = "ok") -> DatastoreModel:
    return DatastoreModel("vc", ds, NOW, NOW, NOW, 0.25, 4.0, 8.0, 0.9, 40, 0, quality, details)


SEPARATED = {"intercept_ms": 6.0, "slope_ms": 0.5, "destage_ms": 2.0, "points": 40}


@pytest.mark.parametrize(
    ("separation", "why"),
    [
        ({**SEPARATED, "destage_ms": -1.0}, "no separated fit kept"),  # stored nonsense
        ({**SEPARATED, "slope_ms": 0.0}, "no separated fit kept"),
        ({**SEPARATED, "intercept_ms": "6"}, "no separated fit kept"),
        ({**SEPARATED, "destage_ms": float("nan")}, "no separated fit kept"),
        (None, "only 3 intervals with the disks' samples"),  # the modelling's own note
    ],
)
def test_an_unusable_separation_leaves_the_plain_line(separation: dict[str, Any] | None, why: str) -> None:
    details: dict[str, Any] = {"destage_separation": separation}
    if separation is None:
        details["destage_separation_note"] = why
    device, _ = device_params("vc", "ds-1", {}, {("vc", "ds-1"): model("ds-1", details)})
    assert device.parallelism == pytest.approx(8.0 / 4.0)  # intercept / slope of the stored line
    assert device.positioning_ms == 8.0
    assert device.destage_ms is None
    assert device.destage_op_ms == pytest.approx(4.0)  # t_pos / m
    assert device.destage_source == f"{DESTAGE_FROM_READS} (device model, destaging not separated: {why})"
    assert device.parallelism_source == "device model (intercept / slope)"


def test_a_separation_is_used_only_with_a_credible_model_and_stands_in_for_others() -> None:
    models = {
        ("vc", "ds-1"): model("ds-1", {"destage_separation": SEPARATED}, quality="narrow_oio"),
        ("vc", "ds-2"): model("ds-2", {"destage_separation": SEPARATED}),
        ("vc", "ds-3"): model("ds-3", {"destage_separation": {**SEPARATED, "destage_ms": 4.0}}),
    }
    # ds-1's model is not credible: the median of the vCenter's others stands in.
    device, _ = device_params("vc", "ds-1", {}, models)
    assert device.parallelism == pytest.approx(12.0)
    assert device.positioning_ms == pytest.approx(6.0)
    assert device.destage_ms == pytest.approx(3.0)
    assert device.destage_source == "stand-in: median of the vCenter's 2 separated fits (c)"
    # Without any credible model: the paper's single server, no t_pos, so no destage cost at all.
    alone, _ = device_params("vc", "ds-1", {}, {("vc", "ds-1"): models[("vc", "ds-1")]})
    assert (alone.parallelism, alone.parallelism_source, alone.destage_op_ms) == (
        1.0,
        PARALLELISM_PAPER,
        None,
    )


def test_a_model_keeps_the_separation_of_the_line_it_settled_on() -> None:
    points = DevicePoints((), (), (), (), (), ())
    sep = SeparatedFit(intercept_ms=6.0, slope_ms=0.5, destage_ms=2.0, points=40)
    window = DatastoreFit(
        DeviceFit(FitStatus.OK, credible=True, source=SOURCE_FIT), points, sep, "", (0.1, 0.05)
    )
    fitted = DeviceFit(FitStatus.OK, credible=True, source=SOURCE_FIT)
    kept, note = kept_separation(window, fitted, None)
    assert (kept, note) == (separation_details(sep, (0.1, 0.05)), "")
    assert kept is not None
    assert (kept["write_cost"], kept["destage_rel_error"]) == (1.0, 0.05)
    # This window's fit not credible, the previous P carried: so is the previous separation.
    before = model("ds-1", {"destage_separation": kept})
    carried = DeviceFit(FitStatus.NARROW_OIO_RANGE, source=SOURCE_CARRIED)
    assert kept_separation(window, carried, before) == ({**kept, "carried": True}, "")
    assert kept_separation(window, carried, model("ds-1", {})) == (None, "carried forward without one")
    # A prior's P has no line of its own to separate.
    prior = DeviceFit(FitStatus.TOO_FEW_POINTS, source=SOURCE_PRIOR)
    assert kept_separation(window, prior, before) == (None, "no fit of this window (source prior)")
    # This window's separation not kept: its note says why.
    why = "only 3 intervals with the disks' samples"
    none = dataclasses.replace(window, separated=None, separation_note=why)
    assert kept_separation(none, fitted, before) == (None, why)
