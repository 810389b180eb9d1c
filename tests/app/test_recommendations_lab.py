"""Recommendations that stay true, against the lab (BASIL §6.3 pod, simulated time paused and stepped):

- a recommendation computed while a plan runs is stale once the plan has moved a disk, and planning
  it answers 409 with the reason, through the service and through the API;
- a recommended move that no longer lowers the live imbalance is skipped at apply time with its
  reason (skipped, not failed);
- the pod view, the metrics and a round computed now show the same imbalance.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from basil.api import create_app
from basil.app import Actor, Service
from basil.config import BalanceConfig
from basil.errors import ConflictError
from basil.store.tokens import create_token
from tests.app.conftest import SCENARIOS, ServiceFactory
from tests.vcenter.labproc import LabProcess

pytestmark = pytest.mark.lab

OPERATOR = Actor("tester", "operator", "127.0.0.1")
POD = "basil-pod"
ENDED = ("succeeded", "failed", "cancelled")


@pytest.fixture(scope="module")
def lab() -> Iterator[LabProcess]:
    with LabProcess.start(SCENARIOS / "basil-6.3.yaml", speed=0) as lab:
        yield lab


@pytest.fixture
def modelled(lab: LabProcess, make_service: ServiceFactory) -> Service:
    """A service that has collected and modelled 15 minutes of the §6.3 pod (every workload on 6diskLUN).

    Ten minutes are not enough: the pod's outstanding IOs range about 62-72 (10th-90th percentile) in
    them, under the device model's 15 % spread, and 6diskLUN gets no model (``narrow_oio``)."""
    lab.reset()
    lab.set_speed(0)
    lab.step(2)
    svc = make_service(lab)
    assert svc.run_job("collect")["outcome"] == "succeeded"  # a first collection takes the newest sample
    lab.step(45)
    assert svc.run_job("collect")["outcome"] == "succeeded"
    assert svc.run_job("model")["outcome"] == "succeeded"
    assert svc.pod(POD)["datastores"][1]["model_status"] == "ok"  # 6diskLUN has its device model
    return svc


def disk_of(svc: Service, vm_name: str) -> str:
    vm = next(v for v in svc.inventory("lab").vms.values() if v.name == vm_name)
    return f"{vm.moid}:scsi0:1"


def run_stepping(svc: Service, lab: LabProcess, plan_id: int, max_steps: int = 200) -> dict[str, Any]:
    """Apply a plan while stepping simulated time one interval at a time until it has ended."""
    svc.apply_plan(plan_id, OPERATOR)
    for _ in range(max_steps):
        plan = svc.plan(plan_id)
        if plan["state"] in ENDED:
            return svc.wait_for_plan(plan_id, timeout_s=60)
        lab.step(1)
        time.sleep(0.05)
    raise AssertionError(f"plan {plan_id} did not end within {max_steps} intervals: {svc.plan(plan_id)}")


def wait_running(svc: Service, plan_id: int) -> None:
    deadline = time.monotonic() + 60
    while svc.plan(plan_id)["moves"][0]["state"] != "running":
        assert time.monotonic() < deadline, svc.plan(plan_id)
        time.sleep(0.05)


def test_a_recommendation_computed_during_a_plan_is_stale_after_it(
    modelled: Service, lab: LabProcess
) -> None:
    svc = modelled
    manual = svc.create_plan(
        OPERATOR, pod=POD, moves=[{"disk": disk_of(svc, "webserver-1"), "to": "9diskLUN"}]
    )
    svc.apply_plan(manual["id"], OPERATOR)
    wait_running(svc, manual["id"])  # vCenter copies; simulated time stands still until stepped

    during = svc.recommend_now(POD, OPERATOR)
    assert during["moves"], during
    assert during["valid"] is False
    assert during["state"] == "stale"
    assert f"plan {manual['id']} is moving disks of pod {POD}" in during["stale_reason"]

    for _ in range(100):
        if svc.plan(manual["id"])["state"] in ENDED:
            break
        lab.step(1)
        time.sleep(0.05)
    assert svc.wait_for_plan(manual["id"], timeout_s=60)["state"] == "succeeded"

    # The plan finished: the recommendation is offered as stale, with the move that changed the placement.
    after = svc.latest_recommendation(POD)
    assert after is not None
    assert after["id"] == during["id"]
    assert after["valid"] is False
    assert (
        f"plan {manual['id']} moved disk scsi0:1 of webserver-1 from 6diskLUN to 9diskLUN"
        in after["stale_reason"]
    )
    assert 'basil_recommendation_stale{pod="basil-pod"} 1' in svc.metrics()

    with pytest.raises(ConflictError) as refused:
        svc.create_plan(OPERATOR, recommendation_id=during["id"])
    assert refused.value.http_status == 409
    assert "is stale" in refused.value.message
    assert "webserver-1" in refused.value.message

    # The same through the API: 409 with the reason, and nothing planned.
    with svc.store.session() as session:
        token, _ = create_token(session, "op", "operator", created_by="tests")
    client = create_app(svc).test_client()
    resp = client.post(
        "/api/v1/plans",
        json={"recommendation_id": during["id"]},
        headers={"Authorization": f"Bearer {token}"},
    )
    assert resp.status_code == 409, resp.get_data(as_text=True)
    assert "webserver-1" in resp.get_json()["message"]
    assert len(svc.plans(pod=POD)) == 1

    # Recomputed on the new placement, it is current and can be planned.
    fresh = svc.recommend_now(POD, OPERATOR)
    assert fresh["valid"] is True
    assert fresh["stale_reason"] is None
    assert fresh["moves"], fresh
    assert svc.create_plan(OPERATOR, recommendation_id=fresh["id"])["state"] == "proposed"
    planned = svc.latest_recommendation(POD)
    assert planned is not None
    assert (planned["valid"], planned["state"], planned["stale_reason"]) == (False, "planned", None)


