"""The SLO series of a pod (``GET /pods/{pod}/slo/history``): one point per round of a pod with
``goal: slo``, each group's DRT, measured and predicted response times and damage (docs/slo.md).

Rounds are stamped with the service's clock and shown on vCenter's (:mod:`basil.app.clock`);
``since``/``until`` are read on vCenter's clock too.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from basil.errors import Problem, ValidationError
from basil.store.slo_history import points

if TYPE_CHECKING:
    from basil.app.service import Service

MAX_POINTS = 5000  # a year of hourly rounds is 8,760: the newest are kept when more are asked for


def parse_time(text: str | None, name: str) -> datetime | None:
    """An ISO 8601 time of the query (a naive one is UTC); a clear error naming ``query.<name>``."""
    if text is None or text == "":
        return None
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise ValidationError(
            [
                Problem(
                    f"query.{name}", f"must be an ISO 8601 time such as 2026-11-26T09:00:00Z, got {text!r}"
                )
            ],
            "query",
        ) from None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def pod_slo_history(
    svc: Service, pod: str, since: str | None = None, until: str | None = None
) -> dict[str, Any]:
    """The pod's SLO points between *since* and *until* (vCenter's clock), oldest first."""
    resolved = svc.resolved_pod(pod, refresh=False)  # 404 for an unknown pod
    start, end = parse_time(since, "since"), parse_time(until, "until")
    if start is not None and end is not None and end < start:
        raise ValidationError([Problem("query.until", "is before since")], "query")
    vc = resolved.vcenter
    with svc.store.read_session() as session:
        found = points(
            session,
            pod,
            svc.local_time(start, vc) if start is not None else None,
            svc.local_time(end, vc) if end is not None else None,
            limit=MAX_POINTS,
        )

    def at(moment: datetime) -> str:
        shown = svc.shown(moment, vc)
        assert shown is not None
        return shown.astimezone(UTC).isoformat()

    return {
        "pod": pod,
        "goal": resolved.config.goal,
        "points": [
            {
                "at": at(p.at),
                "round_id": p.round_id,
                "damage_before": p.damage_before,
                "damage_after": p.damage_after,
                "measured_damage": p.measured_damage,
                "groups": p.groups,
            }
            for p in found
        ],
    }
