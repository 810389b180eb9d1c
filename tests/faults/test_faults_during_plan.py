"""Faults while a plan applies: every lab fault lands in the middle of a Storage vMotion (the lab paused,
so the copy waits for ``step``), and the plan must end in the state vCenter's tasks say, move no disk
twice, and leave collection going on with no gap beyond the fault. Also the races the executor meets:
a cancel landing while it works, and two plans moving the same disk."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from basil.app import Actor, Service
from basil.app.vcenters import Backoff
from basil.errors import VCenterError
from basil.store import Store
from basil.store.models import Disk, DiskSample
from basil.store.plans import get_plan, start_move, start_plan
from basil.vcenter import perf
from basil.vcenter._vmomi import vim
from basil.vcenter.connection import VCenterConnection
from basil.vcenter.tasks import RELOCATE, recent_tasks, task_summary
from tests.app.conftest import SCENARIOS, lab_config, wait_until
from tests.faults.conftest import assert_degraded, assert_healthy
from tests.vcenter.labproc import LabProcess

pytestmark = pytest.mark.lab

OPERATOR = Actor("fault-tester", "operator", "127.0.0.1")
COPY_STEPS = 4  # intervals of 20 s: a 10 GB disk copies in 50 s at the lab's 200 MB/s


@pytest.fixture(scope="module")
def lab() -> Iterator[LabProcess]:
    with LabProcess.start(SCENARIOS / "basil-6.3.yaml", speed=0) as lab:
        yield lab


@pytest.fixture
def paused(lab: LabProcess) -> Iterator[LabProcess]:
    lab.clear_faults()
    lab.reset()
    lab.set_speed(0)
    lab.step(1)
    yield lab
    lab.clear_faults()


ServiceMaker = Callable[..., Service]


@pytest.fixture
def make_service(tmp_path: Path) -> Iterator[ServiceMaker]:
    """Services on one SQLite store; ``conn`` changes the connection parameters (short timeouts)."""
    made: list[Service] = []

    def make(lab: LabProcess, *, start: bool = True, **conn: Any) -> Service:
        url = f"sqlite:///{tmp_path / 'basil.db'}"
        svc = Service(
            lab_config(lab, url), Store(url), params_factory=lambda _vc: lab.connection_params(**conn)
        )
        if start:
            svc.start(scheduler=False)
        made.append(svc)
        return svc

    yield make
    for svc in made:
        if not svc.stopping.is_set():
            svc.shutdown()


# --- helpers ----------------------------------------------------------------------------------


def _disk(svc: Service, vm: str, unit: str = "scsi0:1") -> str:
    inv = svc.inventory("lab")
    return next(f"{v.moid}:{unit}" for v in inv.vms.values() if v.name == vm)


def _vm_moid(svc: Service, vm: str) -> str:
    return _disk(svc, vm).split(":")[0]


def _ds_moid(svc: Service, name: str) -> str:
    return next(d.moid for d in svc.inventory("lab").datastores.values() if d.name == name)


def _placement(lab: LabProcess, vm: str, unit: str = "scsi0:1") -> str:
    for v in lab.control("GET", "/lab/placement")["vms"]:
        if v["name"] == vm:
            return str(next(d["datastore"] for d in v["disks"] if d["unit"] == unit))
    raise AssertionError(f"no VM {vm}")


def _relocating(lab: LabProcess, vm: str) -> bool:
    return any(
        r["vm"] == vm and r["running"] for r in lab.control("GET", "/lab/placement")["relocations"] or []
    )


def _relocations(lab: LabProcess, vm_moid: str) -> list[str]:
    """The VM's relocation tasks and how each ended, as vCenter tells them."""
    conn = VCenterConnection(lab.connection_params())
    with conn:
        return [t.state for t in recent_tasks(conn, vm_moid) if t.description_id == RELOCATE]


