"""Scheduled jobs and the rebalance window."""

from __future__ import annotations

from typing import Any

from flask import Blueprint

from basil.api import schemas as s
from basil.api.context import current_actor, current_service
from basil.api.operations import json_body, operation
from basil.app.actor import audited

bp = Blueprint("schedules", __name__)


@operation(bp, "GET", "/jobs", summary="Scheduled jobs", role="viewer", response=s.array(s.ref("Job")))
def jobs() -> Any:
    """Every job of the one scheduler with its trigger, next run and last run's outcome."""
    return current_service().jobs()


@operation(
    bp, "POST", "/jobs/{id}/run", summary="Run a job now", role="admin", response=s.ref("JobRun"),
    errors=(404, 409), action="job.run", target="job {id}",
)  # fmt: skip
def run_job(id: str) -> Any:
    """Runs the job at once and answers with its outcome (409 if it is running already)."""
    service = current_service()
    with audited(service.store, current_actor(), "job.run", f"job {id}"):
        return service.run_job(id)


@operation(
    bp,
    "GET",
    "/schedules",
    summary="Schedules and the rebalance window",
    role="viewer",
    response=s.ref("Schedules"),
)
def schedules() -> Any:
    """Job intervals and the rebalance window per pod: cron, time zone, duration, budget."""
    return current_service().schedules()


@operation(
    bp, "PUT", "/schedules/rebalance", summary="Change the rebalance window", role="admin",
    body=s.REBALANCE_REQUEST, response=s.ref("Schedules"), errors=(400, 404),
    action="schedules.rebalance", target="rebalance window",
)  # fmt: skip
def set_rebalance_window() -> Any:
    """Validated like the configuration's (cron expression, IANA time zone, duration up to 7d). The fields
    given are kept in the store and win over the configuration file, also after a restart, until
    DELETE /schedules/rebalance."""
    return current_service().set_rebalance_window(json_body(), current_actor())


@operation(
    bp, "DELETE", "/schedules/rebalance", summary="Go back to the configuration's rebalance window",
    role="admin", response=s.ref("Schedules"), action="schedules.rebalance.reset", target="rebalance window",
)  # fmt: skip
def reset_rebalance_window() -> Any:
    """Forgets the changes PUT made (kept in the store across restarts): the configuration file's window
    applies again, now and at the next start."""
    return current_service().reset_rebalance_window(current_actor())
