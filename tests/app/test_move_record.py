"""The record of what a plan did: one audit entry per Storage vMotion (with vCenter's task id) and the
plan's outcome, and honest move outcomes (a disk found on its target is "already there", not moved)."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest

from basil.app import Actor, Service
from basil.store.audit import query
from basil.vcenter.tasks import RELOCATE, recent_tasks
from tests.app.conftest import SCENARIOS, ServiceFactory
from tests.vcenter.labproc import LabProcess

pytestmark = pytest.mark.lab

OPERATOR = Actor("tester", "operator", "127.0.0.1")


@pytest.fixture(scope="module")
def lab() -> Iterator[LabProcess]:
    with LabProcess.start(SCENARIOS / "basil-6.3.yaml", speed=120) as lab:
        yield lab


def _disk(svc: Service, vm: str) -> str:
    by_name = {v.name: v for v in svc.inventory("lab").vms.values()}
    return f"{by_name[vm].moid}:scsi0:1"


def _apply(svc: Service, plan_id: int) -> dict[str, object]:
    svc.apply_plan(plan_id, OPERATOR)
    return svc.wait_for_plan(plan_id, timeout_s=120)


def test_each_move_and_the_plans_outcome_are_audited_by_name(
    lab: LabProcess, make_service: ServiceFactory
) -> None:
    lab.reset()
    svc = make_service(lab)
    disk = _disk(svc, "oltp-1")
    first = svc.create_plan(OPERATOR, pod="basil-pod", moves=[{"disk": disk, "to": "9diskLUN"}])
    second = svc.create_plan(OPERATOR, pod="basil-pod", moves=[{"disk": disk, "to": "9diskLUN"}])
    elsewhere = svc.create_plan(OPERATOR, pod="basil-pod", moves=[{"disk": disk, "to": "3diskLUN"}])
    for plan in (first, second, elsewhere):
        svc.approve_plan(plan["id"], OPERATOR)

    moved = _apply(svc, first["id"])
    (move,) = moved["moves"]  # type: ignore[misc]
    assert move["state"] == "succeeded"
    assert move["outcome"] == "moved"
    assert move["finished_at"] is not None
    task = move["task"]
    vm_moid = disk.split(":")[0]
    relocations = [
        t.moid
        for t in svc.link("lab").call(lambda c: recent_tasks(c, vm_moid))
        if t.description_id == RELOCATE
    ]
    assert task in relocations

    # The same disk again: it is on the target already, recorded as such and not as a move.
    again = _apply(svc, second["id"])
    (move2,) = again["moves"]  # type: ignore[misc]
    assert move2["outcome"] == "already_there"
    assert move2["task"] is None
    assert again["outcomes"]["already_there"] == 1  # type: ignore[index]
    assert again["outcomes"]["moved"] == 0  # type: ignore[index]

    with svc.store.read_session() as session:
        relocate = query(session, action="move.relocate")
        outcomes = query(session, action="plan.outcome")
    by_plan = {e.details["plan"]: e for e in relocate}
    assert set(by_plan) == {first["id"], second["id"]}  # the third ran after this read
    done = by_plan[first["id"]]
    assert done.actor_kind == "system"
    assert done.details["result"] == "moved"
    assert done.details["task"] == task
    assert task in done.message
    assert "oltp-1" in done.message
    assert "from 6diskLUN to 9diskLUN" in done.message
    skipped = by_plan[second["id"]]
    assert skipped.details["result"] == "already_there"
    assert skipped.details["task"] is None
    assert "already on the target" in skipped.message
    ends = {e.details["plan"]: e for e in outcomes}
    assert ends[first["id"]].message.endswith("succeeded: 1 moved")
    assert ends[second["id"]].message.endswith("succeeded: 1 already there")
    assert ends[second["id"]].details["moves"]["already_there"] == 1

    # Planned from 6diskLUN, the disk is on 9diskLUN now: skipped, and the reason names both.
    (move3,) = _apply(svc, elsewhere["id"])["moves"]  # type: ignore[misc]
    assert move3["outcome"] == "skipped"
    assert move3["message"] == "the disk is on 9diskLUN, not on 6diskLUN as planned"

    # The pod's recent moves list both, newest first, with their times and outcomes.
    recent = svc.pod("basil-pod")["recent_moves"]
    assert [(m["outcome"], m["to_name"]) for m in recent[:3]] == [
        ("skipped", "3diskLUN"),
        ("already_there", "9diskLUN"),
        ("moved", "9diskLUN"),
    ]
    assert all(m["finished_at"] for m in recent[:3])


def test_a_failed_move_is_audited_as_failed_with_vcenters_message(
    lab: LabProcess, make_service: ServiceFactory
) -> None:
    lab.reset()
    svc = make_service(lab)
    plan = svc.create_plan(
        OPERATOR, pod="basil-pod", moves=[{"disk": _disk(svc, "webserver-1"), "to": "3diskLUN"}]
    )
    svc.approve_plan(plan["id"], OPERATOR)
    lab.add_fault(
        method="RelocateVM_Task", fault="NoDiskSpace", message="No space (lab)", count=1, delivery="task"
    )
    ended = _apply(svc, plan["id"])
    assert ended["moves"][0]["outcome"] == "failed"  # type: ignore[index]
    with svc.store.read_session() as session:
        (entry,) = query(session, action="move.relocate")
        (outcome,) = query(session, action="plan.outcome")
    assert entry.outcome == "failed"
    assert entry.details["result"] == "failed"
    assert entry.message.startswith("failed to move disk scsi0:1 of webserver-1")
    assert "No space (lab)" in entry.message
    assert outcome.outcome == "failed"
    assert outcome.message.endswith("failed: 1 failed")


def test_a_rounds_loads_and_reasons_name_the_datastores(
    lab: LabProcess, make_service: ServiceFactory
) -> None:
    lab.reset()
    lab.set_speed(0)
    try:
        lab.step(2)
        svc = make_service(lab)
        assert svc.run_job("collect")["outcome"] == "succeeded"
        lab.step(30)
        assert svc.run_job("collect")["outcome"] == "succeeded"
        assert svc.run_job("model")["outcome"] == "succeeded"
        rec = svc.recommend_now("basil-pod", OPERATOR)
    finally:
        lab.set_speed(120)
    inventory = svc.inventory("lab")
    by_moid = {ds.moid: ds.name for ds in inventory.datastores.values()}
    for state in (rec["before"], rec["after"]):
        assert state["names"] == {k: by_moid[k] for k in state["normalized_load"]}
        assert sorted(d["name"] for d in state["datastores"]) == ["3diskLUN", "6diskLUN", "9diskLUN"]
        assert {d["id"]: d["normalized_load"] for d in state["datastores"]} == state["normalized_load"]
    assert rec["moves"], rec["stop_reason"]
    texts = [rec["stop_reason"], *rec["notes"], *(m["reason"] for m in rec["moves"])]
    assert not [t for t in texts if re.search(r"\b(datastore|vm)-\d+\b", t)], texts