def _task_state(lab: LabProcess, task: str) -> str:
    """How vCenter says a task ended (or that it runs)."""
    conn = VCenterConnection(lab.connection_params())
    with conn:
        summary = task_summary(conn, task)
    assert summary is not None, f"vCenter does not know {task}"
    return summary.state


def _plan(svc: Service, vm: str, to: str) -> int:
    plan = svc.create_plan(OPERATOR, pod="basil-pod", moves=[{"disk": _disk(svc, vm), "to": to}])
    return int(plan["id"])


def _apply_and_catch_the_copy(svc: Service, lab: LabProcess, vm: str, to: str) -> int:
    """Apply a one-move plan and return once vCenter is copying the disk (the lab paused mid-copy)."""
    plan_id = _plan(svc, vm, to)
    svc.apply_plan(plan_id, OPERATOR)
    wait_until(lambda: _relocating(lab, vm), 60, f"the relocation of {vm} running in vCenter")
    return plan_id


def _finish_copies(lab: LabProcess) -> None:
    lab.step(COPY_STEPS)


def _disk_series(svc: Service) -> dict[tuple[str, str], list[int]]:
    with svc.store.read_session() as session:
        rows = session.execute(
            select(Disk.vm, Disk.instance, DiskSample.ts).join(Disk, Disk.id == DiskSample.disk_id)
        ).all()
    out: dict[tuple[str, str], list[int]] = {}
    for vm, instance, ts in rows:
        out.setdefault((vm, instance), []).append(int(ts))
    return {k: sorted(v) for k, v in out.items()}


def _assert_no_gap(svc: Service) -> None:
    """Every disk's samples are 20 s apart from its first to the newest sample collected."""
    series = _disk_series(svc)
    assert series
    newest = max(t for times in series.values() for t in times)
    for key, times in series.items():
        assert times == list(range(times[0], newest + 1, 20)), (key, times)


def _newest_sample(svc: Service) -> int:
    return max(t for times in _disk_series(svc).values() for t in times)


def _collect(svc: Service) -> dict[str, Any]:
    run = svc.run_job("collect")
    assert run["outcome"] == "succeeded", run
    return run


# --- races of the executor ------------------------------------------------------------------------


def test_a_cancel_landing_while_the_executor_works_ends_the_plan_cancelled(
    paused: LabProcess, make_service: ServiceMaker
) -> None:
    """The executor has read the plan (not cancelled) and waits for a relocation another client started
    on the VM; the cancel lands then. No move starts and the plan ends cancelled, not running."""
    svc = make_service(paused)
    vm = _vm_moid(svc, "oltp-2")
    os_lun = _ds_moid(svc, "os-lun")
    target = _ds_moid(svc, "9diskLUN")
    # Another client moves the VM's OS disk (not in the plan): vCenter runs one task per VM at a time.
    conn = svc.links["lab"].conn
    assert conn is not None
    devices = [
        d
        for d in conn.ref(vim.VirtualMachine, vm).config.hardware.device
        if isinstance(d, vim.vm.device.VirtualDisk)
    ]
    os_disk = next(d for d in devices if d.backing.datastore._moId == os_lun)
    conn.ref(vim.VirtualMachine, vm).RelocateVM_Task(
        spec=vim.vm.RelocateSpec(
            disk=[
                vim.vm.RelocateSpec.DiskLocator(diskId=os_disk.key, datastore=conn.ref(vim.Datastore, target))
            ]
        )
    )
    wait_until(lambda: _relocating(paused, "oltp-2"), 30, "the other client's relocation running")
    plan_id = _plan(svc, "oltp-2", "3diskLUN")
    svc.apply_plan(plan_id, OPERATOR)
    time.sleep(1.0)  # the executor reads the plan, then waits for the other client's task
    svc.cancel_plan(plan_id, OPERATOR)
    paused.step(COPY_STEPS + 1)  # the other client's copy (15 GB) ends
    done = svc.wait_for_plan(plan_id, timeout_s=60)
    assert done["state"] == "cancelled", done
    assert [m["state"] for m in done["moves"]] == ["skipped"], done["moves"]
    assert _placement(paused, "oltp-2") == "6diskLUN"  # the plan's disk did not move
    assert _relocations(paused, vm) == ["success"]  # only the other client's relocation ran


