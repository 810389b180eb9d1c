"""The predictive model's physical rules (basil.core.predictive): intercepts per device kind, slopes
per device, sequential streams on spinning disks, an empty datastore's write cost."""

from __future__ import annotations

import numpy as np
import pytest

from basil.core.device_model import DeviceFit, FitStatus
from basil.core.normalized_load import MODEL_FITTED, MODEL_PRIOR, DatastoreModel, Models, resolve_models
from basil.core.params import BalancerParams
from basil.core.predictive import (
    NO_LOAD_MS,
    POSITIONING_MS,
    PredictiveState,
    device_lines,
    disk_demands,
    positioning_share,
    write_extra,
)

from .builders import datastore, disk, snapshot, workload


def _fitted(name: str, performance: float, intercept: float) -> DatastoreModel:
    fit = DeviceFit(
        FitStatus.OK, performance=performance, slope=1.0 / performance, intercept=intercept, credible=True
    )
    return DatastoreModel(name, "pod", MODEL_FITTED, performance, performance, fit)


def _prior(name: str, performance: float, intercept: float | None = None) -> DatastoreModel:
    # A line that is not credible (here: too small an OIO range): its P comes from the prior and its
    # intercept says nothing of the device.
    fit = DeviceFit(
        FitStatus.OK,
        performance=performance,
        slope=0.01,
        intercept=intercept,
        credible=False,
        reason="OIO range too small",
    )
    return DatastoreModel(name, "pod", MODEL_PRIOR, performance, performance, fit if intercept else None)


def test_a_datastore_without_a_credible_fit_takes_its_kinds_intercept_and_per_device_slope() -> None:
    # Two fitted FC LUNs of 6 and 12 spindles (P 0.3 per spindle, intercepts 6 and 8 ms) and a new
    # 3-spindle FC LUN on the kind's prior (P 0.54), with a non-credible line of intercept 40 ms. One
    # IO is served by one spindle: the no-load latency does not depend on the spindle count (not the
    # pod's intercept/slope ratio times its slope, 30 ms here), and the slope goes as 1/spindles
    # (BASIL §4, Fig. 6) at the kind's fitted P per spindle.
    models = Models(
        datastores={
            "fc6": _fitted("fc6", 1.8, 6.0),
            "fc12": _fitted("fc12", 3.6, 8.0),
            "fc3": _prior("fc3", 0.54, intercept=40.0),
            "sata": _prior("sata", 0.64),
            "odd": _prior("odd", 1.0),
        },
        disks={},
        stand_in={"pod": 1.0},
    )
    names = ["fc6", "fc12", "fc3", "sata", "odd"]
    intercepts, slopes, sources = device_lines(
        models, names, ["fc15k", "fc15k", "fc15k", "sata7k", None], [6, 12, 3, 8, None]
    )
    assert sources == ("fitted", "fitted", "kind_fitted", "kind_datasheet", "pod_ratio")
    assert intercepts[:3].tolist() == pytest.approx([6.0, 8.0, 7.0])
    assert slopes[2] == pytest.approx(1.0 / (0.3 * 3))
    # No fitted datastore of its kind: the data-sheet no-load time (seek, half a rotation, controller).
    assert intercepts[3] == pytest.approx(NO_LOAD_MS["sata7k"])
    assert slopes[3] == pytest.approx(1.0 / 0.64)
    # Nothing known of the kind: the pod's median intercept/slope ratio (fitted lines only).
    ratio = float(np.median([6.0 * 1.8, 8.0 * 3.6]))
    assert intercepts[4] == pytest.approx(ratio * 1.0)
    # Without kinds the old rule holds everywhere but for the non-credible intercept.
    plain, _, plain_sources = device_lines(models, names)
    assert plain_sources[2] == "pod_ratio"
    assert plain[2] == pytest.approx(ratio / 0.54)


def _demands() -> tuple[dict[str, float], dict[str, float]]:
    """A random OLTP disk and a sequential 64 KB read stream: (a, b, oio, reads) of each."""
    oltp = disk("oltp/d0", "fc", load=None, workload=workload(8, 8, 70, 100))
    stream = disk("backup/d0", "fc", load=None, workload=workload(4, 64, 95, 0))
    snap = snapshot([datastore("fc", performance=1.0), datastore("flash", performance=20.0)], [oltp, stream])
    params = BalancerParams()
    d = disk_demands(resolve_models(snap, params), params.workload_model.constants)
    r, s = d["oltp/d0"], d["backup/d0"]
    return (
        {"a": r.a, "b": r.b, "o": r.oio, "reads": r.line_oio},
        {"a": s.a, "b": s.b, "o": s.oio, "reads": s.line_oio},
    )


