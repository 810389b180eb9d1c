"""Prediction checks: what an applied plan predicted for its pod, and what was measured an hour later.

Times of the measurement are vCenter's (seconds since the epoch, as sample timestamps): the lab, and
a vCenter whose clock is off, do not run on the service's wall clock. A check is written when the
plan ends (``measured`` null) and completed once the samples up to ``due_ts`` are stored.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from basil.store.models import (
    LEVEL_5MIN,
    Disk,
    DiskSample,
    HostDatastore,
    HostDatastoreRollup,
    HostDatastoreSample,
    PredictionCheckRow,
)


@dataclass(frozen=True)
class PredictionCheck:
    plan_id: int
    pod: str
    vcenter: str
    finished_ts: int
    due_ts: int
    predicted: dict[str, Any]
    measured: dict[str, Any] | None
    error: dict[str, Any] | None
    measured_at: datetime | None


def _check(row: PredictionCheckRow) -> PredictionCheck:
    return PredictionCheck(
        row.plan_id, row.pod, row.vcenter, row.finished_ts, row.due_ts, row.predicted, row.measured,
        row.error, row.measured_at,
    )  # fmt: skip


def save_check(
    session: Session,
    plan_id: int,
    *,
    pod: str,
    vcenter: str,
    finished_ts: int,
    due_ts: int,
    predicted: dict[str, Any],
) -> PredictionCheck:
    """Record (or replace, for a plan resumed and ended again) the prediction of an applied plan."""
    row = session.get(PredictionCheckRow, plan_id)
    if row is None:
        row = PredictionCheckRow(plan_id=plan_id)
        session.add(row)
    row.pod, row.vcenter, row.finished_ts, row.due_ts, row.predicted = (
        pod,
        vcenter,
        finished_ts,
        due_ts,
        predicted,
    )
    row.measured, row.error, row.measured_at = None, None, None
    session.flush()
    return _check(row)


def due_checks(session: Session, vcenter: str, until_ts: int) -> list[PredictionCheck]:
    """Checks of *vcenter* not measured yet whose measurement time is at or before *until_ts*."""
    rows = session.execute(
        select(PredictionCheckRow)
        .where(
            PredictionCheckRow.vcenter == vcenter,
            PredictionCheckRow.measured_at.is_(None),
            PredictionCheckRow.due_ts <= until_ts,
        )
        .order_by(PredictionCheckRow.due_ts)
    ).scalars()
    return [_check(r) for r in rows]


def record_measurement(
    session: Session, plan_id: int, measured: dict[str, Any], error: dict[str, Any], at: datetime
) -> PredictionCheck:
    row = session.get(PredictionCheckRow, plan_id)
    assert row is not None, plan_id
    row.measured, row.error, row.measured_at = measured, error, at
    session.flush()
    return _check(row)


def pod_checks(session: Session, pod: str, limit: int = 50) -> list[PredictionCheck]:
    """A pod's checks, newest plan end first."""
    rows = session.execute(
        select(PredictionCheckRow)
        .where(PredictionCheckRow.pod == pod)
        .order_by(PredictionCheckRow.finished_ts.desc(), PredictionCheckRow.plan_id.desc())
        .limit(limit)
    ).scalars()
    return [_check(r) for r in rows]


def get_check(session: Session, plan_id: int) -> PredictionCheck | None:
    row = session.get(PredictionCheckRow, plan_id)
    return _check(row) if row is not None else None


@dataclass(frozen=True)
class DatastoreFigures:
    """A datastore's measured means over a window, all hosts added: IOPS, IOPS-weighted latencies, OIO."""

    read_iops: float
    write_iops: float
    read_latency_ms: float | None
    write_latency_ms: float | None
    read_oio: float
    write_oio: float
    samples: int

    @property
    def iops(self) -> float:
        return self.read_iops + self.write_iops

    @property
    def latency_ms(self) -> float | None:
        """IOPS-weighted over reads and writes."""
        if self.iops <= 0:
            return None
        return (
            (self.read_latency_ms or 0.0) * self.read_iops + (self.write_latency_ms or 0.0) * self.write_iops
        ) / (self.iops)


def datastore_figures(
    session: Session, vcenter: str, datastores: Sequence[str], since: int, until: int
) -> dict[str, DatastoreFigures]:
    """Each datastore's figures over (since, until]: from the raw 20 s samples, or the 5-minute rollups
    when the raw ones are gone."""
    hd = HostDatastore
    query = select(hd.id, hd.datastore).where(hd.vcenter == vcenter, hd.datastore.in_(list(datastores)))
    ids: dict[int, str] = {int(hd_id): str(ds) for hd_id, ds in session.execute(query)}
    if not ids:
        return {}
    raw = HostDatastoreSample
    rows = session.execute(
        select(
            raw.hd_id,
            func.count(),
            func.sum(raw.read_iops),
            func.sum(raw.write_iops),
            func.sum(raw.read_latency_ms * raw.read_iops),
            func.sum(raw.write_latency_ms * raw.write_iops),
            func.sum(raw.read_oio),
            func.sum(raw.write_oio),
        )
        .where(raw.hd_id.in_(list(ids)), raw.ts > since, raw.ts <= until)
        .group_by(raw.hd_id)
    ).all()
    if not rows:
        roll = HostDatastoreRollup
        rows = session.execute(
            select(
                roll.hd_id,
                func.sum(roll.n),
                func.sum(roll.sum_read_iops),
                func.sum(roll.sum_write_iops),
                func.sum(roll.sum_read_latency_iops),
                func.sum(roll.sum_write_latency_iops),
                func.sum(roll.sum_read_oio),
                func.sum(roll.sum_write_oio),
            )
            .where(
                roll.level == LEVEL_5MIN,
                roll.hd_id.in_(list(ids)),
                roll.bucket >= since,
                roll.bucket < until,
            )
            .group_by(roll.hd_id)
        ).all()
    # Per host: means over its samples; a datastore's figure adds its hosts' means.
    acc: dict[str, list[float]] = {}
    for hd_id, n, r_iops, w_iops, r_lat, w_lat, r_oio, w_oio in rows:
        if not n:
            continue
        a = acc.setdefault(ids[hd_id], [0.0] * 7)
        for i, value in enumerate((r_iops, w_iops, r_lat, w_lat, r_oio, w_oio)):
            a[i] += float(value or 0.0) / n
        a[6] = max(a[6], float(n))
    return {
        ds: DatastoreFigures(
            read_iops=a[0],
            write_iops=a[1],
            read_latency_ms=a[2] / a[0] if a[0] > 0 else None,
            write_latency_ms=a[3] / a[1] if a[1] > 0 else None,
            read_oio=a[4],
            write_oio=a[5],
            samples=int(a[6]),
        )
        for ds, a in acc.items()
    }