def test_two_plans_moving_the_same_disk_both_end_and_the_disk_moves_once(
    paused: LabProcess, make_service: ServiceMaker
) -> None:
    svc = make_service(paused)
    first = _plan(svc, "exchange-1", "9diskLUN")
    second = _plan(svc, "exchange-1", "9diskLUN")  # made while the disk is still on its source
    recorded = threading.Event()
    second_done = threading.Event()

    def hold_first(move: Any) -> None:  # the first plan records its move only after the second ended
        if move.plan_id == first:
            second_done.wait(60)
            recorded.set()

    svc.executor.after_task = hold_first
    svc.apply_plan(first, OPERATOR)
    wait_until(lambda: _relocating(paused, "exchange-1"), 60, "the first plan's relocation running")
    svc.apply_plan(second, OPERATOR)
    _finish_copies(paused)
    try:
        ended = svc.wait_for_plan(second, timeout_s=60)
    finally:
        second_done.set()
    assert ended["state"] != "running", ended
    assert ended["moves"][0]["state"] in ("skipped", "succeeded"), ended["moves"]
    assert f"plan {first}" in ended["moves"][0]["message"], ended["moves"]
    done = svc.wait_for_plan(first, timeout_s=60)
    assert recorded.is_set()
    assert done["state"] == "succeeded", done
    assert _placement(paused, "exchange-1") == "9diskLUN"
    assert _relocations(paused, _vm_moid(svc, "exchange-1")) == ["success"]  # moved once


# --- faults during a copy -----------------------------------------------------------------------


def test_session_loss_during_a_copy_records_the_move_vcenter_finished(
    paused: LabProcess, make_service: ServiceMaker
) -> None:
    svc = make_service(paused)
    vm = _vm_moid(svc, "webserver-1")
    _collect(svc)
    before = _newest_sample(svc)
    plan_id = _apply_and_catch_the_copy(svc, paused, "webserver-1", "3diskLUN")
    paused.session_loss()
    _finish_copies(paused)
    done = svc.wait_for_plan(plan_id, timeout_s=60)
    move = done["moves"][0]
    assert move["state"] == "succeeded", move
    assert move["task"], move  # the vCenter task that moved it
    assert _task_state(paused, move["task"]) == "success"
    assert done["state"] == "succeeded"
    assert _placement(paused, "webserver-1") == "3diskLUN"
    assert _relocations(paused, vm) == ["success"]
    # Collection goes on in the new session: the intervals of the copy are stored, none missing.
    paused.step(1)
    _collect(svc)
    assert _newest_sample(svc) >= before + 20 * (COPY_STEPS + 1), (before, _newest_sample(svc))
    _assert_no_gap(svc)
    assert_healthy(svc)


def test_a_hang_longer_than_the_call_timeout_ends_by_the_tasks_state(
    paused: LabProcess, make_service: ServiceMaker
) -> None:
    """vCenter answers nothing for longer than Basil's call timeout while it copies; the copy succeeds."""
    svc = make_service(paused, timeout_s=1.0, retries=1)
    _collect(svc)
    plan_id = _apply_and_catch_the_copy(svc, paused, "webserver-2", "9diskLUN")
    paused.set_latency_ms(2500)
    during = svc.run_job("collect")  # the task follower's calls time out meanwhile too
    assert during["outcome"] == "failed", during
    assert svc.vcenters()[0]["last_error"], svc.vcenters()  # the vCenter's failure is reported
    assert_degraded(svc, "collect", "timed out")  # /health names the vCenter, the job and the error
    _finish_copies(paused)
    time.sleep(1.0)
    paused.set_latency_ms(0)
    done = svc.wait_for_plan(plan_id, timeout_s=90)
    assert done["moves"][0]["state"] == "succeeded", done["moves"]
    assert done["state"] == "succeeded"
    assert _task_state(paused, done["moves"][0]["task"]) == "success"
    assert _placement(paused, "webserver-2") == "9diskLUN"
    assert _relocations(paused, _vm_moid(svc, "webserver-2")) == ["success"]
    paused.step(1)
    _collect(svc)  # collection goes on after the hang, and has every interval of it
    _assert_no_gap(svc)
    assert_healthy(svc)  # the collection's error clears once it succeeds again


