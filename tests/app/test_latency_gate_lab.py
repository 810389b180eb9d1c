"""Storage DRS's I/O latency threshold against the lab: the service balances the BASIL §6.3 pod only
while a datastore's observed latency (the newest host samples, IOPS-weighted) is above the threshold,
and says so in the round's reasons when it skips."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from basil.app import Actor
from basil.config import BalanceConfig
from tests.app.conftest import SCENARIOS, ServiceFactory, collect
from tests.lab_vcenter import LabControlError
from tests.vcenter.labproc import LabProcess

pytestmark = pytest.mark.lab

OPERATOR = Actor("tester", "operator", "127.0.0.1")


@pytest.fixture(scope="module")
def lab() -> Iterator[LabProcess]:
    with LabProcess.start(SCENARIOS / "basil-6.3.yaml", speed=120) as lab:
        yield lab


def _latency(lab: LabProcess, name: str, intervals: int = 3) -> float:
    """The lab's true IOPS-weighted latency of a datastore over its last *intervals* intervals."""
    try:
        truth = lab.truth(intervals)
    except LabControlError as err:
        if err.status != 409:  # none solved yet: the lab solves intervals as its clock is read
            raise
        lab.step(intervals)
        truth = lab.truth(intervals)
    ds = next(d for d in truth["datastores"] if d["name"] == name)
    return float(ds["avg_latency_ms"])


def test_truth_has_a_datastore_latency(lab: LabProcess) -> None:
    # What the tests below rely on: the §6.3 LUN with all eight workloads is well above 15 ms.
    assert _latency(lab, "6diskLUN") > 15 * 1.5


def test_no_move_while_every_datastore_is_below_the_threshold(
    lab: LabProcess, make_service: ServiceFactory
) -> None:
    observed = _latency(lab, "6diskLUN")
    threshold = round(observed * 3)  # far above the lab's measurement noise
    svc = make_service(lab, pod={"balance": BalanceConfig(latency_threshold_ms=threshold)})
    collect(svc, 6)
    assert svc.run_job("model")["outcome"] == "succeeded"

    rec = svc.recommend_now("basil-pod", OPERATOR)
    assert rec["moves"] == []
    assert rec["stop"] == "latency_below_threshold"
    assert rec["before"]["imbalance"] > 1.0  # the imbalance is still reported
    assert f"no datastore is above the I/O latency threshold of {threshold:g} ms" in rec["stop_reason"]
    assert "highest: 6diskLUN at" in rec["stop_reason"]
    assert any("I/O latency threshold" in n for n in rec["notes"])
    # The latency Basil judged by is the lab's, within the measurement noise.
    seen = svc.rounds["basil-pod"].summary["latency"]["observed_ms"]
    six = next(ds.moid for ds in svc.inventory("lab").datastores.values() if ds.name == "6diskLUN")
    assert seen[six] == pytest.approx(_latency(lab, "6diskLUN"), rel=0.3)
    assert svc.rounds["basil-pod"].summary["latency"]["balancing"] is False
    assert svc.run_job("recommend")["outcome"] == "succeeded"  # the scheduled job says the same


def test_balances_once_a_datastore_is_above_the_threshold(
    lab: LabProcess, make_service: ServiceFactory
) -> None:
    svc = make_service(lab)  # the default threshold, 15 ms
    rec_without_samples = svc.recommend_now("basil-pod", OPERATOR)
    assert rec_without_samples["moves"] == []
    assert "no datastore latency observed yet" in rec_without_samples["stop_reason"]

    collect(svc, 6)
    assert svc.run_job("model")["outcome"] == "succeeded"
    rec = svc.recommend_now("basil-pod", OPERATOR)
    assert rec["moves"], rec
    assert rec["stop"] != "latency_below_threshold"
    assert svc.rounds["basil-pod"].summary["latency"]["balancing"] is True
