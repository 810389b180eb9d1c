"""Running a job through the API: the scheduler runs it, not the request; one run of a job at a time.

The inventory job needs the vCenter link's lock; holding that lock in the test thread keeps the job
waiting on the scheduler's thread, so each state of a run can be looked at without any timing.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest
from sqlalchemy import event
from sqlalchemy.orm import Session

from basil.app import Actor, Service
from basil.app import jobs as job_registry
from basil.errors import ConflictError
from basil.store.models import JobRunRow

from .conftest import ApiEnv, lab_config

ADMIN = Actor("tester", "admin", "127.0.0.1")


def test_a_run_is_handed_to_the_scheduler_and_followed_through_its_location(api_env: ApiEnv) -> None:
    link = api_env.service.links["lab"]
    with link._lock:  # the job blocks on its scheduler thread; the request thread would re-enter it
        resp = api_env.post("/api/v1/jobs/inventory/run", role="admin")
        assert resp.status_code == 202, resp.get_data(as_text=True)
        run = resp.get_json()
        assert (run["job"], run["outcome"], run["finished"]) == ("inventory", "running", None)
        location = resp.headers["Location"]
        assert location == f"/api/v1/jobs/inventory/runs/{run['id']}"
        assert api_env.get(location).get_json()["outcome"] == "running"
        listed = api_env.get("/api/v1/jobs/inventory/runs?limit=5").get_json()
        assert listed[0]["id"] == run["id"]
        jobs = {j["id"]: j for j in api_env.get("/api/v1/jobs").get_json()}
        assert jobs["inventory"]["last_run"]["outcome"] == "running"

        again = api_env.post("/api/v1/jobs/inventory/run", role="admin")
        assert again.status_code == 409
        assert f"run {run['id']}" in again.get_json()["message"]
        # A scheduled run firing now is coalesced with the one asked for: nothing new is recorded.
        job_registry.run("inventory")
        with pytest.raises(ConflictError):
            api_env.service.run_job("inventory")
        assert api_env.get("/api/v1/jobs/inventory/runs?limit=5").get_json()[0]["id"] == run["id"]
    done = api_env.wait_for_run(location)
    assert done["outcome"] == "succeeded", done
    assert done["finished"] is not None
    other = api_env.post("/api/v1/jobs/inventory/run", role="admin")  # a new run once that one ended
    assert other.status_code == 202
    assert api_env.wait_for_run(other.headers["Location"])["id"] == run["id"] + 1


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("POST", "/api/v1/jobs/nope/run"),
        ("GET", "/api/v1/jobs/nope/runs"),
        ("GET", "/api/v1/jobs/inventory/runs/abc"),
        ("GET", "/api/v1/jobs/inventory/runs/999999"),
    ],
)
def test_unknown_jobs_and_runs_are_404(api_env: ApiEnv, method: str, path: str) -> None:
    resp = api_env.client().open(path, method=method, headers=api_env.headers("admin"))
    assert resp.status_code == 404, resp.get_data(as_text=True)


def test_a_run_is_found_only_under_its_own_job(api_env: ApiEnv) -> None:
    api_env.run_jobs("inventory")
    run = api_env.get("/api/v1/jobs/inventory/runs?limit=1").get_json()[0]
    assert api_env.get(f"/api/v1/jobs/inventory/runs/{run['id']}").status_code == 200
    assert api_env.get(f"/api/v1/jobs/collect/runs/{run['id']}").status_code == 404


def test_a_scheduler_for_asked_runs_only_never_takes_up_the_schedules(api_env: ApiEnv) -> None:
    # Changing the rebalance window re-registers the schedules, but only where they run.
    resp = api_env.put("/api/v1/schedules/rebalance", role="admin", json={"max_moves": 6})
    assert resp.status_code == 200, resp.get_data(as_text=True)
    jobs = api_env.get("/api/v1/jobs").get_json()
    assert {j["id"]: j["next_run"] for j in jobs} == dict.fromkeys(job_registry.JOBS)


def test_without_a_scheduler_a_run_is_refused(api_env: ApiEnv) -> None:
    service = Service.from_config(api_env.config)  # not started: no scheduler
    try:
        with pytest.raises(ConflictError, match="no scheduler"):
            service.trigger_job("collect", ADMIN)
    finally:
        service.store.dispose()


def test_a_run_that_never_started_is_recorded_failed_at_shutdown(api_env: ApiEnv, tmp_path: Path) -> None:
    config = lab_config(api_env.lab, tmp_path / "basil.db")
    service = Service.from_config(config)
    service.start(periodic=False)
    job_lock = service._job_locks["inventory"]
    with job_lock:  # the run asked for waits on its scheduler thread for the job's lock
        run = service.trigger_job("inventory", ADMIN)
        scheduler = service.scheduler
        assert scheduler is not None
        # The scheduler takes the one-off job out of its store once it handed it to a thread.
        wait_until(lambda: not scheduler.get_jobs(jobstore=job_registry.REQUESTED), "the run to be picked up")
        service.shutdown(wait=False)
    ended = Service.from_config(config)
    try:
        recorded = ended.job_run("inventory", run["id"])
    finally:
        ended.store.dispose()
    assert recorded["outcome"] == "failed"
    assert "stopped before the run started" in recorded["message"]


def wait_until(check: Callable[[], bool], what: str, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)


def test_jobs_show_their_schedule_as_the_operator_wrote_it(api_env: ApiEnv) -> None:
    body = {"cron": "30 1 * * mon-fri", "timezone": "Europe/Paris", "duration": "90m"}
    resp = api_env.put("/api/v1/schedules/rebalance", role="admin", json=body)
    assert resp.status_code == 200, resp.get_data(as_text=True)
    try:
        jobs = {j["id"]: j for j in api_env.get("/api/v1/jobs").get_json()}
        rebalance = jobs["rebalance"]
        assert rebalance["trigger"] == "cron '30 1 * * mon-fri' in Europe/Paris, for 90 min"
        assert rebalance["schedule"] == {
            "kind": "cron",
            "cron": "30 1 * * mon-fri",
            "timezone": "Europe/Paris",
            "duration_s": 5400,
        }
        assert jobs["collect"]["trigger"] == f"every {api_env.config.schedules.collect_s} s"
        assert jobs["collect"]["schedule"] == {
            "kind": "interval",
            "every_s": api_env.config.schedules.collect_s,
        }
        assert not any("cron[" in (j["trigger"] or "") for j in jobs.values())
    finally:
        assert api_env.delete("/api/v1/schedules/rebalance", role="admin").status_code in (200, 204)


def test_the_jobs_list_shows_each_new_last_run(api_env: ApiEnv) -> None:
    """The latest runs are cached by the service until a run is recorded or changes: never stale."""
    for _ in range(2):
        before = {j["id"]: j for j in api_env.get("/api/v1/jobs").get_json()}
        run = api_env.service.run_job("inventory")  # recorded as the scheduler's runs are
        after = {j["id"]: j for j in api_env.get("/api/v1/jobs").get_json()}
        assert after["inventory"]["last_run"] != before["inventory"]["last_run"]
        assert after["inventory"]["last_run"]["started"] == run["started"]
        assert after["inventory"]["last_run"]["outcome"] == run["outcome"]


def test_a_run_asked_for_is_run_by_its_own_service_while_another_starts_and_stops(
    api_env: ApiEnv, tmp_path: Path
) -> None:
    """A second service in the same process (as tests make them) once took over the module's job host: a run
    asked for of the first was then handed to the second, or, once the second stopped, dropped (it stayed
    ``running`` for ever). A run asked for belongs to the service that recorded it."""
    other = Service.from_config(lab_config(api_env.lab, tmp_path / "other.db"))
    other.start(periodic=False)
    try:
        resp = api_env.post("/api/v1/jobs/inventory/run", role="admin")
        assert resp.status_code == 202, resp.get_data(as_text=True)
        assert api_env.wait_for_run(resp.headers["Location"], timeout_s=60)["outcome"] == "succeeded"
    finally:
        other.shutdown()
    resp = api_env.post("/api/v1/jobs/inventory/run", role="admin")
    assert resp.status_code == 202, resp.get_data(as_text=True)
    assert api_env.wait_for_run(resp.headers["Location"], timeout_s=60)["outcome"] == "succeeded"


def test_a_job_no_longer_counts_as_running_once_its_run_is_recorded_finished(api_env: ApiEnv) -> None:
    """The job stops counting as running before its run is recorded finished, so a client that sees the run
    finished and asks again is never answered 409 (it once could be, in the moment between the two)."""
    service = api_env.service
    seen: list[str] = []

    def on_flush(session: Session, _context: object) -> None:
        for row in session.dirty:
            if isinstance(row, JobRunRow) and row.job_id == "inventory" and row.outcome != "running":
                with service._lock:
                    seen.append(service._busy("inventory"))

    event.listen(Session, "after_flush", on_flush)
    try:
        run = service.run_job("inventory")
    finally:
        event.remove(Session, "after_flush", on_flush)
    assert run["outcome"] == "succeeded", run
    assert seen == [""]
    resp = api_env.post("/api/v1/jobs/inventory/run", role="admin")
    assert resp.status_code == 202, resp.get_data(as_text=True)
    api_env.wait_for_run(resp.headers["Location"], timeout_s=60)
