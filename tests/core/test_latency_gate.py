"""Storage DRS's I/O latency threshold as a gate: datastore latency from host samples, the gate, and
a plan emptied while the gate is closed."""

from __future__ import annotations

import math

import pytest

from basil.core.balancer import recommend
from basil.core.latency_gate import HostLatency, datastore_latency, latency_gate, without_moves
from basil.core.plan import STOP_LATENCY_BELOW_THRESHOLD
from basil.core.snapshot import DEFAULT_POD

from .builders import datastore, disk, snapshot


def test_latency_is_iops_weighted_over_hosts() -> None:
    # ds1: 900 IOPS at 10 ms and 100 IOPS at 40 ms -> (9000 + 4000) / 1000 = 13 ms.
    samples = [HostLatency("ds1", 900, 10), HostLatency("ds1", 100, 40), HostLatency("ds2", 50, 3)]
    assert datastore_latency(samples) == pytest.approx({"ds1": 13.0, "ds2": 3.0})


@pytest.mark.parametrize(
    "sample",
    [
        pytest.param(HostLatency("ds1", 0, 90), id="idle-host"),
        pytest.param(HostLatency("ds1", 100, math.nan), id="no-latency"),
        pytest.param(HostLatency("ds1", -5, 90), id="negative-iops"),
        pytest.param(HostLatency("ds1", 100, -1), id="negative-latency"),
    ],
)
def test_samples_that_say_nothing_weigh_nothing(sample: HostLatency) -> None:
    assert datastore_latency([HostLatency("ds1", 100, 10), sample]) == pytest.approx({"ds1": 10.0})
    assert datastore_latency([sample]) == {}  # unknown, not zero


@pytest.mark.parametrize(
    ("latencies", "is_open"),
    [
        pytest.param({"ds1": 14.9, "ds2": 3.0}, False, id="all-below"),
        pytest.param({"ds1": 15.0}, False, id="at-the-threshold"),  # Storage DRS: "exceeds"
        pytest.param({"ds1": 15.1, "ds2": 3.0}, True, id="one-above"),
        pytest.param({}, False, id="nothing-observed"),
    ],
)
def test_the_gate_opens_when_a_datastore_exceeds_the_threshold(
    latencies: dict[str, float], is_open: bool
) -> None:
    assert latency_gate(15.0, latencies, ["ds1", "ds2"]).open is is_open


def test_only_the_pods_datastores_count_and_the_reason_names_the_hottest() -> None:
    gate = latency_gate(15.0, {"ds1": 9.0, "ds2": 12.5, "elsewhere": 80.0}, ["ds1", "ds2"])
    assert not gate.open
    assert gate.hottest == ("ds2", 12.5)
    reason = gate.reason({"ds2": "gold-lun"})
    assert reason.startswith("no datastore is above the I/O latency threshold of 15 ms")
    assert "highest: gold-lun at 12.5 ms" in reason
    hot = latency_gate(15.0, {"ds1": 31.26}, ["ds1"])
    assert hot.reason() == "ds1 is at 31.3 ms, above the I/O latency threshold of 15 ms"
    assert "no datastore latency observed yet" in latency_gate(15.0, {}, ["ds1"]).reason()


def test_a_closed_gate_empties_the_pods_plan_and_keeps_its_imbalance() -> None:
    snap = snapshot(
        [datastore("hot"), datastore("cold")],
        [disk(f"d{i}", "hot", load=100) for i in range(4)],
    )
    plan = recommend(snap)
    assert plan.moves, "the unbalanced pod has moves to drop"
    before = plan.pod(DEFAULT_POD).before
    gated = without_moves(plan, DEFAULT_POD, "why")
    assert gated.moves == ()
    outcome = gated.pod(DEFAULT_POD)
    assert (outcome.stop, outcome.stop_reason) == (STOP_LATENCY_BELOW_THRESHOLD, "why")
    assert outcome.before == before
    assert outcome.after == before  # nothing moves, so nothing changes
    assert (outcome.moves, outcome.gb) == (0, 0.0)
    assert gated.notes[-1] == f"pod {DEFAULT_POD}: why"
    assert without_moves(plan, "another-pod", "why").moves == plan.moves