def test_a_recommended_move_that_no_longer_helps_is_skipped(modelled: Service, lab: LabProcess) -> None:
    svc = modelled
    rec = svc.recommend_now(POD, OPERATOR)
    targets = {m["to_name"]: m for m in rec["moves"]}
    assert set(targets) == {"3diskLUN", "9diskLUN"}, rec  # each new datastore takes one workload first
    planned = svc.create_plan(OPERATOR, recommendation_id=rec["id"])

    # Before the plan runs, someone moves every other workload to 3diskLUN: moving one more there only
    # makes the pod worse; moving one to the empty 9diskLUN still helps.
    recommended = {m["vm"] for m in rec["moves"]}
    others = [v.name for v in svc.inventory("lab").vms.values() if v.name not in recommended]
    manual = svc.create_plan(
        OPERATOR, pod=POD, moves=[{"disk": disk_of(svc, name), "to": "3diskLUN"} for name in sorted(others)]
    )
    assert run_stepping(svc, lab, manual["id"])["state"] == "succeeded"

    done = run_stepping(svc, lab, planned["id"])
    by_target = {m["to_name"]: m for m in done["moves"]}
    skipped = by_target["3diskLUN"]
    assert skipped["state"] == "skipped", done
    assert skipped["message"].startswith("no longer helps: the pod's imbalance is"), skipped
    assert "to 3diskLUN (live placement and models)" in skipped["message"]
    assert by_target["9diskLUN"]["state"] == "succeeded", done
    assert done["state"] == "succeeded"  # a skipped move is not a failure
    placed = {
        vm["name"]: d["datastore"]
        for vm in lab.control("GET", "/lab/placement")["vms"]
        for d in vm["disks"]
        if d["unit"] == "scsi0:1"
    }
    assert placed[skipped["vm"]] == "6diskLUN"  # never moved


def test_one_imbalance_now_in_the_pod_view_the_metrics_and_a_round(modelled: Service) -> None:
    svc = modelled
    pod = svc.pod(POD)
    rec = svc.recommend_now(POD, OPERATOR)
    assert pod["imbalance"] == pytest.approx(rec["before"]["imbalance"], rel=1e-9)
    line = next(x for x in svc.metrics().splitlines() if x.startswith('basil_pod_imbalance{pod="basil-pod"}'))
    assert float(line.split()[-1]) == pytest.approx(pod["imbalance"], rel=1e-9)


def test_a_pod_whose_disks_all_moved_lately_names_its_pinned_disks(
    lab: LabProcess, make_service: ServiceFactory
) -> None:
    # Every workload moved to 9diskLUN by hand: the pod is far over its threshold, and each disk is in
    # the ping-pong window, so no move is eligible. The round must say that is why.
    lab.reset()
    lab.set_speed(0)
    lab.step(2)
    svc = make_service(lab, pod={"balance": BalanceConfig(latency_threshold_ms=1)})
    assert svc.run_job("collect")["outcome"] == "succeeded"
    vms = sorted(v.name for v in svc.inventory("lab").vms.values())
    manual = svc.create_plan(
        OPERATOR, pod=POD, moves=[{"disk": disk_of(svc, n), "to": "9diskLUN"} for n in vms]
    )
    assert run_stepping(svc, lab, manual["id"])["state"] == "succeeded"
    lab.step(30)
    assert svc.run_job("collect")["outcome"] == "succeeded"
    assert svc.run_job("model")["outcome"] == "succeeded"

    rec = svc.recommend_now(POD, OPERATOR)
    assert rec["moves"] == []
    assert rec["after"]["imbalance"] > rec["threshold"]
    assert rec["stop"] == "no_improving_move"
    pinned = rec["pinned_blocking"]
    assert sorted(e["vm_name"] for e in pinned) == vms
    assert {e["code"] for e in pinned} == {"ping_pong"}
    assert all(e["datastore_name"] == "9diskLUN" and "ping-pong window" in e["reason"] for e in pinned)
    assert (
        f"{len(vms)} disk(s) that would lower it cannot move: {len(vms)} moved within the ping-pong window"
        in (rec["stop_reason"])
    )
