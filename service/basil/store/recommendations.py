"""Recommendations: the moves a balancing round proposes for a pod, with reason codes and predicted effect.

Each round replaces the pod's open recommendations (they become ``superseded``); a recommendation
taken into a plan becomes ``planned``, one the administrator rejects ``dismissed``. A round keeps
the ``basis`` it was computed from (placement, models, plans then running); once a move changes that
placement its open recommendations get a ``stale_reason`` and can no longer be planned.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import delete, func, or_, select, update
from sqlalchemy.orm import Session

from basil.errors import ConflictError, NotFoundError
from basil.store.models import PlanMoveRow, RecommendationRow

# Storage DRS's reason codes, which administrators know, plus Basil's own where they have none.
REASONS = ("balanceDatastoreIOLoad", "balanceDatastoreSpaceUsage", "datastoreMaint", "initialPlacement")


@dataclass(frozen=True)
class RecommendationSpec:
    vcenter: str
    vm: str
    disk_key: int
    source_datastore: str
    target_datastore: str
    size_bytes: int
    reason: str = "balanceDatastoreIOLoad"
    vm_name: str = ""
    instance: str = ""
    predicted: dict[str, Any] = field(default_factory=dict)
    swap_group: int | None = None  # shared by the disks of both halves of one swap


@dataclass(frozen=True)
class Recommendation:
    id: int
    round_id: str
    pod: str
    created_at: datetime
    status: str
    plan_id: int | None
    spec: RecommendationSpec
    basis: dict[str, Any] | None = None
    stale_reason: str | None = None


def _rec(row: RecommendationRow) -> Recommendation:
    spec = RecommendationSpec(
        row.vcenter, row.vm, row.disk_key, row.source_datastore, row.target_datastore, row.size_bytes,
        row.reason, row.vm_name, row.instance, row.predicted, row.swap_group,
    )  # fmt: skip
    return Recommendation(
        row.id, row.round_id, row.pod, row.created_at, row.status, row.plan_id, spec, row.basis,
        row.stale_reason,
    )  # fmt: skip


def save_round(
    session: Session,
    pod: str,
    specs: Sequence[RecommendationSpec],
    now: datetime | None = None,
    basis: dict[str, Any] | None = None,
) -> list[Recommendation]:
    """Record one balancing round for *pod*: its previous open recommendations become superseded."""
    at = now or datetime.now(UTC)
    session.execute(
        update(RecommendationRow)
        .where(RecommendationRow.pod == pod, RecommendationRow.status == "open")
        .values(status="superseded")
    )
    round_id = str(uuid.uuid4())
    rows = [
        RecommendationRow(
            round_id=round_id, pod=pod, vcenter=s.vcenter, created_at=at, reason=s.reason, vm=s.vm,
            vm_name=s.vm_name, disk_key=s.disk_key, instance=s.instance, size_bytes=s.size_bytes,
            source_datastore=s.source_datastore, target_datastore=s.target_datastore, predicted=s.predicted,
            status="open", basis=basis, swap_group=s.swap_group,
        )
        for s in specs
    ]  # fmt: skip
    session.add_all(rows)
    session.flush()
    return [_rec(r) for r in rows]


def open_recommendations(session: Session, pod: str | None = None) -> list[Recommendation]:
    query = select(RecommendationRow).where(RecommendationRow.status == "open").order_by(RecommendationRow.id)
    if pod is not None:
        query = query.where(RecommendationRow.pod == pod)
    return [_rec(r) for r in session.execute(query).scalars()]


def round_recommendations(session: Session, round_id: str) -> list[Recommendation]:
    """Every recommendation of one round, whatever its status, in id order."""
    query = (
        select(RecommendationRow).where(RecommendationRow.round_id == round_id).order_by(RecommendationRow.id)
    )
    return [_rec(r) for r in session.execute(query).scalars()]


def mark_stale(session: Session, pod: str, reason: str, computed_before: datetime) -> int:
    """Give the pod's open recommendations computed before *computed_before* a stale reason (the
    first one kept); returns how many became stale."""
    result = session.execute(
        update(RecommendationRow)
        .where(
            RecommendationRow.pod == pod,
            RecommendationRow.status == "open",
            RecommendationRow.stale_reason.is_(None),
            RecommendationRow.created_at <= computed_before,
        )
        .values(stale_reason=reason)
    )
    return int(result.rowcount)  # type: ignore[attr-defined]


def moves_finished_since(
    session: Session, vcenter: str, datastores: Sequence[str], since: datetime
) -> list[tuple[int, int, datetime]]:
    """Moves that succeeded after *since* from or to one of *datastores*: (plan id, how many, the last
    one's end) per plan, the plan whose last move ended last at the end."""
    members = list(datastores)
    rows = session.execute(
        select(PlanMoveRow.plan_id, func.count(), func.max(PlanMoveRow.finished_at))
        .where(
            PlanMoveRow.vcenter == vcenter,
            PlanMoveRow.state == "succeeded",
            PlanMoveRow.finished_at > since,
            or_(PlanMoveRow.source_datastore.in_(members), PlanMoveRow.target_datastore.in_(members)),
        )
        .group_by(PlanMoveRow.plan_id)
    ).all()
    found = [(int(plan), int(n), last) for plan, n, last in rows if last is not None]
    return sorted(found, key=lambda x: (x[2], x[0]))


def get_recommendation(session: Session, rec_id: int) -> Recommendation:
    row = session.get(RecommendationRow, rec_id)
    if row is None:
        raise NotFoundError(f"recommendation {rec_id} does not exist")
    return _rec(row)


def _set_status(session: Session, ids: Sequence[int], status: str, plan_id: int | None = None) -> None:
    rows = list(
        session.execute(
            select(RecommendationRow).where(RecommendationRow.id.in_(list(ids))).with_for_update()
        ).scalars()
    )
    missing = sorted(set(ids) - {r.id for r in rows})
    if missing:
        raise NotFoundError(f"recommendations {missing} do not exist")
    closed = [r.id for r in rows if r.status != "open"]
    if closed:
        raise ConflictError(f"recommendations {closed} are no longer open")
    stale = next((r for r in rows if r.stale_reason), None)
    if stale is not None and status == "planned":
        raise ConflictError(f"recommendation {stale.round_id} is stale: {stale.stale_reason}")
    for row in rows:
        row.status = status
        row.plan_id = plan_id
    session.flush()


def mark_planned(session: Session, ids: Sequence[int], plan_id: int) -> None:
    """open → planned (taken into plan *plan_id*); ConflictError if one is not open any more."""
    _set_status(session, ids, "planned", plan_id)


def dismiss(session: Session, ids: Sequence[int]) -> None:
    """open → dismissed by the administrator."""
    _set_status(session, ids, "dismissed")


def prune_recommendations(session: Session, before: datetime) -> int:
    """Delete recommendations older than *before* that are not open."""
    result = session.execute(
        delete(RecommendationRow).where(
            RecommendationRow.created_at < before, RecommendationRow.status != "open"
        )
    )
    return int(result.rowcount)  # type: ignore[attr-defined]
