"""Normalized load and imbalance (eq. 5), and where each L and P comes from."""

from __future__ import annotations

import math
import random
from collections import Counter
from dataclasses import replace

import pytest

from basil.core.balancer import recommend
from basil.core.device_model import ASSUMED_DEVICES, PER_DEVICE_P, DeviceSample
from basil.core.normalized_load import (
    LOAD_GIVEN,
    LOAD_SAMPLES,
    LOAD_WORKLOAD,
    MODEL_FITTED,
    MODEL_GIVEN,
    MODEL_NEW,
    MODEL_PRIOR,
    imbalance,
    resolve_models,
)
from basil.core.params import BalancerParams
from basil.core.snapshot import Disk, load_snapshot_json
from basil.core.workload_model import WorkloadConstants, WorkloadModelParams, WorkloadSample, load_metric
from basil.errors import ValidationError

from .builders import EXAMPLES, datastore, disk, snapshot, workload


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        pytest.param([5, 5, 5], 0.0, id="balanced"),
        pytest.param([3, 0, 0], math.sqrt(2), id="all-on-one-of-three"),
        pytest.param([1, 3], 0.5, id="two"),
        pytest.param([0, 0], 0.0, id="no-load"),
        pytest.param([], 0.0, id="empty"),
    ],
)
def test_imbalance_is_sigma_over_mu(values: list[float], expected: float) -> None:
    assert imbalance(values) == pytest.approx(expected)


def test_load_precedence_given_then_workload_then_samples() -> None:
    w = workload(8, 8, 70, 100)
    samples = (WorkloadSample(4, 8, 70, 100),)
    disks = [
        Disk("a", "vm", "ds", 1, frozenset(), load=5.0, workload=w, samples=samples),
        Disk("b", "vm", "ds", 1, frozenset(), workload=w, samples=samples),
        Disk("c", "vm", "ds", 1, frozenset(), samples=samples),
    ]
    models = resolve_models(snapshot([datastore("ds")], disks), BalancerParams())
    k = WorkloadConstants()
    assert (models.disks["a"].load, models.disks["a"].source) == (5.0, LOAD_GIVEN)
    assert (models.disks["b"].load, models.disks["b"].source) == (
        pytest.approx(load_metric(w, k)),
        LOAD_WORKLOAD,
    )
    assert models.disks["c"].source == LOAD_SAMPLES
    assert models.disks["c"].load == pytest.approx(load_metric(workload(4, 8, 70, 100), k))
    assert models.disks["c"].samples_used == 1


def test_constants_come_from_params() -> None:
    w = workload(8, 8, 70, 100)
    k = WorkloadConstants(0.0, 0.0, 0.0, 0.0)
    params = BalancerParams(workload_model=WorkloadModelParams(constants=k))
    models = resolve_models(snapshot([datastore("ds")], [disk("d", "ds", workload=w)]), params)
    assert models.disks["d"].load == pytest.approx(8 * 8 * 0.7 * 1.0)


def test_samples_outside_the_window_are_an_error_naming_the_disk() -> None:
    d = Disk("d", "vm", "ds", 1, frozenset(), samples=(WorkloadSample(4, 8, 70, 100, time=0.0),))
    snap = snapshot([datastore("ds")], [disk("ok", "ds"), d], now=100 * 3600.0)
    with pytest.raises(ValidationError) as err:
        resolve_models(snap, BalancerParams())
    assert err.value.problems[0].field == "disks[1].samples"


def test_negative_constants_that_make_l_negative_are_reported() -> None:
    params = BalancerParams(workload_model=WorkloadModelParams(constants=WorkloadConstants(k1=-10.0)))
    snap = snapshot([datastore("ds")], [disk("d", "ds", workload=workload(2, 8, 70, 100))])
    with pytest.raises(ValidationError) as err:
        resolve_models(snap, params)
    assert err.value.problems[0].field == "disks[0]"


def good_samples(slope: float) -> tuple[DeviceSample, ...]:
    return tuple(DeviceSample("esx-1", o, 1 + slope * o, 100, 8, 0, time=float(o)) for o in (2, 4, 8, 16, 32))


def test_performance_sources_and_stand_in() -> None:
    given = datastore("given", performance=2.0)
    fitted = replace(datastore("fitted", performance=None), samples=good_samples(0.25))  # P = 4
    empty = datastore("empty", performance=None)
    broken = replace(datastore("broken", performance=None), samples=good_samples(-0.1))
    models = resolve_models(snapshot([given, fitted, empty, broken], []), BalancerParams())
    m = models.datastores
    assert (m["given"].source, m["given"].performance) == (MODEL_GIVEN, 2.0)
    assert m["fitted"].source == MODEL_FITTED
    assert m["fitted"].performance == pytest.approx(4.0)
    assert m["empty"].source == MODEL_NEW
    assert m["empty"].fit is None
    assert m["broken"].source == MODEL_NEW
    assert m["broken"].fit is not None
    assert not m["broken"].fit.ok
    # New datastores get the median of the pod's models as a stand-in (here of 2 and 4).
    assert models.stand_in["default"] == pytest.approx(3.0)
    assert m["empty"].effective_performance == pytest.approx(3.0)
    assert m["given"].effective_performance == 2.0