@dataclass(frozen=True)
class DiskLoadFigures:
    """A disk's means over a window: outstanding reads and writes, and read and write IOPS."""

    read_oio: float
    write_oio: float
    read_iops: float
    write_iops: float

    @property
    def oio(self) -> float:
        return self.read_oio + self.write_oio

    @property
    def read_share(self) -> float:
        """The share of its IOs that are reads (1 when it did none)."""
        total = self.read_iops + self.write_iops
        return self.read_iops / total if total > 0 else 1.0


def disk_oio(
    session: Session, vcenter: str, since: int, until: int
) -> dict[tuple[str, str], DiskLoadFigures]:
    """Each disk's outstanding IOs and IOPS over (since, until], by (VM, instance)."""
    raw = DiskSample
    rows = session.execute(
        select(
            Disk.vm,
            Disk.instance,
            func.avg(raw.read_oio),
            func.avg(raw.write_oio),
            func.avg(raw.read_iops),
            func.avg(raw.write_iops),
        )
        .join(Disk, Disk.id == raw.disk_id)
        .where(Disk.vcenter == vcenter, raw.ts > since, raw.ts <= until)
        .group_by(Disk.vm, Disk.instance)
    ).all()
    return {
        (vm, instance): DiskLoadFigures(
            float(ro or 0.0), float(wo or 0.0), float(ri or 0.0), float(wi or 0.0)
        )
        for vm, instance, ro, wo, ri, wi in rows
    }


@dataclass(frozen=True)
class DiskFigures:
    """A disk's means over a window: IOPS, IOPS-weighted latencies and outstanding IOs per class."""

    read_iops: float
    write_iops: float
    read_latency_ms: float
    write_latency_ms: float
    read_oio: float
    write_oio: float


def disk_figures(
    session: Session, vcenter: str, since: int, until: int
) -> dict[tuple[str, str], DiskFigures]:
    """Each disk's figures over (since, until], by (VM, instance): the what-if's inputs."""
    raw = DiskSample
    rows = session.execute(
        select(
            Disk.vm,
            Disk.instance,
            func.avg(raw.read_iops),
            func.avg(raw.write_iops),
            func.sum(raw.read_latency_ms * raw.read_iops),
            func.sum(raw.read_iops),
            func.sum(raw.write_latency_ms * raw.write_iops),
            func.sum(raw.write_iops),
            func.avg(raw.read_oio),
            func.avg(raw.write_oio),
        )
        .join(Disk, Disk.id == raw.disk_id)
        .where(Disk.vcenter == vcenter, raw.ts > since, raw.ts <= until)
        .group_by(Disk.vm, Disk.instance)
    ).all()
    out: dict[tuple[str, str], DiskFigures] = {}
    for vm, instance, ri, wi, rl, rsum, wl, wsum, ro, wo in rows:
        out[(vm, instance)] = DiskFigures(
            read_iops=float(ri or 0.0),
            write_iops=float(wi or 0.0),
            read_latency_ms=float(rl or 0.0) / float(rsum) if rsum else 0.0,
            write_latency_ms=float(wl or 0.0) / float(wsum) if wsum else 0.0,
            read_oio=float(ro or 0.0),
            write_oio=float(wo or 0.0),
        )
    return out


def datastore_checks(
    session: Session, vcenter: str, datastore: str, limit: int = 100
) -> list[PredictionCheck]:
    """The checks of *vcenter* whose prediction covers *datastore*, oldest plan end first."""
    rows = session.execute(
        select(PredictionCheckRow)
        .where(PredictionCheckRow.vcenter == vcenter)
        .order_by(PredictionCheckRow.finished_ts.desc(), PredictionCheckRow.plan_id.desc())
        .limit(max(limit * 10, 100))
    ).scalars()
    found = [_check(r) for r in rows if datastore in (r.predicted or {}).get("datastores", {})]
    return list(reversed(found[:limit]))


def vcenter_measured_checks(session: Session, vcenter: str, limit: int = 200) -> list[PredictionCheck]:
    """The measured checks of *vcenter*, newest measurement time first."""
    rows = session.execute(
        select(PredictionCheckRow)
        .where(PredictionCheckRow.vcenter == vcenter, PredictionCheckRow.measured_at.is_not(None))
        .order_by(PredictionCheckRow.due_ts.desc(), PredictionCheckRow.plan_id.desc())
        .limit(limit)
    ).scalars()
    return [_check(r) for r in rows]