def test_shutdown_during_a_hang_finishes_and_the_next_start_resumes_the_move_with_its_task(
    paused: LabProcess, make_service: ServiceMaker
) -> None:
    svc = make_service(paused, timeout_s=1.0, retries=1)
    plan_id = _apply_and_catch_the_copy(svc, paused, "workstation-1", "3diskLUN")
    paused.set_latency_ms(60_000)  # vCenter hangs for a minute per call
    stopper = threading.Thread(target=svc.shutdown)
    stopper.start()
    stopper.join(30)
    assert not stopper.is_alive(), "shutdown did not finish while vCenter hung"
    watcher = Store(svc.config.store.url)
    with watcher.read_session() as session:
        left = get_plan(session, plan_id)
    watcher.dispose()
    assert (left.state, left.moves[0].state) == ("running", "running")  # the next start finds out
    assert left.moves[0].task_id, left.moves[0]  # recorded as soon as vCenter took the task
    paused.set_latency_ms(0)
    _finish_copies(paused)
    again = make_service(paused)  # start() resumes the plan left running
    done = again.wait_for_plan(plan_id, timeout_s=60)
    move = done["moves"][0]
    assert move["state"] == "succeeded", move
    assert move["task"], move  # the task id recorded when the move started survives the restart
    assert _relocations(paused, _vm_moid(again, "workstation-1")) == ["success"]
    assert _placement(paused, "workstation-1") == "3diskLUN"


@pytest.mark.parametrize(
    ("fault", "delivery"),
    [("FileLocked", "task"), ("TaskInProgress", "task"), ("InvalidState", "call"), ("SystemError", "call")],
)
def test_a_relocation_fault_fails_the_move_as_vcenter_says_and_collection_goes_on(
    paused: LabProcess, make_service: ServiceMaker, fault: str, delivery: str
) -> None:
    svc = make_service(paused)
    vm = _vm_moid(svc, "oltp-1")
    _collect(svc)
    paused.add_fault(method="RelocateVM_Task", fault=fault, message="by the lab", count=1, delivery=delivery)
    plan_id = _plan(svc, "oltp-1", "3diskLUN")
    svc.apply_plan(plan_id, OPERATOR)
    done = svc.wait_for_plan(plan_id, timeout_s=60)
    move = done["moves"][0]
    assert done["state"] == "failed"
    assert fault in move["message"], move
    if delivery == "task":  # the task vCenter made, and how it ended, are on record
        assert move["task"], move
        assert _task_state(paused, move["task"]) == "error"
    else:  # vCenter refused the call: no task, nothing ran
        assert not move["task"], move
        assert _relocations(paused, vm) == []
    assert _placement(paused, "oltp-1") == "6diskLUN"
    paused.step(2)
    _collect(svc)
    _assert_no_gap(svc)


def test_the_target_turning_inaccessible_mid_copy_ends_the_move_as_its_task_says(
    paused: LabProcess, make_service: ServiceMaker
) -> None:
    svc = make_service(paused)
    _collect(svc)
    plan_id = _apply_and_catch_the_copy(svc, paused, "exchange-2", "9diskLUN")
    paused.set_accessible("9diskLUN", False)
    svc.run_job("inventory")
    assert_degraded(svc, "inventory", "datastore 9diskLUN of pod basil-pod is inaccessible")
    _finish_copies(paused)
    done = svc.wait_for_plan(plan_id, timeout_s=60)
    where = _placement(paused, "exchange-2")
    move = done["moves"][0]
    state = _task_state(paused, move["task"])
    # Whatever the lab did with the copy, the record says what vCenter says.
    assert move["state"] == ("succeeded" if state == "success" else "failed"), (move, state)
    assert (where == "9diskLUN") == (move["state"] == "succeeded"), (move, where)
    paused.set_accessible("9diskLUN", True)
    paused.step(1)
    _collect(svc)
    _assert_no_gap(svc)
    svc.run_job("inventory")
    assert_healthy(svc)  # the datastore is back: nothing degrades the service any more