def test_given_performance_wins_over_samples() -> None:
    ds = replace(datastore("ds", performance=1.5), samples=good_samples(0.25))
    m = resolve_models(snapshot([ds], []), BalancerParams()).datastores["ds"]
    assert (m.source, m.performance) == (MODEL_GIVEN, 1.5)
    assert m.fit is not None
    assert m.fit.performance == pytest.approx(4.0)


def test_stand_in_is_per_pod_and_one_without_models() -> None:
    stores = [
        datastore("a", performance=0.5, pod="p1"),
        datastore("b", performance=None, pod="p1"),
        datastore("c", performance=None, pod="p2"),
    ]
    models = resolve_models(snapshot(stores, []), BalancerParams())
    assert models.stand_in == {"p1": 0.5, "p2": 1.0}


def test_a_described_device_gets_a_prior_and_is_not_new_when_confident() -> None:
    known = replace(datastore("ssd", performance=None), device_kind="ssd", spindles=4)
    kind_only = replace(datastore("sata", performance=None), device_kind="sata7k")
    fitted = replace(datastore("fitted", performance=None), samples=good_samples(0.25))  # P = 4
    models = resolve_models(snapshot([known, kind_only, fitted], []), BalancerParams())
    m = models.datastores
    assert m["ssd"].source == MODEL_PRIOR
    assert not m["ssd"].new  # so it may receive more than one disk in a round
    assert m["ssd"].performance == pytest.approx(4 * PER_DEVICE_P["ssd"])
    # A kind without a device count is not confident: still new, its prior only the stand-in.
    assert m["sata"].new
    assert m["sata"].effective_performance == pytest.approx(ASSUMED_DEVICES * PER_DEVICE_P["sata7k"])
    # A credible fit beats the prior.
    with_fit = replace(known, name="ssd2", samples=good_samples(0.25))
    assert resolve_models(snapshot([with_fit], []), BalancerParams()).datastores["ssd2"].performance == (
        pytest.approx(4.0)
    )


def test_described_new_luns_can_take_more_than_one_workload_in_a_round() -> None:
    # BASIL §6.3 (Table 4): the 3- and 9-disk LUNs are new. Unknown, each gets one workload per
    # round; described (15k FC: a prior of 0.54 and 1.62, the paper measured 0.6 and 1.7 in Table 5)
    # the 9-disk LUN is a modelled datastore from the start and gets several.
    doc = load_snapshot_json((EXAMPLES / "basil-table4.json").read_text(encoding="utf-8"))
    unknown = recommend(doc.snapshot, doc.params)
    assert Counter(m.target for m in unknown.moves) == {"3diskLUN": 1, "9diskLUN": 1}
    spindles = {"3diskLUN": 3, "9diskLUN": 9}
    described = replace(
        doc.snapshot,
        datastores=tuple(
            replace(ds, device_kind="fc15k", spindles=spindles[ds.name]) if ds.name in spindles else ds
            for ds in doc.snapshot.datastores
        ),
    )
    plan = recommend(described, doc.params)
    assert plan.datastores["9diskLUN"].source == MODEL_PRIOR
    assert not plan.datastores["9diskLUN"].new
    assert Counter(m.target for m in plan.moves)["9diskLUN"] > 1


@pytest.mark.parametrize(
    "constants",
    [WorkloadConstants(), WorkloadConstants(k1=1, k2=2, k3=0, k4=3)],
    ids=["defaults", "integer-constants"],
)
def test_every_workload_load_is_eq_1_of_its_workload_bit_for_bit(constants: WorkloadConstants) -> None:
    """resolve_models computes eq. 1 for all workload-modelled disks at once (numpy): each L is the
    float load_metric gives for that disk, among disks given by L, integer fields and extremes."""
    rng = random.Random(5)
    disks = []
    for i in range(300):
        oio = rng.choice([rng.uniform(0.0, 64.0), float(rng.randint(0, 32)), rng.randint(0, 32), 0.0, 1e6])
        w = workload(oio, rng.choice([4, 8.0, 0.5, 1024.0]), rng.uniform(0, 100), rng.choice([0, 100, 33.3]))
        given = rng.random() < 0.2
        disks.append(disk(f"vm{i}/d0", "a", load=rng.uniform(0.0, 99.0) if given else None, workload=w))
    snap = snapshot([datastore("a")], disks)
    params = BalancerParams(workload_model=WorkloadModelParams(constants=constants))
    models = resolve_models(snap, params)
    for d in snap.disks:
        assert d.workload is not None
        expected = d.load if d.load is not None else load_metric(d.workload, constants)
        assert models.disks[d.id].load == expected
        assert math.copysign(1.0, models.disks[d.id].load) == math.copysign(1.0, expected)
