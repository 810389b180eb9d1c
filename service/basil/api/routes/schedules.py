"""Scheduled jobs and the rebalance window."""

from __future__ import annotations

from typing import Any

from flask import Blueprint, url_for

from basil.api import schemas as s
from basil.api.context import current_actor, current_service
from basil.api.operations import json_body, json_response, operation, query_args
from basil.errors import NotFoundError

bp = Blueprint("schedules", __name__)

_LIMIT = {"type": "integer", "minimum": 1, "maximum": 500, "default": 20}


@operation(bp, "GET", "/jobs", summary="Scheduled jobs", role="viewer", response=s.array(s.ref("Job")))
def jobs() -> Any:
    """Every job of the one scheduler with its trigger, next run and last run's outcome."""
    return current_service().jobs()


@operation(
    bp, "POST", "/jobs/{id}/run", summary="Run a job now", role="admin", response=s.ref("JobRun"),
    status=202, errors=(404, 409), action="job.run", target="job {id}",
    headers={"Location": "the run: GET it until its outcome is no longer running"},
)  # fmt: skip
def run_job(id: str) -> Any:
    """Hands the job to the service's scheduler, which starts it at once on its own threads, and answers
    202 with the run (outcome ``running``) and its address in ``Location``
    (``/api/v1/jobs/{id}/runs/{run}``). A job that is running already, scheduled or asked for, is not
    started twice: 409, naming the run in progress."""
    run = current_service().trigger_job(id, current_actor())
    resp = json_response(run, 202)
    resp.headers["Location"] = url_for(".job_run", id=id, run=run["id"])
    return resp


@operation(
    bp, "GET", "/jobs/{id}/runs", summary="A job's latest runs", role="viewer",
    response=s.array(s.ref("JobRun")), query={"limit": _LIMIT}, errors=(404,),
)  # fmt: skip
def job_runs(id: str) -> Any:
    """Newest first: when each run started and ended, its outcome, message and what it did."""
    return current_service().job_runs(id, query_args()["limit"])


@operation(
    bp, "GET", "/jobs/{id}/runs/{run}", summary="One run of a job", role="viewer",
    response=s.ref("JobRun"), errors=(404,),
)  # fmt: skip
def job_run(id: str, run: str) -> Any:
    """The run's outcome is ``running`` until it ends (``succeeded``, ``failed`` or ``skipped``)."""
    if not run.isdigit():
        raise NotFoundError(f"no run {run!r} of job {id}")
    return current_service().job_run(id, int(run))


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
