"""Plans survive faults: a run killed mid-way resumes without moving a disk twice, a failed move keeps
vCenter's message, and no move starts once the rebalance window has closed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from basil.app import Actor, Service
from basil.config import BalanceConfig
from basil.store import Store
from basil.store.plans import get_plan
from basil.vcenter.tasks import RELOCATE, recent_tasks
from tests.app.conftest import ROOT, SCENARIOS, ServiceFactory, collect, wait_until
from tests.vcenter.labproc import LabProcess

pytestmark = pytest.mark.lab

OPERATOR = Actor("tester", "operator", "127.0.0.1")


@pytest.fixture(scope="module")
def lab() -> Iterator[LabProcess]:
    with LabProcess.start(SCENARIOS / "basil-6.3.yaml", speed=120) as lab:
        yield lab


@pytest.fixture(scope="module")
def slow_lab() -> Iterator[LabProcess]:
    """Storage vMotion at 20 MB/s: a 10 GB disk takes ~8 s of wall time at speed 60, time to kill a run."""
    with LabProcess.start(SCENARIOS / "basil-6.3.yaml", speed=60, extra=("--svmotion-mbps", "20")) as lab:
        yield lab


def _disk_ids(svc: Service, *vms: str) -> list[str]:
    inv = svc.inventory("lab")
    by_name = {v.name: v for v in inv.vms.values()}
    return [f"{by_name[n].moid}:scsi0:1" for n in vms]


def _relocations(svc: Service, vm_id: str) -> int:
    return sum(
        1 for t in svc.link("lab").call(lambda c: recent_tasks(c, vm_id)) if t.description_id == RELOCATE
    )


def _placement(lab: LabProcess) -> dict[str, str]:
    return {
        vm["name"]: d["datastore"]
        for vm in lab.control("GET", "/lab/placement")["vms"]
        for d in vm["disks"]
        if d["unit"] == "scsi0:1"
    }


def test_killed_run_resumes_without_moving_a_disk_twice(
    slow_lab: LabProcess, make_service: ServiceFactory, tmp_path: Path
) -> None:
    slow_lab.reset()
    svc = make_service(slow_lab)
    disks = _disk_ids(svc, "oltp-1", "oltp-2", "exchange-1")
    moves = [
        {"disk": disks[0], "to": "3diskLUN"},
        {"disk": disks[1], "to": "9diskLUN"},
        {"disk": disks[2], "to": "9diskLUN"},
    ]
    plan = svc.create_plan(OPERATOR, pod="basil-pod", moves=moves)
    svc.approve_plan(plan["id"], OPERATOR)
    svc.shutdown()

    url = f"sqlite:///{tmp_path / 'basil.db'}"
    args = {
        "server": slow_lab.server,
        "pem": slow_lab.pem,
        "user": slow_lab.user,
        "password": slow_lab.password,
        "url": url,
        "plan": plan["id"],
    }
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.app.plan_runner", json.dumps(args)], cwd=ROOT, env=env
    )
    watcher = Store(url)
    try:

        def midway() -> bool:
            with watcher.read_session() as session:
                states = [m.state for m in get_plan(session, plan["id"]).moves]
            assert proc.poll() is None, f"the runner ended early ({proc.returncode}): {states}"
            if states[:2] != ["succeeded", "running"]:
                return False
            # ... and vCenter copying the second disk: the kill lands between the task and its record.
            relocating = slow_lab.control("GET", "/lab/placement")["relocations"] or []
            return any(r["vm"] == "oltp-2" and r["running"] for r in relocating)

        wait_until(midway, 240, "the first move done and the second one's relocation running in vCenter")
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        watcher.dispose()
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)

    # A new service on the same store: start() resumes the plan the killed one left running.
    again = make_service(slow_lab)
    done = again.wait_for_plan(plan["id"], timeout_s=300)
    assert done["state"] == "succeeded", done
    assert [m["state"] for m in done["moves"]] == ["succeeded"] * 3
    assert "completed while the service was stopped" in done["moves"][1]["message"]
    # The killed run recorded the task as soon as vCenter took it; the resumed move keeps it.
    assert all(m["task"] for m in done["moves"]), done["moves"]
    placed = _placement(slow_lab)
    assert (placed["oltp-1"], placed["oltp-2"], placed["exchange-1"]) == ("3diskLUN", "9diskLUN", "9diskLUN")
    for disk in disks:
        assert _relocations(again, disk.split(":")[0]) == 1, disk  # vCenter moved each disk exactly once


def test_failed_move_keeps_vcenters_message_and_the_plan_goes_on(
    lab: LabProcess, make_service: ServiceFactory
) -> None:
    lab.reset()
    svc = make_service(lab)
    disks = _disk_ids(svc, "webserver-1", "webserver-2")
    plan = svc.create_plan(
        OPERATOR,
        pod="basil-pod",
        moves=[{"disk": disks[0], "to": "3diskLUN"}, {"disk": disks[1], "to": "9diskLUN"}],
    )
    lab.add_fault(
        method="RelocateVM_Task",
        fault="NoDiskSpace",
        message="No space left on 3diskLUN (lab)",
        count=1,
        delivery="task",
    )
    svc.apply_plan(plan["id"], OPERATOR)
    done = svc.wait_for_plan(plan["id"], timeout_s=120)
    first, second = done["moves"]
    assert first["state"] == "failed"
    assert "No space left on 3diskLUN (lab)" in first["message"]
    assert "NoDiskSpace" in first["message"]
    assert second["state"] == "succeeded"
    assert done["state"] == "failed"  # a plan with a failed move does not report success
    placed = _placement(lab)
    assert placed["webserver-1"] == "6diskLUN"
    assert placed["webserver-2"] == "9diskLUN"


def test_failed_move_stops_the_plan_when_configured(lab: LabProcess, make_service: ServiceFactory) -> None:
    lab.reset()
    svc = make_service(lab, pod={"balance": _balance(on_move_failure="stop")})
    disks = _disk_ids(svc, "webserver-1", "webserver-2")
    plan = svc.create_plan(
        OPERATOR,
        pod="basil-pod",
        moves=[{"disk": disks[0], "to": "3diskLUN"}, {"disk": disks[1], "to": "9diskLUN"}],
    )
    lab.add_fault(
        method="RelocateVM_Task", fault="FileLocked", message="locked by the lab", count=1, delivery="task"
    )
    svc.apply_plan(plan["id"], OPERATOR)
    done = svc.wait_for_plan(plan["id"], timeout_s=120)
    assert [m["state"] for m in done["moves"]] == ["failed", "skipped"]
    assert "locked by the lab" in done["moves"][0]["message"]
    assert _placement(lab)["webserver-2"] == "6diskLUN"


def _balance(**kw: Any) -> BalanceConfig:
    return BalanceConfig(**kw)


class SteppedClock:
    """A clock that stands still until told to jump (the window's end is passed between two moves)."""

    def __init__(self, start: datetime) -> None:
        self.now = start

    def __call__(self) -> datetime:
        return self.now


@pytest.mark.parametrize("backend", ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def test_window_closing_stops_new_moves(lab: LabProcess, make_service: ServiceFactory, store: Store) -> None:
    lab.reset()
    clock = SteppedClock(datetime.now(UTC))
    svc = make_service(lab, store=store, clock=clock)
    disks = _disk_ids(svc, "workstation-1", "workstation-2", "exchange-2")
    plan = svc.create_plan(
        OPERATOR,
        pod="basil-pod",
        moves=[
            {"disk": disks[0], "to": "3diskLUN"},
            {"disk": disks[1], "to": "9diskLUN"},
            {"disk": disks[2], "to": "9diskLUN"},
        ],
    )
    svc.approve_plan(plan["id"], OPERATOR)
    deadline = clock.now + timedelta(hours=1)

    def window_passes(_move: object) -> None:  # the first move takes us past the window's end
        clock.now = deadline + timedelta(minutes=1)

    svc.executor.after_task = window_passes
    out = svc.rebalance_window(deadline)
    assert out["pods"]["basil-pod"]["plan"] == plan["id"]
    done = svc.plan(plan["id"])
    assert [m["state"] for m in done["moves"]] == ["succeeded", "skipped", "skipped"]
    assert all("window closed" in m["message"] for m in done["moves"][1:])
    assert done["deadline"] == deadline.isoformat()
    placed = _placement(lab)
    assert (placed["workstation-1"], placed["workstation-2"], placed["exchange-2"]) == (
        "3diskLUN",
        "6diskLUN",
        "6diskLUN",
    )
    collect(svc, 1, pause_s=0)


ADMIN = Actor("window-admin", "admin", "127.0.0.1")


def test_window_applies_a_fresh_plan_of_an_automatic_pod_within_its_budget(
    lab: LabProcess, make_service: ServiceFactory
) -> None:
    lab.reset()
    svc = make_service(lab, pod={"mode": "automatic"})
    collect(svc, 6)
    assert svc.run_job("model")["outcome"] == "succeeded"
    svc.set_rebalance_window({"max_moves": 1}, ADMIN)  # the window's budget: one move
    before = _placement(lab)
    assert svc.plans() == []  # no approved plan waits: the window must make one

    out = svc.rebalance_window(datetime.now(UTC) + timedelta(hours=1))
    plan_id = out["pods"]["basil-pod"]["plan"]
    plan = svc.plan(plan_id)
    assert plan["source"] == "window"
    assert (plan["created_by"], plan["approved_by"]) == ("basil", "basil")  # approved by the system itself
    states = [m["state"] for m in plan["moves"]]
    assert len(states) >= 2, plan  # the §6.3 pod needs more than the budget allows
    assert states == ["succeeded"] + ["skipped"] * (len(states) - 1), plan["moves"]
    assert all("budget of moves spent" in m["message"] for m in plan["moves"][1:])
    assert out["budget_left"]["moves"] == 0
    assert out["pods"]["basil-pod"]["state"] == "succeeded"

    after = _placement(lab)
    moved = {vm for vm in before if before[vm] != after[vm]}
    first = plan["moves"][0]
    assert moved == {first["vm"]}, (before, after)
    assert after[first["vm"]] == first["to_name"]


def test_window_leaves_a_manual_pod_without_an_approved_plan_alone(
    lab: LabProcess, make_service: ServiceFactory
) -> None:
    lab.reset()
    svc = make_service(lab)  # mode: manual, the default
    collect(svc, 6)
    assert svc.run_job("model")["outcome"] == "succeeded"
    before = _placement(lab)
    out = svc.rebalance_window(datetime.now(UTC) + timedelta(hours=1))
    assert out["pods"]["basil-pod"] == "nothing to apply"
    assert svc.plans() == []
    assert _placement(lab) == before


def test_move_progress_is_recorded_from_the_vcenter_task_while_it_copies(
    slow_lab: LabProcess, make_service: ServiceFactory
) -> None:
    slow_lab.reset()
    svc = make_service(slow_lab)
    (disk,) = _disk_ids(svc, "webserver-1")
    plan = svc.create_plan(OPERATOR, pod="basil-pod", moves=[{"disk": disk, "to": "9diskLUN"}])
    svc.apply_plan(plan["id"], OPERATOR)
    seen: list[tuple[int, int, int]] = []  # (move progress in the store, plan progress, vCenter's task)

    def sample() -> bool:
        current = svc.plan(plan["id"])
        move = current["moves"][0]
        if move["state"] == "running":
            relocations = slow_lab.control("GET", "/lab/placement")["relocations"] or []
            task = next((r for r in relocations if r["vm"] == "webserver-1" and r["running"]), None)
            if task is not None:
                seen.append((move["progress"], current["progress"], task["progress"]))
        return bool(current["state"] in ("succeeded", "failed"))

    wait_until(sample, 240, "the move to finish")
    done = svc.plan(plan["id"])
    assert done["state"] == "succeeded", done
    assert (done["moves"][0]["progress"], done["progress"]) == (100, 100)
    midway = [s for s in seen if 0 < s[0] < 100]
    assert midway, f"no progress between 0 and 100 was recorded while vCenter copied: {seen}"
    recorded = [s[0] for s in seen]
    assert recorded == sorted(recorded), "progress never goes back"
    # What the store says was read from vCenter's task, read here just after: never ahead of it.
    assert all(store <= vcenter for store, _plan, vcenter in seen), seen
    assert all(plan_pct == store for store, plan_pct, _ in seen)  # one move: the plan's progress is its
