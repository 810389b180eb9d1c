"""SLO history: per round of a pod with ``goal: slo``, each priority group's DRT, measured and
predicted response times and damage (docs/slo.md), for the plugin's chart over time.

A round that recommends no move keeps its point too (``round_id`` None), so the series has one point
per round whatever the round decided. Times are vCenter's (the round's clock).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from basil.store.models import SloHistoryRow

# What each group's entry keeps from a round's ``slo.groups[]`` (api SloGroup): the rest is per round.
GROUP_FIELDS = (
    "name",
    "drt_ms",
    "disks",
    "measured_ms",
    "predicted_ms_before",
    "predicted_ms_after",
    "damage_before",
    "damage_after",
    "measured_damage",
    "measured_within_drt",
)


@dataclass(frozen=True)
class SloPoint:
    pod: str
    at: datetime
    round_id: str | None
    damage_before: float
    damage_after: float
    measured_damage: float | None
    groups: list[dict[str, Any]]


def save_point(
    session: Session, pod: str, at: datetime, round_id: str | None, slo: Mapping[str, Any]
) -> None:
    """Keep one round's SLO section (:func:`basil.core.slo.pod_report_dict`) as a point of the series."""
    groups = [{k: g.get(k) for k in GROUP_FIELDS} for g in slo.get("groups", [])]
    measured = [g["measured_damage"] for g in groups if g["measured_damage"] is not None]
    session.add(
        SloHistoryRow(
            pod=pod,
            at=at,
            round_id=round_id,
            damage_before=float(slo["damage_before"]),
            damage_after=float(slo["damage_after"]),
            measured_damage=float(sum(measured)) if measured else None,
            groups=groups,
        )
    )
    session.flush()


def points(
    session: Session,
    pod: str,
    since: datetime | None = None,
    until: datetime | None = None,
    limit: int = 5000,
) -> list[SloPoint]:
    """The pod's points between *since* and *until* (inclusive), oldest first; the newest *limit*."""
    query = select(SloHistoryRow).where(SloHistoryRow.pod == pod)
    if since is not None:
        query = query.where(SloHistoryRow.at >= since)
    if until is not None:
        query = query.where(SloHistoryRow.at <= until)
    rows = list(
        session.execute(
            query.order_by(SloHistoryRow.at.desc(), SloHistoryRow.id.desc()).limit(limit)
        ).scalars()
    )
    return [
        SloPoint(r.pod, r.at, r.round_id, r.damage_before, r.damage_after, r.measured_damage, list(r.groups))
        for r in reversed(rows)
    ]


def prune_slo_history(session: Session, before: datetime) -> int:
    """Delete points older than *before*."""
    result = session.execute(delete(SloHistoryRow).where(SloHistoryRow.at < before))
    return int(result.rowcount)  # type: ignore[attr-defined]
