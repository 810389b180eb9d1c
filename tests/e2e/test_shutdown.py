"""Serving life cycle through real processes: one ``basil serve`` per store (so one scheduler), SIGTERM
drains and exits 0 with a running move finished, and the plan it interrupted resumes on restart
without moving any disk twice."""

from __future__ import annotations

import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest

from basil.store import Store
from basil.store import plans as plan_store
from tests.vcenter.labproc import ROOT, LabProcess

from .conftest import BASIL, ServeProcess, start_service, wait_for


@pytest.fixture
def slow_lab() -> Any:
    """BASIL §6.3 at 4x: a 10 GB Storage vMotion takes about 12 s of wall time; the test pauses the lab's
    time while the first copy runs, so a loaded machine cannot let both moves end before the SIGTERM."""
    with LabProcess.start(ROOT / "lab" / "scenarios" / "basil-6.3.yaml", speed=4) as lab:
        yield lab


def _disk_ids(serve: ServeProcess, lab: LabProcess) -> tuple[dict[str, str], dict[str, str]]:
    placement = lab.control("GET", "/lab/placement")
    disks = {vm["name"]: f"{vm['moid']}:scsi0:1" for vm in placement["vms"]}
    datastores = {d["name"]: d["id"] for d in serve.get("/api/v1/pods/basil")["datastores"]}
    return disks, datastores


def test_sigterm_drains_and_a_running_plan_resumes_on_restart(slow_lab: LabProcess, tmp_path: Path) -> None:
    serve = start_service(slow_lab, tmp_path)
    disks, datastores = _disk_ids(serve, slow_lab)
    moves = [
        {"disk": disks["oltp-1"], "to": datastores["3diskLUN"]},
        {"disk": disks["oltp-2"], "to": datastores["9diskLUN"]},
    ]
    plan = serve.post("/api/v1/plans", {"pod": "basil", "moves": moves}, expect=201)
    serve.post(f"/api/v1/plans/{plan['id']}/apply")

    def first_move_running() -> Any:
        current = serve.get(f"/api/v1/plans/{plan['id']}")
        return current if current["moves"][0]["state"] == "running" else None

    wait_for("the first move to run", first_move_running, every_s=0.2)
    # Simulated time stands still until the SIGTERM is in: the copy cannot end before it however
    # slowly this machine starts the second `basil serve` below.
    slow_lab.set_speed(0)

    # A second `basil serve` on the same store is refused before it starts a scheduler.
    second = subprocess.run(
        [*BASIL, "serve", "--config", str(serve.config)], capture_output=True, text=True, env=serve.env,
        timeout=120, check=False,
    )  # fmt: skip
    assert second.returncode == 2, (second.stdout, second.stderr)
    assert "another basil serve" in second.stderr
    assert "ready" not in second.stdout

    serve.proc.send_signal(signal.SIGTERM)
    out_file = tmp_path / "serve.out"

    def sigterm_taken() -> bool:
        return "SIGTERM: stopping gracefully" in out_file.read_text(encoding="utf-8")

    wait_for("the SIGTERM to be taken", sigterm_taken, every_s=0.2)
    slow_lab.set_speed(4)  # the running copy goes on and ends; the drain waits for it
    serve.proc.wait(timeout=180)
    assert serve.stop() == 0, serve.log()
    out = out_file.read_text(encoding="utf-8")
    assert "basil serve: stopped" in out

    # Stopped between the moves: the running one finished, the next did not start, the plan is running.
    with Store(f"sqlite:///{tmp_path / 'basil.db'}") as store, store.read_session() as session:
        stopped = plan_store.get_plan(session, plan["id"])
    assert stopped.state == "running"
    assert [m.state for m in stopped.moves] == ["succeeded", "pending"], stopped.moves
    first_task = stopped.moves[0].task_id
    assert first_task

    restarted = ServeProcess.start(serve.config, serve.env)
    restarted.token = serve.token
    try:

        def finished() -> Any:
            current = restarted.get(f"/api/v1/plans/{plan['id']}")
            return current if current["state"] in ("succeeded", "failed") else None

        done = wait_for("the resumed plan to finish", finished, timeout_s=300)
        assert done["state"] == "succeeded", done
        assert [m["state"] for m in done["moves"]] == ["succeeded", "succeeded"]
        assert done["moves"][0]["task"] == first_task  # not moved a second time
        where = {
            f"{vm['moid']}:{d['unit']}": d["datastore_moid"]
            for vm in slow_lab.control("GET", "/lab/placement")["vms"]
            for d in vm["disks"]
        }
        assert where[disks["oltp-1"]] == datastores["3diskLUN"]
        assert where[disks["oltp-2"]] == datastores["9diskLUN"]
        jobs = restarted.get("/api/v1/jobs")
        assert len({j["id"] for j in jobs}) == len(jobs)
    finally:
        assert restarted.stop(signal.SIGINT) == 0, restarted.log()


def test_sigusr2_writes_every_threads_stack_and_changes_nothing(slow_lab: LabProcess, tmp_path: Path) -> None:
    """What a process that does not stop is waiting on, without a debugger: SIGUSR2 writes each thread's
    stack to standard error (serve.log here), and the service goes on serving and stops as usual."""
    serve = start_service(slow_lab, tmp_path)
    try:
        assert serve.get("/api/v1/health")["status"] in ("ok", "degraded")
        serve.proc.send_signal(signal.SIGUSR2)
        wait_for("the stacks in serve.log", lambda: "Current thread" in serve.log(), timeout_s=30)
        log = serve.log()
        assert "Thread 0x" in log  # every thread, not only the one the signal interrupted
        assert "/basil/serve/" in log  # the serving thread's frames, with their files
        assert serve.get("/api/v1/health")["status"] in ("ok", "degraded")  # still answering
    finally:
        assert serve.stop() == 0, serve.log()


def test_basil_serve_freezes_the_heap_of_its_start(slow_lab: LabProcess, tmp_path: Path) -> None:
    """Once the vCenters' first connection attempts ended, the objects alive are moved out of the garbage
    collector's way (its full collections then no longer walk them beside the API), and it goes on serving."""
    serve = start_service(slow_lab, tmp_path)
    try:
        line = wait_for(
            "the heap frozen",
            lambda: next((x for x in serve.log().splitlines() if "heap frozen:" in x), None),
            timeout_s=150,
        )
        frozen = int(line.split("heap frozen:")[1].split()[0])
        assert frozen > 10_000, line  # the modules, pyVmomi's types and the service's objects
        assert serve.get("/api/v1/health")["status"] in ("ok", "degraded")  # still answering
    finally:
        assert serve.stop() == 0, serve.log()
