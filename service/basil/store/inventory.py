"""Inventory snapshots: each vCenter's inventory as a JSON document, numbered per vCenter, latest first."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import delete, func, select
from sqlalchemy.orm import Session

from basil.store.models import InventorySnapshot


@dataclass(frozen=True)
class Snapshot:
    vcenter: str
    version: int
    taken_at: datetime
    document: dict[str, Any]


def save_inventory(
    session: Session, vcenter: str, document: dict[str, Any], taken_at: datetime | None = None
) -> int:
    """Store a new snapshot of *vcenter*'s inventory; returns its version (1, 2, ... per vCenter)."""
    # One collector per vCenter writes snapshots; were two to race, the unique (vcenter, version) refuses one.
    latest = session.execute(
        select(func.max(InventorySnapshot.version)).where(InventorySnapshot.vcenter == vcenter)
    ).scalar()
    version = (latest or 0) + 1
    session.add(
        InventorySnapshot(
            vcenter=vcenter, version=version, taken_at=taken_at or datetime.now(UTC), document=document
        )
    )
    session.flush()
    return version


def latest_inventory(session: Session, vcenter: str) -> Snapshot | None:
    row = session.execute(
        select(InventorySnapshot)
        .where(InventorySnapshot.vcenter == vcenter)
        .order_by(InventorySnapshot.version.desc())
        .limit(1)
    ).scalar_one_or_none()
    return None if row is None else Snapshot(row.vcenter, row.version, row.taken_at, row.document)


def inventory_versions(session: Session, vcenter: str) -> list[tuple[int, datetime]]:
    """(version, taken_at) of every kept snapshot of *vcenter*, newest first."""
    rows = session.execute(
        select(InventorySnapshot.version, InventorySnapshot.taken_at)
        .where(InventorySnapshot.vcenter == vcenter)
        .order_by(InventorySnapshot.version.desc())
    )
    return [(version, taken_at) for version, taken_at in rows]


def prune_inventory(session: Session, before: datetime) -> int:
    """Delete snapshots taken before *before*, always keeping each vCenter's latest."""
    latest = (
        select(InventorySnapshot.vcenter, func.max(InventorySnapshot.version).label("v"))
        .group_by(InventorySnapshot.vcenter)
        .subquery()
    )
    keep = select(InventorySnapshot.id).join(
        latest, (InventorySnapshot.vcenter == latest.c.vcenter) & (InventorySnapshot.version == latest.c.v)
    )
    result = session.execute(
        delete(InventorySnapshot).where(
            InventorySnapshot.taken_at < before, InventorySnapshot.id.not_in(keep)
        )
    )
    return int(result.rowcount)  # type: ignore[attr-defined]
