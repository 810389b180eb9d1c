"""Job runs: when each scheduled job started, how it ended, and what it did (counts, messages)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from sqlalchemy import delete, func, select
from sqlalchemy.orm import Session

from basil.errors import ConflictError, NotFoundError
from basil.store.models import JobRunRow

Outcome = Literal["succeeded", "failed", "skipped"]


@dataclass(frozen=True)
class JobRun:
    id: int
    job_id: str
    started_at: datetime
    finished_at: datetime | None
    outcome: str
    message: str
    details: dict[str, Any]


def _run(row: JobRunRow) -> JobRun:
    return JobRun(row.id, row.job_id, row.started_at, row.finished_at, row.outcome, row.message, row.details)


def start_run(session: Session, job_id: str, now: datetime | None = None) -> int:
    """Record that *job_id* started; returns the run's id for :func:`finish_run`."""
    row = JobRunRow(
        job_id=job_id, started_at=now or datetime.now(UTC), outcome="running", message="", details={}
    )
    session.add(row)
    session.flush()
    return row.id


def finish_run(
    session: Session,
    run_id: int,
    outcome: Outcome,
    message: str = "",
    *,
    details: dict[str, Any] | None = None,
    now: datetime | None = None,
) -> JobRun:
    row = session.get(JobRunRow, run_id)
    if row is None:
        raise NotFoundError(f"job run {run_id} does not exist")
    if row.outcome != "running":
        raise ConflictError(f"job run {run_id} already ended ({row.outcome})")
    row.outcome, row.message, row.details = outcome, message, details or {}
    row.finished_at = now or datetime.now(UTC)
    session.flush()
    return _run(row)


def abandon_running(session: Session, message: str = "service stopped while the job ran") -> int:
    """Mark runs left 'running' by a stopped service as failed (called once at start-up)."""
    rows = list(session.execute(select(JobRunRow).where(JobRunRow.outcome == "running")).scalars())
    for row in rows:
        row.outcome, row.message = "failed", message
    session.flush()
    return len(rows)


def get_run(session: Session, run_id: int) -> JobRun:
    row = session.get(JobRunRow, run_id)
    if row is None:
        raise NotFoundError(f"job run {run_id} does not exist")
    return _run(row)


def recent_runs(session: Session, job_id: str | None = None, limit: int = 50) -> list[JobRun]:
    query = select(JobRunRow).order_by(JobRunRow.started_at.desc(), JobRunRow.id.desc()).limit(limit)
    if job_id is not None:
        query = query.where(JobRunRow.job_id == job_id)
    return [_run(r) for r in session.execute(query).scalars()]


def last_runs(session: Session) -> dict[str, JobRun]:
    """The latest run of every job."""
    latest = (
        select(JobRunRow.job_id, func.max(JobRunRow.id).label("id")).group_by(JobRunRow.job_id).subquery()
    )
    rows = session.execute(select(JobRunRow).join(latest, JobRunRow.id == latest.c.id)).scalars()
    return {r.job_id: _run(r) for r in rows}


def prune_runs(session: Session, before: datetime) -> int:
    result = session.execute(
        delete(JobRunRow).where(JobRunRow.started_at < before, JobRunRow.outcome != "running")
    )
    return int(result.rowcount)  # type: ignore[attr-defined]
