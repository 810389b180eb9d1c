"""Fitted models with their history: per-disk workload models (BASIL §3) and per-datastore device models (§4).

Saving a model keeps the previous ones as history and marks the new one current, so the API can show
how a disk's load or a datastore's P has drifted, and the balancer reads only the current ones.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import delete, select, update
from sqlalchemy.orm import Session

from basil.store.models import DatastoreModelRow, Disk, DiskModelRow, PlanMoveRow
from basil.store.samples import DiskRef, ensure_disk_ids


@dataclass(frozen=True)
class DiskModel:
    """A disk's workload model: 90th-percentile parameters, the load metric L (eq. 1's numerator), quality."""

    disk: DiskRef
    fitted_at: datetime
    window_start: datetime
    window_end: datetime
    oio: float
    io_size_kb: float
    read_pct: float
    random_pct: float
    load: float
    samples_used: int
    flags: tuple[str, ...] = ()
    quality: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class DatastoreModel:
    """A datastore's device model: P = 1/slope of the read ⟨OIO, latency⟩ fit, with the fit's quality."""

    vcenter: str
    datastore: str
    fitted_at: datetime
    window_start: datetime
    window_end: datetime
    p: float | None
    slope: float | None
    intercept: float | None
    r_squared: float | None
    points_used: int
    points_filtered: int
    quality: str
    details: dict[str, Any] = field(default_factory=dict)


def save_disk_models(session: Session, models: Sequence[DiskModel]) -> int:
    """Record new workload models; each becomes its disk's current model. Returns how many were saved."""
    if not models:
        return 0
    ids = ensure_disk_ids(session, [m.disk for m in models])
    disk_ids = [ids[m.disk] for m in models]
    for start in range(0, len(disk_ids), 500):
        chunk = disk_ids[start : start + 500]
        session.execute(
            update(DiskModelRow)
            .where(DiskModelRow.disk_id.in_(chunk), DiskModelRow.is_current)
            .values(is_current=False)
        )
    session.execute(
        DiskModelRow.__table__.insert(),  # type: ignore[attr-defined]
        [
            {
                "disk_id": ids[m.disk], "fitted_at": m.fitted_at, "window_start": m.window_start,
                "window_end": m.window_end, "oio": m.oio, "io_size_kb": m.io_size_kb, "read_pct": m.read_pct,
                "random_pct": m.random_pct, "load": m.load, "samples_used": m.samples_used,
                "flags": list(m.flags), "quality": m.quality, "is_current": True,
            }
            for m in models
        ],
    )  # fmt: skip
    return len(models)


def _disk_model(row: DiskModelRow, disk: Disk) -> DiskModel:
    return DiskModel(
        DiskRef(disk.vcenter, disk.vm, disk.instance), row.fitted_at, row.window_start, row.window_end,
        row.oio, row.io_size_kb, row.read_pct, row.random_pct, row.load, row.samples_used, tuple(row.flags),
        row.quality,
    )  # fmt: skip


def current_disk_models(session: Session, vcenter: str | None = None) -> dict[DiskRef, DiskModel]:
    query = (
        select(DiskModelRow, Disk).join(Disk, Disk.id == DiskModelRow.disk_id).where(DiskModelRow.is_current)
    )
    if vcenter is not None:
        query = query.where(Disk.vcenter == vcenter)
    result = {}
    for row, disk in session.execute(query):
        model = _disk_model(row, disk)
        result[model.disk] = model
    return result


def disk_model_history(session: Session, disk: DiskRef, limit: int = 100) -> list[DiskModel]:
    """A disk's models, newest first."""
    query = (
        select(DiskModelRow, Disk)
        .join(Disk, Disk.id == DiskModelRow.disk_id)
        .where(Disk.vcenter == disk.vcenter, Disk.vm == disk.vm, Disk.instance == disk.instance)
        .order_by(DiskModelRow.fitted_at.desc(), DiskModelRow.id.desc())
        .limit(limit)
    )
    return [_disk_model(row, d) for row, d in session.execute(query)]


#: Keys of a device model's details that are the next fit's memory (the disks it was fitted with,
#: relocations it learned): only the current model needs them, so history rows drop them.
MEMORY_KEYS = frozenset({"disks", "moves_out"})


def save_datastore_models(session: Session, models: Sequence[DatastoreModel]) -> int:
    """Record new device models; each becomes its datastore's current model."""
    for m in models:
        previous = session.execute(
            select(DatastoreModelRow).where(
                DatastoreModelRow.vcenter == m.vcenter,
                DatastoreModelRow.datastore == m.datastore,
                DatastoreModelRow.is_current,
            )
        ).scalars()
        for row in previous:
            row.is_current = False
            if MEMORY_KEYS & set(row.details or {}):
                row.details = {k: v for k, v in row.details.items() if k not in MEMORY_KEYS}
        session.add(
            DatastoreModelRow(
                vcenter=m.vcenter, datastore=m.datastore, fitted_at=m.fitted_at, window_start=m.window_start,
                window_end=m.window_end, p=m.p, slope=m.slope, intercept=m.intercept, r_squared=m.r_squared,
                points_used=m.points_used, points_filtered=m.points_filtered, quality=m.quality,
                details=m.details, is_current=True,
            )
        )  # fmt: skip
    session.flush()
    return len(models)


def _datastore_model(row: DatastoreModelRow) -> DatastoreModel:
    return DatastoreModel(
        row.vcenter, row.datastore, row.fitted_at, row.window_start, row.window_end, row.p, row.slope,
        row.intercept, row.r_squared, row.points_used, row.points_filtered, row.quality, row.details,
    )  # fmt: skip


def current_datastore_models(
    session: Session, vcenter: str | None = None
) -> dict[tuple[str, str], DatastoreModel]:
    query = select(DatastoreModelRow).where(DatastoreModelRow.is_current)
    if vcenter is not None:
        query = query.where(DatastoreModelRow.vcenter == vcenter)
    return {(r.vcenter, r.datastore): _datastore_model(r) for r in session.execute(query).scalars()}


def datastore_model_history(
    session: Session, vcenter: str, datastore: str, limit: int = 100
) -> list[DatastoreModel]:
    query = (
        select(DatastoreModelRow)
        .where(DatastoreModelRow.vcenter == vcenter, DatastoreModelRow.datastore == datastore)
        .order_by(DatastoreModelRow.fitted_at.desc(), DatastoreModelRow.id.desc())
        .limit(limit)
    )
    return [_datastore_model(r) for r in session.execute(query).scalars()]


def prune_models(session: Session, before: datetime) -> int:
    """Delete model history fitted before *before*; current models are always kept."""
    a = session.execute(
        delete(DiskModelRow).where(DiskModelRow.fitted_at < before, DiskModelRow.is_current.is_(False))
    )
    b = session.execute(
        delete(DatastoreModelRow).where(
            DatastoreModelRow.fitted_at < before, DatastoreModelRow.is_current.is_(False)
        )
    )
    return int(a.rowcount) + int(b.rowcount)  # type: ignore[attr-defined]


def own_relocations(session: Session, vcenter: str) -> dict[str, tuple[str, str, str]]:
    """Basil's own Storage vMotions by vCenter task moid -> (disk instance, source, target datastore),
    for the device model: it leaves their copy out of both fits and knows where the disk was before."""
    query = select(
        PlanMoveRow.task_id, PlanMoveRow.instance, PlanMoveRow.source_datastore, PlanMoveRow.target_datastore
    ).where(PlanMoveRow.vcenter == vcenter, PlanMoveRow.task_id.is_not(None))
    return {str(task): (inst, src, dst) for task, inst, src, dst in session.execute(query) if task}
