"""The scheduler's start offsets (basil.app.jobs): no two interval jobs start together.

In ``basil serve`` every job's Python work competes with the API's request threads for the
interpreter; ``collect``, ``srp`` and ``maintenance`` starting together once a minute were the API's
slowest moments (docs/frontend.md).
"""

from __future__ import annotations

import dataclasses
import itertools
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from basil.app import Service
from basil.app import jobs as job_registry
from basil.config import BasilConfig, SchedulesConfig, SrpConfig, StoreConfig, VCenterConfig
from basil.errors import ConflictError

ANCHOR = datetime(2026, 11, 26, 3, 0, 0, 250_000, tzinfo=UTC)


def fire_times(trigger: Any, until: datetime) -> list[datetime]:
    """Every fire time of an APScheduler trigger from its first up to *until*."""
    out: list[datetime] = []
    at = trigger.get_next_fire_time(None, ANCHOR)
    while at is not None and at < until:
        out.append(at)
        at = trigger.get_next_fire_time(at, at + timedelta(microseconds=1))
    return out


def starts(config: BasilConfig, hours: float = 2.0) -> list[tuple[datetime, str]]:
    """Every start of every interval job within *hours* of ANCHOR, in time order."""
    until = ANCHOR + timedelta(hours=hours)
    found = job_registry.triggers(config, anchor=ANCHOR)
    every = job_registry.periods(config)
    return sorted((at, job_id) for job_id in every for at in fire_times(found[job_id], until))


def assert_apart(config: BasilConfig) -> None:
    """No two starts closer than the collection's period shared among the interval jobs."""
    every = job_registry.periods(config)
    least = every["collect"] / len(every) - 0.002
    found = starts(config)
    assert {job_id for _, job_id in found} == set(every)
    for (a, job_a), (b, job_b) in itertools.pairwise(found):
        assert (b - a).total_seconds() >= least, f"{job_a} at {a} and {job_b} at {b}"


@pytest.mark.parametrize(
    "schedules",
    [
        SchedulesConfig(),
        SchedulesConfig(
            collect_s=30, inventory_s=600, model_s=300, recommend_s=3600, srp_s=90, maintenance_s=120
        ),
        SchedulesConfig(collect_s=5, inventory_s=5, model_s=10, recommend_s=5, srp_s=5, maintenance_s=5),
    ],
    ids=["defaults", "multiples-of-30", "every-5-s"],
)
def test_no_two_interval_jobs_start_together(schedules: SchedulesConfig) -> None:
    config = BasilConfig(schedules=schedules)
    assert set(job_registry.periods(config)) == {
        "collect",
        "inventory",
        "model",
        "recommend",
        "srp",
        "maintenance",
    }
    assert_apart(config)


def test_the_offsets_follow_the_rule_and_the_first_runs_come_one_period_later() -> None:
    config = BasilConfig()
    offsets = job_registry.start_offsets(config)
    step = 20 / 6
    assert offsets == {
        "collect": 0.0,
        "srp": round(step, 3),
        "model": round(2 * step, 3),
        "maintenance": round(3 * step, 3),
        "inventory": round(4 * step, 3),
        "recommend": round(5 * step, 3),
    }
    found = job_registry.triggers(config, anchor=ANCHOR)
    collect_first = found["collect"].get_next_fire_time(None, ANCHOR)
    assert collect_first == ANCHOR + timedelta(seconds=20)
    srp_first = found["srp"].get_next_fire_time(None, ANCHOR)
    assert srp_first == ANCHOR + timedelta(seconds=60 + round(step, 3))
    # With SRP off, the other four share the collection's period among them.
    no_srp = dataclasses.replace(config, srp=SrpConfig(enabled=False))
    assert job_registry.start_offsets(no_srp) == {
        "collect": 0.0,
        "model": 4.0,
        "maintenance": 8.0,
        "inventory": 12.0,
        "recommend": 16.0,
    }
    assert_apart(no_srp)


def test_the_service_schedules_its_jobs_apart(tmp_path: Path) -> None:
    """The schedule `basil serve`'s service builds: each job's first run at its offset."""
    down = VCenterConfig(name="down", server="127.0.0.1:1", user="nobody", password_env="BASIL_NO_VAR")
    config = BasilConfig(vcenters=(down,), store=StoreConfig(url=f"sqlite:///{tmp_path / 'basil.db'}"))
    service = Service.from_config(config)
    service.start()
    try:
        assert service.scheduler is not None
        nxt = {
            job.id: job.next_run_time
            for job in service.scheduler.get_jobs(jobstore=job_registry.SCHEDULED)
            if job.id in job_registry.periods(config)
        }
    finally:
        service.shutdown()
    periods = job_registry.periods(config)
    offsets = job_registry.start_offsets(config)
    anchor = nxt["collect"] - timedelta(seconds=periods["collect"])
    for job_id, at in nxt.items():
        expected = anchor + timedelta(seconds=periods[job_id] + offsets[job_id])
        assert abs((at - expected).total_seconds()) < 0.002, (job_id, at, expected)
    first = sorted((at, job_id) for job_id, at in nxt.items())
    gaps = [(b - a).total_seconds() for (a, _), (b, _) in itertools.pairwise(first)]
    assert min(gaps) >= 1.0, first


def test_a_job_that_asks_the_scheduler_while_the_service_stops_does_not_hold_up_the_stop(
    tmp_path: Path,
) -> None:
    """APScheduler 3 holds its job stores' lock while it waits for running jobs; a job asking the
    scheduler anything then (the first round moves `recommend`'s next run) waited for ever, and `basil
    serve` did not stop after SIGTERM (seen once in a clean-clone CI run, its stacks dumped by SIGUSR2).
    The service stops the scheduler without waiting and waits for the job outside its locks."""
    down = VCenterConfig(name="down", server="127.0.0.1:1", user="nobody", password_env="BASIL_NO_VAR")
    config = BasilConfig(vcenters=(down,), store=StoreConfig(url=f"sqlite:///{tmp_path / 'basil.db'}"))
    service = Service.from_config(config)
    entered, asked = threading.Event(), threading.Event()

    def job_asking_the_scheduler() -> dict[str, Any]:
        scheduler = service.scheduler
        assert scheduler is not None
        entered.set()
        assert service.stopping.wait(60)
        time.sleep(0.2)  # the scheduler's shutdown under way
        scheduler.get_job("recommend", jobstore=job_registry.SCHEDULED)
        asked.set()
        return {}

    service._job_maintenance = job_asking_the_scheduler  # type: ignore[method-assign]
    service.start()
    assert service.scheduler is not None
    service.scheduler.modify_job(
        "maintenance", jobstore=job_registry.SCHEDULED, next_run_time=datetime.now(UTC)
    )
    assert entered.wait(60), "the scheduled job did not start"
    stopper = threading.Thread(target=service.shutdown, daemon=True)
    stopper.start()
    stopper.join(60)
    assert not stopper.is_alive(), "the service did not stop: its job waits for the scheduler's lock"
    assert asked.is_set()  # the job ran to its end before the service stopped
    assert service.scheduler is None
    # A stopped (stopping) service starts no scheduled run.
    with pytest.raises(ConflictError, match="the service is stopping"):
        service.run_job("maintenance")