@pytest.mark.parametrize("kind", ["fc15k", "sata7k"])
def test_a_sequential_stream_left_alone_on_spinning_disks_skips_positioning(kind: str) -> None:
    # The stream shares an FC (or SATA) datastore with a random disk, interleaved: its IOs find the
    # heads elsewhere and cost as much as random ones. Once the random disk leaves, it runs alone and
    # skips the seek and rotation that are most of a random IO's time: both the no-load time and what
    # each queued IO adds shrink by (1 − p + p·rho), with p the positioning share and rho the mix's
    # effective random share. Flash has no positioning: there the prediction stays eq. 1's.
    oltp, stream = _demands()
    k4 = BalancerParams().workload_model.constants.k4
    share = positioning_share(kind)
    assert share == pytest.approx(POSITIONING_MS[kind] / NO_LOAD_MS[kind])
    assert positioning_share("ssd") == 0.0

    def state(p: float) -> PredictiveState:
        st = PredictiveState(np.array([6.0]), np.array([0.5]))
        st.positioning = [p]
        st.k4 = k4
        for d in (oltp, stream):
            st.add(0, d["a"], d["b"], d["o"], 1)
        st.anchor([oltp["reads"] + stream["reads"]], (oltp["a"] + stream["a"], 0.0))
        return st

    spinning, flash = state(share), state(0.0)
    line = 6.0 + 0.5 * (oltp["reads"] + stream["reads"])
    # No move: both on the fitted line at the measured outstanding reads.
    assert spinning.latency(0) == pytest.approx(line)
    assert flash.latency(0) == pytest.approx(line)
    for st in (spinning, flash):
        st.add(0, -oltp["a"], -oltp["b"], -oltp["o"], -1)
    # The stream alone (rho = its random share, 0): its positioning is gone.
    a_mix = oltp["a"] + stream["a"]
    x_mix = a_mix - (oltp["b"] + stream["b"]) / (oltp["o"] + stream["o"])
    rho = (k4 + 1.0) * x_mix / a_mix - k4
    g0 = 1.0 - share + share * rho
    slope_a = 0.5 * (oltp["reads"] + stream["reads"]) / a_mix
    expected = (1.0 - share) * (6.0 + slope_a * stream["a"]) / g0
    assert spinning.latency(0) == pytest.approx(expected)
    assert spinning.latency(0) < 0.1 * 6.0  # far below a random IO's no-load time
    assert flash.latency(0) > 6.0  # eq. 1's sequential discount only touches the queue part


def test_a_random_disk_joining_an_empty_spinning_datastore_sees_the_random_line() -> None:
    # An empty FC datastore: a fully random mix (rho = 1, factor 1), so a random disk arriving is
    # predicted at intercept + slope · its load, as without the positioning rule.
    oltp, _ = _demands()
    st = PredictiveState(np.array([6.0]), np.array([0.5]))
    st.positioning = [positioning_share("fc15k")]
    st.anchor([0.0], (oltp["a"], 0.0))
    assert st.latency(0) == pytest.approx(6.0)
    st.add(0, oltp["a"], oltp["b"], oltp["o"], 1)
    assert st.latency(0) == pytest.approx(6.0 + 0.5 * oltp["a"])


def test_an_empty_flash_datastores_slope_counts_its_write_cost_of_the_pods_mix() -> None:
    # An empty flash RAID 5 datastore on a line for a typical mix (a prior, or an earlier fit). Its
    # writes count write_cost · (1 + K3)/K3 times eq. 1's, so the pod's mix counts (Σa + e·Σwa)/Σa
    # times as much X there as eq. 1 says: the slope per unit of X is divided by that, and the pod's
    # typical disk lands where the line says.
    constants = BalancerParams().workload_model.constants
    e = write_extra("ssd", constants)
    assert e > 0
    pod_a, pod_wa = 40.0, 6.0
    st = PredictiveState(np.array([0.2, 5.0]), np.array([0.02, 1.0]))
    st.extra = [e, 0.0]
    st.anchor([0.0, 0.0], (pod_a, pod_wa))
    assert st.s[0] == pytest.approx(0.02 * pod_a / (pod_a + e * pod_wa))
    assert st.s[1] == pytest.approx(1.0)  # no write extra: unchanged
    # A disk carrying the pod's mix in miniature (a tenth of it) is predicted on the line at its own
    # eq. 1 load.
    st.add(0, pod_a / 10, 0.0, pod_a / 10, 1, wa=pod_wa / 10)
    assert st.latency(0) == pytest.approx(0.2 + 0.02 * pod_a / 10)