def test_an_inaccessible_target_before_the_move_fails_it_and_moves_nothing(
    paused: LabProcess, make_service: ServiceMaker
) -> None:
    svc = make_service(paused)
    vm = _vm_moid(svc, "exchange-1")
    _collect(svc)
    plan_id = _plan(svc, "exchange-1", "9diskLUN")
    paused.set_accessible("9diskLUN", False)
    svc.apply_plan(plan_id, OPERATOR)
    done = svc.wait_for_plan(plan_id, timeout_s=60)
    move = done["moves"][0]
    assert (done["state"], move["state"]) == ("failed", "failed"), done
    assert "9diskLUN is not accessible" in move["message"] or "Inaccessible" in move["message"], move
    assert _placement(paused, "exchange-1") == "6diskLUN"
    assert "success" not in _relocations(paused, vm)
    paused.set_accessible("9diskLUN", True)
    paused.step(1)
    _collect(svc)
    _assert_no_gap(svc)


def test_vcenter_failing_every_read_while_a_plan_applies_fails_its_moves_and_moves_nothing(
    paused: LabProcess, make_service: ServiceMaker
) -> None:
    svc = make_service(paused)
    vms = {name: _vm_moid(svc, name) for name in ("oltp-1", "oltp-2")}
    plan = svc.create_plan(
        OPERATOR,
        pod="basil-pod",
        moves=[
            {"disk": _disk(svc, "oltp-1"), "to": "3diskLUN"},
            {"disk": _disk(svc, "oltp-2"), "to": "9diskLUN"},
        ],
    )
    paused.add_fault(method="RetrievePropertiesEx", fault="SystemError", message="lab outage", count=1000)
    svc.apply_plan(plan["id"], OPERATOR)
    done = svc.wait_for_plan(plan["id"], timeout_s=60)
    paused.clear_faults()
    assert done["state"] == "failed", done
    assert [m["state"] for m in done["moves"]] == ["failed", "failed"], done["moves"]
    assert all("lab outage" in m["message"] for m in done["moves"]), done["moves"]
    assert (_placement(paused, "oltp-1"), _placement(paused, "oltp-2")) == ("6diskLUN", "6diskLUN")
    assert all(_relocations(paused, vm) == [] for vm in vms.values())


def test_a_plan_whose_resumption_met_a_hung_vcenter_is_resumed_once_it_answers(
    paused: LabProcess, make_service: ServiceMaker
) -> None:
    first = make_service(paused)
    vm = _vm_moid(first, "webserver-1")
    plan_id = _plan(first, "webserver-1", "9diskLUN")
    first.approve_plan(plan_id, OPERATOR)
    with first.store.session() as session:  # a service that died between claiming the move and vCenter
        plan = start_plan(session, plan_id)
        start_move(session, plan.moves[0].id)
    first.shutdown()
    paused.set_latency_ms(2500)
    svc = make_service(paused, start=False, timeout_s=1.0, retries=0)
    svc.links["lab"].backoff = Backoff(first_s=0.5, cap_s=1.0)  # the failed connect is retried soon
    svc.start(scheduler=False)  # its start resumes the plan: vCenter hangs
    wait_until(lambda: svc.links["lab"].last_error != "", 60, "the resumption to meet the hang")
    svc.wait_for_plan(plan_id, timeout_s=60)
    assert svc.plan(plan_id)["state"] == "running"  # its move's outcome is unknown: not ended
    paused.set_latency_ms(0)
    time.sleep(1.0)  # the back-off after the failed connect (above) has passed
    run = svc.run_job("maintenance")
    assert run["details"]["resumed_plans"] == [plan_id], run
    wait_until(lambda: _relocating(paused, "webserver-1"), 60, "the resumed move's relocation")
    _finish_copies(paused)
    done = svc.wait_for_plan(plan_id, timeout_s=60)
    assert done["state"] == "succeeded", done
    assert _placement(paused, "webserver-1") == "9diskLUN"
    assert _relocations(paused, vm) == ["success"]


