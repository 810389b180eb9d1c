"""Every scheduled job of the service, registered in this one module: one APScheduler 3 scheduler per process.

The scheduler is a ``BackgroundScheduler`` whose job store is the store's own ``apscheduler_jobs``
table (created by the store's migration, so APScheduler never creates schema). Each job has an
explicit id and ``replace_existing=True``, coalesces missed runs into one, tolerates a late start
(misfire grace) and never runs twice at once (``max_instances=1``). What a job does lives in the
service (:meth:`basil.app.service.Service.run_job`), which records each run in the store; the
scheduler only holds a picklable reference to :func:`run` and the job's id.

APScheduler 3 cannot share a job store between processes: only the process that serves the API
runs a scheduler (``basil serve``), never a second one beside it.

**Start offsets.** The interval jobs do not start together: ``collect`` starts at its period's start and
every other interval job at its own offset within ``collect``'s period, the offsets spread evenly over
that period in the order of :data:`PHASE_ORDER` (by default, every 20 s: ``collect`` at 0 s, ``srp``
3.3 s, ``model`` 6.7 s, ``maintenance`` 10 s, ``inventory`` 13.3 s, ``recommend`` 16.7 s later). All
offsets count from one moment, taken when the schedules are registered. When every period is a
multiple of ``collect``'s (the defaults), no two of these jobs ever start closer together than that
step (3.3 s by default): in the serving process each job's Python work competes with the API's request
threads for the interpreter, and jobs that start together add their stalls up (:func:`start_offsets`,
docs/frontend.md). Other periods drift against each other, and two jobs may then meet now and then.

A run asked for through the API (:meth:`~basil.app.service.Service.trigger_job`) is a one-off job of
the same scheduler, in a job store kept in memory (it is not worth resuming after a restart), that
runs at once on the scheduler's own threads with the id of the run already recorded, by the service
that recorded it (:func:`request_run`). A scheduled run that fires while a run of the same job is
running or asked for is skipped: the two are coalesced.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

from apscheduler.executors.pool import ThreadPoolExecutor
from apscheduler.jobstores.memory import MemoryJobStore
from apscheduler.jobstores.sqlalchemy import SQLAlchemyJobStore
from apscheduler.schedulers.background import BackgroundScheduler
from apscheduler.triggers.cron import CronTrigger
from apscheduler.triggers.date import DateTrigger
from apscheduler.triggers.interval import IntervalTrigger

from basil.config import BasilConfig
from basil.errors import ConflictError
from basil.store import Store

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class JobSpec:
    id: str
    name: str
    description: str


JOBS: Mapping[str, JobSpec] = {
    spec.id: spec
    for spec in (
        JobSpec(
            "collect",
            "Collect performance samples",
            "real-time (20 s) samples of every disk and host-datastore",
        ),
        JobSpec(
            "inventory", "Refresh the inventory", "tags re-read; a snapshot kept when the inventory changed"
        ),
        JobSpec(
            "model", "Fit models", "workload model per disk (BASIL §3) and device model per datastore (§4)"
        ),
        JobSpec("recommend", "Recommend moves", "one balancing round per pod (BASIL §5)"),
        JobSpec("srp", "SRP control loop", "demand, divvy and per-disk IO allocation per pool tree"),
        JobSpec("maintenance", "Roll up and prune", "5-minute and hourly rollups, retention"),
        JobSpec(
            "rebalance", "Rebalance window", "applies the approved (or, in automatic pods, a fresh) plan"
        ),
    )
}


#: The scheduler's job stores: the configured schedules (in the store) and the runs asked for (in memory).
SCHEDULED = "default"
REQUESTED = "requested"


class JobHost(Protocol):
    """What the scheduled jobs call: the service of this process."""

    def run_job(self, job_id: str, run_id: int | None = None) -> Any: ...


_host: JobHost | None = None


def set_host(host: JobHost | None) -> None:
    """The service whose scheduled jobs this process's scheduler runs (one per process)."""
    global _host  # noqa: PLW0603 - APScheduler stores a module-level reference, so the target must be one
    _host = host


def clear_host(host: JobHost) -> None:
    """*host* stops: it no longer runs the scheduled jobs (another service that became the host meanwhile,
    as in a test, stays it)."""
    global _host  # noqa: PLW0603 - see set_host
    if _host is host:
        _host = None


def run(job_id: str) -> None:
    """The callable every scheduled job points at (stored in the job table as ``basil.app.jobs:run``)."""
    host = _host
    if host is None:
        log.warning("job %s fired with no service in this process; ignored", job_id)
        return
    try:
        host.run_job(job_id)
    except ConflictError as err:
        log.info("scheduled run of job %s skipped: %s", job_id, err.message)


