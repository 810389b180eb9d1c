"""The audit log: who did what, when, from where, and how it ended. Append-only except for retention."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from basil.store.models import AuditRow

ActorKind = Literal["token", "vcenter", "cli", "system"]
AuditOutcome = Literal["ok", "denied", "invalid", "failed"]


@dataclass(frozen=True)
class AuditEntry:
    """One audited action: ``actor`` is a token name, vCenter user or job; ``source`` an address or 'cli'."""

    actor: str
    actor_kind: str
    action: str
    target: str
    source: str
    outcome: str
    message: str = ""
    details: dict[str, Any] = field(default_factory=dict)
    at: datetime | None = None
    id: int | None = None


def record(session: Session, entry: AuditEntry) -> int:
    """Append *entry* (stamped now unless it carries a time); returns its id. Never give it a secret."""
    row = AuditRow(
        at=entry.at or datetime.now(UTC), actor=entry.actor, actor_kind=entry.actor_kind, action=entry.action,
        target=entry.target, source=entry.source, outcome=entry.outcome, message=entry.message,
        details=entry.details,
    )  # fmt: skip
    session.add(row)
    session.flush()
    return row.id


#: Who the service's own changes are recorded as (a job, the plan executor, the SRP loop).
SYSTEM_ACTOR = "basil"


def record_system(
    session: Session,
    action: str,
    target: str,
    *,
    outcome: AuditOutcome,
    message: str,
    details: dict[str, Any],
    at: datetime | None = None,
) -> int:
    """Append a change the service made on its own (a Storage vMotion, a setting, a plan's end)."""
    return record(
        session,
        AuditEntry(
            actor=SYSTEM_ACTOR, actor_kind="system", action=action, target=target, source="system",
            outcome=outcome, message=message[:2000], details=details, at=at,
        ),
    )  # fmt: skip


def query(
    session: Session,
    *,
    actor: str | None = None,
    action: str | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
    limit: int = 100,
) -> list[AuditEntry]:
    """Audit entries, newest first, filtered by actor, action (or action prefix ending in '.') and time."""
    stmt = select(AuditRow).order_by(AuditRow.at.desc(), AuditRow.id.desc()).limit(limit)
    if actor is not None:
        stmt = stmt.where(AuditRow.actor == actor)
    if action is not None:
        stmt = stmt.where(
            AuditRow.action.startswith(action) if action.endswith(".") else AuditRow.action == action
        )
    if since is not None:
        stmt = stmt.where(AuditRow.at >= since)
    if until is not None:
        stmt = stmt.where(AuditRow.at < until)
    return [
        AuditEntry(
            r.actor, r.actor_kind, r.action, r.target, r.source, r.outcome, r.message, r.details, r.at, r.id
        )
        for r in session.execute(stmt).scalars()
    ]


def prune_audit(session: Session, before: datetime) -> int:
    result = session.execute(delete(AuditRow).where(AuditRow.at < before))
    return int(result.rowcount)  # type: ignore[attr-defined]
