"""Settings Basil has issued to vCenter: per-disk IO allocations and per-datastore SIOC, with outcome.

The SRP loop compares what it wants with what was last applied (hysteresis) before issuing a change,
and the API shows both. One row per disk / datastore: the latest issue wins.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.orm import Session

from basil.store.models import AppliedDatastoreSettingRow, AppliedDiskSettingRow


@dataclass(frozen=True)
class DiskSetting:
    """A disk's storageIOAllocation as issued: reservation, limit (IOPS, -1 = unlimited), shares."""

    vcenter: str
    vm: str
    disk_key: int
    instance: str
    pool: str
    reservation: int
    limit: int
    shares: int
    shares_level: str
    issued_at: datetime
    task_id: str | None = None
    outcome: str = "ok"
    message: str = ""


@dataclass(frozen=True)
class DatastoreSetting:
    vcenter: str
    datastore: str
    sioc_enabled: bool
    congestion_threshold_ms: float
    issued_at: datetime
    task_id: str | None = None
    outcome: str = "ok"
    message: str = ""


def record_disk_settings(session: Session, settings: Sequence[DiskSetting]) -> None:
    """Record issued disk settings (replacing what was recorded for each disk)."""
    for s in settings:
        session.merge(
            AppliedDiskSettingRow(
                vcenter=s.vcenter, vm=s.vm, disk_key=s.disk_key, instance=s.instance, pool=s.pool,
                reservation=s.reservation, limit=s.limit, shares=s.shares, shares_level=s.shares_level,
                issued_at=s.issued_at, task_id=s.task_id, outcome=s.outcome, message=s.message,
            )
        )  # fmt: skip
    session.flush()


def disk_settings(session: Session, vcenter: str | None = None) -> dict[tuple[str, str, int], DiskSetting]:
    """The last issued setting of every disk, keyed by (vcenter, vm, disk key)."""
    query = select(AppliedDiskSettingRow)
    if vcenter is not None:
        query = query.where(AppliedDiskSettingRow.vcenter == vcenter)
    return {
        (r.vcenter, r.vm, r.disk_key): DiskSetting(
            r.vcenter, r.vm, r.disk_key, r.instance, r.pool, r.reservation, r.limit, r.shares, r.shares_level,
            r.issued_at, r.task_id, r.outcome, r.message,
        )
        for r in session.execute(query).scalars()
    }  # fmt: skip


def record_datastore_settings(session: Session, settings: Sequence[DatastoreSetting]) -> None:
    for s in settings:
        session.merge(
            AppliedDatastoreSettingRow(
                vcenter=s.vcenter, datastore=s.datastore, sioc_enabled=s.sioc_enabled,
                congestion_threshold_ms=s.congestion_threshold_ms, issued_at=s.issued_at, task_id=s.task_id,
                outcome=s.outcome, message=s.message,
            )
        )  # fmt: skip
    session.flush()


def datastore_settings(
    session: Session, vcenter: str | None = None
) -> dict[tuple[str, str], DatastoreSetting]:
    query = select(AppliedDatastoreSettingRow)
    if vcenter is not None:
        query = query.where(AppliedDatastoreSettingRow.vcenter == vcenter)
    return {
        (r.vcenter, r.datastore): DatastoreSetting(
            r.vcenter, r.datastore, r.sioc_enabled, r.congestion_threshold_ms, r.issued_at, r.task_id,
            r.outcome, r.message,
        )
        for r in session.execute(query).scalars()
    }  # fmt: skip