def request_run(scheduler: BackgroundScheduler, host: JobHost, job_id: str, run_id: int) -> None:
    """Have *scheduler* run *job_id* of *host* now, on its own threads, as run *run_id*.

    The run is bound to the service that recorded it, not to the process's host of the schedules (its job
    store is in memory, so nothing is pickled): a run asked for of one service is never handed to another,
    nor dropped while another service of the same process (a test's) stops.
    """
    scheduler.add_job(
        host.run_job,
        trigger=DateTrigger(run_date=datetime.now(UTC)),
        args=[job_id, run_id],
        id=f"{job_id}@run-{run_id}",
        name=f"{JOBS[job_id].name} (asked for, run {run_id})",
        jobstore=REQUESTED,
        misfire_grace_time=None,  # however busy the scheduler is, a run asked for runs
    )


#: The interval jobs other than ``collect``, in the order of their start offsets within ``collect``'s period
#: (the frequent, light ``srp`` first; ``maintenance``, every minute and heavier, in the middle: farthest from
#: the collections on both sides).
PHASE_ORDER = ("srp", "model", "maintenance", "inventory", "recommend")


def periods(config: BasilConfig) -> dict[str, int]:
    """The period in seconds of every interval job the configuration turns on, by job id."""
    s = config.schedules
    found = {
        "collect": s.collect_s,
        "inventory": s.inventory_s,
        "model": s.model_s,
        "recommend": s.recommend_s,
        "maintenance": s.maintenance_s,
    }
    if config.srp.enabled:
        found["srp"] = s.srp_s
    return found


def start_offsets(config: BasilConfig) -> dict[str, float]:
    """Each interval job's start offset in seconds, counted from the moment the schedules are registered
    plus the job's own period (the module's rule: ``collect`` at 0, the other interval jobs spread evenly
    over ``collect``'s period in :data:`PHASE_ORDER`; an offset beyond a job's own period wraps)."""
    every = periods(config)
    others = [job_id for job_id in PHASE_ORDER if job_id in every]
    step = every["collect"] / (len(others) + 1)
    offsets = {"collect": 0.0}
    for i, job_id in enumerate(others, start=1):
        offsets[job_id] = round((i * step) % every[job_id], 3)
    return offsets


def triggers(config: BasilConfig, anchor: datetime | None = None) -> dict[str, Any]:
    """The trigger of every job the configuration turns on, by job id. Interval jobs first fire one period
    after *anchor* (default: now) plus their start offset (:func:`start_offsets`)."""
    s = config.schedules
    start = anchor if anchor is not None else datetime.now(UTC)
    offsets = start_offsets(config)
    found: dict[str, Any] = {
        job_id: IntervalTrigger(
            seconds=period, start_date=start + timedelta(seconds=period + offsets[job_id]), timezone=UTC
        )
        for job_id, period in periods(config).items()
    }
    rb = s.rebalance
    if rb.enabled:
        # Day names, not numbers: APScheduler counts weekdays from Monday, cron from Sunday.
        found["rebalance"] = CronTrigger(**rb.expression().apscheduler_fields(), timezone=rb.zone())
    return found


def misfire_grace(config: BasilConfig, job_id: str) -> int:
    """How late a run may still start: the window's length for the rebalance window, else one period."""
    s = config.schedules
    if job_id == "rebalance":
        return max(60, int(s.rebalance.duration / timedelta(seconds=1)))
    period = {**periods(config), "srp": s.srp_s}[job_id]
    return max(5, int(period))


def build_scheduler(store: Store, workers: int = 6, persistent: bool = True) -> BackgroundScheduler:
    """The process's scheduler over the store's job table (not started); ``persistent=False`` keeps the
    schedules in memory, leaving the store's table alone (a service that runs only what it is asked)."""
    scheduled = (
        SQLAlchemyJobStore(engine=store.engine, tablename="apscheduler_jobs")
        if persistent
        else MemoryJobStore()
    )
    return BackgroundScheduler(
        jobstores={SCHEDULED: scheduled, REQUESTED: MemoryJobStore()},
        executors={"default": ThreadPoolExecutor(max_workers=workers)},
        job_defaults={"coalesce": True, "max_instances": 1},
        timezone="UTC",
    )


def register_jobs(scheduler: BackgroundScheduler, config: BasilConfig) -> list[str]:
    """Add (or replace) every configured job by its explicit id; remove jobs the configuration turned off."""
    wanted = triggers(config)
    for job in scheduler.get_jobs(jobstore=SCHEDULED):
        if job.id not in wanted:
            scheduler.remove_job(job.id, jobstore=SCHEDULED)
    for job_id, trigger in wanted.items():
        spec = JOBS[job_id]
        scheduler.add_job(
            run,
            trigger=trigger,
            args=[job_id],
            id=job_id,
            name=spec.name,
            jobstore=SCHEDULED,
            replace_existing=True,
            coalesce=True,
            max_instances=1,
            misfire_grace_time=misfire_grace(config, job_id),
        )
    return sorted(wanted)