# --- vCenter faults seen through the API ----------------------------------------------------------


@pytest.mark.parametrize("request_kind", ["plan", "recommendation"])
def test_a_vcenter_fault_while_serving_a_request_is_a_vcenter_error_not_404(
    paused: LabProcess, make_service: ServiceMaker, request_kind: str
) -> None:
    """The inventory watcher's collector fails as after a session loss (ManagedObjectNotFound): that is
    vCenter failing (502/503), not the client's object missing (404)."""
    svc = make_service(paused)
    disk = _disk(svc, "oltp-1")
    paused.add_fault(method="WaitForUpdatesEx", fault="ManagedObjectNotFound", count=1, delivery="call")
    asks: dict[str, Callable[[], object]] = {
        "plan": lambda: svc.create_plan(OPERATOR, pod="basil-pod", moves=[{"disk": disk, "to": "3diskLUN"}]),
        "recommendation": lambda: svc.recommend_now("basil-pod", OPERATOR),
    }
    with pytest.raises(VCenterError) as caught:
        asks[request_kind]()
    assert caught.value.http_status in (502, 503), caught.value.to_dict()
    assert caught.value.code != "vcenter_not_found"
    assert "ManagedObjectNotFound" in caught.value.message


def test_start_does_not_wait_for_a_hanging_vcenter(paused: LabProcess, make_service: ServiceMaker) -> None:
    paused.set_latency_ms(1500)
    svc = make_service(paused, start=False, timeout_s=30.0)
    svc.start(scheduler=False)
    try:
        health = svc.health()
        assert health["status"] == "degraded", health
        assert [v["connected"] for v in health["vcenters"]] == [False]
    finally:
        paused.set_latency_ms(0)
    wait_until(lambda: svc.links["lab"].connected, 60, "the link connected once vCenter answers")
    assert svc.health()["vcenters"][0]["connected"] is True


def test_a_resumed_plan_does_not_wait_for_vcenters_clock_before_its_moves(
    paused: LabProcess, make_service: ServiceMaker, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Reading vCenter's clock hangs (in the plan's thread only); a plan resumed at start still applies
    its move: nothing on the way to the executor waits for that read."""
    first = make_service(paused)
    plan_id = _plan(first, "webserver-1", "9diskLUN")
    first.approve_plan(plan_id, OPERATOR)
    with first.store.session() as session:  # a service stopped after starting the plan, before its move
        start_plan(session, plan_id)
    first.shutdown()
    released = threading.Event()
    read_clock = perf.PerfCollector.vcenter_time

    def hung_clock(collector: perf.PerfCollector) -> Any:
        if threading.current_thread().name.startswith("basil-plan") and not released.is_set():
            released.wait(60)  # as a call to a hung vCenter, until the test lets it go
        return read_clock(collector)

    monkeypatch.setattr(perf.PerfCollector, "vcenter_time", hung_clock)
    svc = make_service(paused)  # start() resumes the plan
    try:
        wait_until(lambda: _relocating(paused, "webserver-1"), 30, "the resumed move's relocation")
    finally:
        released.set()
    _finish_copies(paused)
    done = svc.wait_for_plan(plan_id, timeout_s=60)
    assert done["state"] == "succeeded", done
    assert _placement(paused, "webserver-1") == "9diskLUN"
