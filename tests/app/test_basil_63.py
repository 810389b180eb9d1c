"""BASIL §6.3 end to end: every workload on one datastore, two new ones; the service collects, models,
recommends, and the applied plan lowers the lab's true IOPS-weighted latency and raises its total IOPS."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime

import pytest

from basil.app import Actor
from tests.app.conftest import SCENARIOS, ServiceFactory, collect
from tests.vcenter.labproc import LabProcess

pytestmark = pytest.mark.lab

OPERATOR = Actor("tester", "operator", "127.0.0.1")
MEASURE_INTERVALS = 45  # 15 minutes of simulated time


@pytest.fixture(scope="module")
def lab() -> Iterator[LabProcess]:
    with LabProcess.start(SCENARIOS / "basil-6.3.yaml", speed=120) as lab:
        yield lab


def test_service_rebalances_the_63_scenario(lab: LabProcess, make_service: ServiceFactory) -> None:
    svc = make_service(lab)
    collect(svc, 16)  # some 16 simulated minutes: ten would leave 6diskLUN's OIO range too narrow to fit
    model = svc.run_job("model")
    assert model["outcome"] == "succeeded"
    pods = svc.pods()
    assert [p["name"] for p in pods] == ["basil-pod"]
    by_name = {d["name"]: d for d in pods[0]["datastores"]}
    assert by_name["6diskLUN"]["model_status"] == "ok"
    assert by_name["6diskLUN"]["P"] > 0
    assert by_name["3diskLUN"]["load_sum_L"] == 0  # new and empty (§6.3)
    assert pods[0]["imbalance"] > 1.0

    rec = svc.recommend_now("basil-pod", OPERATOR)
    assert rec["moves"], rec
    targets = {m["to_name"] for m in rec["moves"]}
    assert targets == {"3diskLUN", "9diskLUN"}  # each new datastore takes one workload first
    assert all(m["from_name"] == "6diskLUN" for m in rec["moves"])
    assert rec["after"]["imbalance"] < rec["before"]["imbalance"]
    assert svc.latest_recommendation("basil-pod")["id"] == rec["id"]

    before = lab.truth(MEASURE_INTERVALS)
    plan = svc.create_plan(OPERATOR, recommendation_id=rec["id"])
    assert plan["state"] == "proposed"
    assert len(plan["moves"]) == len(rec["moves"])
    svc.approve_plan(plan["id"], OPERATOR)
    started = svc.apply_plan(plan["id"], OPERATOR)
    assert started["state"] == "running"
    done = svc.wait_for_plan(plan["id"], timeout_s=300)
    assert done["state"] == "succeeded", done
    assert all(m["state"] == "succeeded" and m["progress"] == 100 for m in done["moves"])

    placed = {
        (vm["name"], d["unit"]): d["datastore"]
        for vm in lab.control("GET", "/lab/placement")["vms"]
        for d in vm["disks"]
    }
    for m in done["moves"]:
        assert placed[(m["vm"], ":".join(m["disk"].split(":")[-2:]))] == m["to_name"]

    # Let the lab run MEASURE_INTERVALS intervals with the new placement, then compare the truth.
    start = lab.control("GET", "/lab/time")
    collect(svc, 1, pause_s=0)
    while True:
        now = lab.control("GET", "/lab/time")
        if _elapsed_s(start, now) >= MEASURE_INTERVALS * 20 + 40:
            break
        collect(svc, 1, pause_s=1.0)
    after = lab.truth(MEASURE_INTERVALS)
    assert after["avg_latency_ms"] < before["avg_latency_ms"] * 0.85, (
        before["avg_latency_ms"],
        after["avg_latency_ms"],
    )
    assert after["total_iops"] > before["total_iops"] * 1.1, (before["total_iops"], after["total_iops"])

    # The service's own view agrees: both new datastores now carry load.
    svc.run_job("model")
    loads = {d["name"]: d for d in svc.pod("basil-pod")["datastores"]}
    assert loads["3diskLUN"]["iops"] > 0
    assert loads["9diskLUN"]["iops"] > 0


def _elapsed_s(a: dict[str, object], b: dict[str, object]) -> float:
    """Simulated seconds between two readings of the lab's clock."""

    def t(x: dict[str, object]) -> datetime:
        return datetime.fromisoformat(str(x["now"]).replace("Z", "+00:00"))

    return (t(b) - t(a)).total_seconds()
