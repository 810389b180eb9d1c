"""Recommendations, plans and initial placement: where Basil proposes and applies Storage vMotions."""

from __future__ import annotations

from typing import Any

from flask import Blueprint

from basil.api import schemas as s
from basil.api.answers import Cached
from basil.api.context import current_actor, current_service
from basil.api.operations import json_body, operation, query_args
from basil.app.view_cache import PLANS, RECOMMENDATIONS
from basil.errors import NotFoundError

bp = Blueprint("plans", __name__)

#: What a plan's answer is built from (basil.api.answers): plans, their moves and the moves'
#: recommendations (reasons, predictions); datastore names from the inventories.
_PLANS = Cached(PLANS + RECOMMENDATIONS)


def plan_id(text: str) -> int:
    """A plan id from the path; anything but a whole number names no plan."""
    try:
        value = int(text)
    except ValueError:
        raise NotFoundError(f"no plan {text!r} (plan ids are whole numbers)") from None
    if value < 1:
        raise NotFoundError(f"no plan {text!r}")
    return value


@operation(
    bp, "GET", "/pods/{pod}/recommendations", summary="The pod's latest recommendation", role="viewer",
    response=s.ref("Recommendation"), errors=(404,),
)  # fmt: skip
def latest_recommendation(pod: str) -> Any:
    """The latest recommendation with its moves, reasons and predicted effect; 404 when there is none yet."""
    found = current_service().latest_recommendation(pod)
    if found is None:
        raise NotFoundError(f"pod {pod!r} has no recommendation yet")
    return found


@operation(
    bp, "GET", "/pods/{pod}/predictions", summary="Predicted against measured", role="viewer",
    response=s.array(s.ref("PredictionCheck")), errors=(404,),
)  # fmt: skip
def predictions(pod: str) -> Any:
    """Each applied plan's predicted datastore latency and IOPS and pod imbalance, what was measured an hour
    later in vCenter's time, and the error; newest first."""
    return current_service().predictions(pod)


@operation(
    bp, "GET", "/pods/{pod}/slo/history", summary="SLO groups over time", role="viewer",
    response=s.ref("SloHistory"), query=s.SLO_HISTORY_QUERY, errors=(400, 404),
)  # fmt: skip
def slo_history(pod: str) -> Any:
    """Per round of a pod with goal slo: each group's DRT, measured and predicted response time and damage,
    oldest first, on vCenter's clock (docs/slo.md). Empty for a pod with goal balance."""
    args = query_args()
    return current_service().slo_history(pod, args.get("since"), args.get("until"))


@operation(
    bp, "POST", "/pods/{pod}/recommendations", summary="Compute a recommendation now", role="operator",
    response=s.ref("Recommendation"), status=201, errors=(404, 409, 502),
    action="recommendation.create", target="pod {pod}",
)  # fmt: skip
def recommend_now(pod: str) -> Any:
    """One balancing round on the pod's current models (BASIL §5); nothing moves until a plan is applied."""
    return current_service().recommend_now(pod, current_actor())


@operation(
    bp, "POST", "/plans", summary="Create a plan", role="operator", body=s.CREATE_PLAN,
    response=s.ref("Plan"), status=201, errors=(400, 404, 409),
    action="plan.create", target="plans",
)  # fmt: skip
def create_plan() -> Any:
    """From a recommendation (``recommendation_id``) or explicit ``pod`` and ``moves``; state proposed."""
    body = json_body()
    return current_service().create_plan(
        current_actor(),
        recommendation_id=body.get("recommendation_id"),
        pod=body.get("pod"),
        moves=body.get("moves"),
    )


_STATE = {"type": "string", "enum": s.PLAN_STATES}
_POD = {"type": "string", "minLength": 1, "maxLength": 63}


@operation(
    bp, "GET", "/plans", summary="Plans", role="viewer", response=s.array(s.ref("Plan")),
    query={"state": _STATE, "pod": _POD}, errors=(400,), cache=_PLANS,
)  # fmt: skip
def plans() -> Any:
    """Plans, newest first, optionally of one state or one pod."""
    q = query_args()
    return current_service().plans(state=q.get("state"), pod=q.get("pod"))


@operation(
    bp,
    "GET",
    "/plans/{id}",
    summary="One plan",
    role="viewer",
    response=s.ref("Plan"),
    errors=(404,),
    cache=_PLANS,
)
def plan(id: str) -> Any:
    """The plan with each move's state, progress, vCenter task and message."""
    return current_service().plan(plan_id(id))


@operation(
    bp, "POST", "/plans/{id}/approve", summary="Approve a plan", role="operator", response=s.ref("Plan"),
    errors=(404, 409), action="plan.approve", target="plan {id}",
)  # fmt: skip
def approve_plan(id: str) -> Any:
    """proposed → approved: the next rebalance window applies it (or apply it now)."""
    return current_service().approve_plan(plan_id(id), current_actor())


@operation(
    bp, "POST", "/plans/{id}/apply", summary="Apply a plan now", role="operator", response=s.ref("Plan"),
    errors=(404, 409, 502), action="plan.apply", target="plan {id}",
)  # fmt: skip
def apply_plan(id: str) -> Any:
    """approved (or proposed, which approves it) → running now, within vSphere's concurrency limits."""
    return current_service().apply_plan(plan_id(id), current_actor())


@operation(
    bp, "POST", "/plans/{id}/cancel", summary="Cancel a plan", role="operator", response=s.ref("Plan"),
    errors=(404, 409), action="plan.cancel", target="plan {id}",
)  # fmt: skip
def cancel_plan(id: str) -> Any:
    """A running move finishes; no new move starts."""
    return current_service().cancel_plan(plan_id(id), current_actor())


@operation(
    bp, "POST", "/placement", summary="Rank datastores for a new disk", role="operator",
    body=s.PLACEMENT_REQUEST, response=s.ref("PlacementResult"), errors=(400, 404),
    action="placement", target="placement",
)  # fmt: skip
def placement() -> Any:
    """Datastores of the pod ranked by the normalized load the new disk would give them, with reasons."""
    return current_service().placement(json_body(), current_actor())
