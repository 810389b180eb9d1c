"""Performance samples: fast inserts, 5-minute and hourly rollups, retention, and the queries models need.

Raw 20 s samples go into ``disk_samples`` / ``host_datastore_samples``. :func:`roll_up` (run by the
maintenance job) summarises every closed 5-minute bucket from raw rows and every closed hour from
5-minute rollups; each rollup row holds sums (so means and IOPS-weighted latencies can be recovered
over any span), maxima, and a quantile sketch (:mod:`basil.store.sketch`) so that percentiles over a
day need no raw samples. Everything in a rollup is additive, which makes late samples easy: a sample
that arrives for a bucket already rolled up is merged into that bucket's rollups on insert.

Concurrency: the insert path holds a shared lock on the ``rollup_state`` rows (PostgreSQL
``FOR SHARE``; SQLite serialises writers anyway) and the rollup holds an exclusive one, so a sample is
counted exactly once whether it lands before or after the bucket is rolled up.

Time is integer seconds since the epoch (UTC), as vCenter stamps the samples. Functions that need
"now" take it as an argument: pass the newest sample time (vCenter's clock), not the local clock,
so that retention and rollups follow vCenter even when the two disagree or the lab runs faster.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, fields
from datetime import UTC, datetime, timedelta
from operator import attrgetter
from typing import Any, NamedTuple, cast

import numpy as np
from sqlalchemy import Select, Table, and_, case, delete, func, or_, select, tuple_, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from basil.store.models import (
    LEVEL_5MIN,
    LEVEL_HOUR,
    Base,
    Disk,
    DiskRollup,
    DiskSample,
    HostDatastore,
    HostDatastoreRollup,
    HostDatastoreSample,
    RollupState,
)
from basil.store.sketch import (
    DISK_SKETCH,
    HOST_DATASTORE_SKETCH,
    FloatArray,
    IntArray,
    SketchSpec,
    grouped_sketches,
    merge_grouped,
    quantiles_by_group,
)

LEVELS = (LEVEL_5MIN, LEVEL_HOUR)
# A bucket is rolled up this long after it closes, so the collection cycle that fills it has landed.
ROLLUP_GRACE_S = 60
# Raw rows read per step of a catch-up roll-up (bounds memory after a long outage).
_CHUNK_S = 900
_SEEN_REFRESH = timedelta(minutes=10)


def epoch(moment: datetime) -> int:
    """Seconds since the epoch of an aware datetime (the time unit of every sample table)."""
    if moment.tzinfo is None:
        raise ValueError("naive datetime; use an aware UTC datetime")
    return int(moment.timestamp())


def from_epoch(ts: int) -> datetime:
    return datetime.fromtimestamp(ts, tz=UTC)


# --- what the collector hands in ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class DiskSampleIn:
    """One real-time sample of one virtual disk: the ``virtualDisk.*`` counters at vCenter time ``ts``."""

    vcenter: str
    vm: str
    instance: str
    ts: int
    read_iops: float
    write_iops: float
    read_oio: float
    write_oio: float
    read_latency_ms: float
    write_latency_ms: float
    read_io_size_kb: float
    write_io_size_kb: float
    small_seeks: float | None = None
    medium_seeks: float | None = None
    large_seeks: float | None = None
    read_latency_us: float | None = None  # raw samples only: rollups keep the ms figure


@dataclass(frozen=True, slots=True)
class HostDatastoreSampleIn:
    """One real-time sample of one datastore seen from one host (host-level ``datastore.*`` counters)."""

    vcenter: str
    host: str
    datastore: str
    ts: int
    read_iops: float
    write_iops: float
    read_oio: float
    write_oio: float
    read_latency_ms: float
    write_latency_ms: float
    read_kbps: float
    write_kbps: float
    max_queue_depth: float | None = None


class DiskRef(NamedTuple):
    vcenter: str
    vm: str
    instance: str


class HostDatastoreRef(NamedTuple):
    vcenter: str
    host: str
    datastore: str


@dataclass(frozen=True)
class InsertReport:
    """What one insert did: rows offered, rows that were already stored, late rows merged into rollups."""

    offered: int
    duplicates: int
    late: int


# --- how each kind of sample is summarised -----------------------------------------------------------


@dataclass(frozen=True)
class _Kind:
    name: str
    raw: type[Base]
    rollup: type[Base]
    series: type[Base]
    series_column: str
    values: tuple[str, ...]
    spec: SketchSpec
    # raw value columns -> (per-sample contributions to sum_*/max_* columns, sketch columns)
    contributions: Callable[[dict[str, FloatArray]], tuple[dict[str, FloatArray], list[FloatArray]]]

    @property
    def raw_table(self) -> Table:
        return _table(self.raw)

    @property
    def rollup_table(self) -> Table:
        return _table(self.rollup)

    @property
    def series_table(self) -> Table:
        return _table(self.series)


def _table(model: type[Base]) -> Table:
    return cast(Table, model.__table__)


def _ratio(numerator: FloatArray, denominator: FloatArray, scale: float = 1.0) -> FloatArray:
    with np.errstate(divide="ignore", invalid="ignore"):
        result: FloatArray = np.where(denominator > 0, scale * numerator / denominator, np.nan)
    return result


def _disk_contributions(v: dict[str, FloatArray]) -> tuple[dict[str, FloatArray], list[FloatArray]]:
    r, w = v["read_iops"], v["write_iops"]
    iops = r + w
    oio = v["read_oio"] + v["write_oio"]
    stats = {
        "sum_read_iops": r,
        "sum_write_iops": w,
        "sum_read_oio": v["read_oio"],
        "sum_write_oio": v["write_oio"],
        "sum_read_latency_iops": v["read_latency_ms"] * r,
        "sum_write_latency_iops": v["write_latency_ms"] * w,
        "sum_read_kbps": r * v["read_io_size_kb"],
        "sum_write_kbps": w * v["write_io_size_kb"],
        "max_oio": oio,
        "max_latency_ms": np.maximum(v["read_latency_ms"], v["write_latency_ms"]),
    }
    # BASIL §3's parameters per sample. An idle sample has no IO size or read %, and a sample without
    # seek counters no random %: they are left out of those distributions rather than counted as 0.
    seeks = v["small_seeks"] + v["medium_seeks"] + v["large_seeks"]
    sketch = [
        oio,
        _ratio(r * v["read_io_size_kb"] + w * v["write_io_size_kb"], iops),
        _ratio(r, iops, 100.0),
        _ratio(v["medium_seeks"] + v["large_seeks"], seeks, 100.0),
    ]
    return stats, sketch


def _host_datastore_contributions(v: dict[str, FloatArray]) -> tuple[dict[str, FloatArray], list[FloatArray]]:
    r, w = v["read_iops"], v["write_iops"]
    stats = {
        "sum_read_iops": r,
        "sum_write_iops": w,
        "sum_read_oio": v["read_oio"],
        "sum_write_oio": v["write_oio"],
        "sum_read_latency_iops": v["read_latency_ms"] * r,
        "sum_write_latency_iops": v["write_latency_ms"] * w,
        "sum_read_kbps": v["read_kbps"],
        "sum_write_kbps": v["write_kbps"],
        "max_read_latency_ms": v["read_latency_ms"],
        "max_queue_depth": v["max_queue_depth"],
    }
    sketch = [
        np.where(r > 0, v["read_latency_ms"], np.nan),
        _ratio(v["read_latency_ms"] * r + v["write_latency_ms"] * w, r + w),
    ]
    return stats, sketch


DISK = _Kind(
    "disk",
    DiskSample,
    DiskRollup,
    Disk,
    "disk_id",
    tuple(f.name for f in fields(DiskSampleIn))[4:],
    DISK_SKETCH,
    _disk_contributions,
)
HOST_DATASTORE = _Kind(
    "host_datastore",
    HostDatastoreSample,
    HostDatastoreRollup,
    HostDatastore,
    "hd_id",
    tuple(f.name for f in fields(HostDatastoreSampleIn))[4:],
    HOST_DATASTORE_SKETCH,
    _host_datastore_contributions,
)
_STAT_COLUMNS = {
    kind.name: [c.name for c in kind.rollup_table.columns if c.name.startswith(("sum_", "max_"))]
    for kind in (DISK, HOST_DATASTORE)
}


def aggregate(
    kind: _Kind, series: IntArray, ts: IntArray, values: dict[str, FloatArray], level: int
) -> list[dict[str, Any]]:
    """Rollup rows (as dicts) for every (series, bucket) present in the given raw samples (vectorised)."""
    if len(ts) == 0:
        return []
    buckets = ts - ts % level
    combined = (series << 32) | (buckets // level)
    unique, inverse = np.unique(combined, return_inverse=True)
    order = np.argsort(inverse, kind="stable")
    starts = np.flatnonzero(np.r_[True, np.diff(inverse[order]) != 0])
    stats, sketch_columns = kind.contributions(values)
    rows: dict[str, Any] = {
        "n": np.bincount(inverse).tolist(),
        "level": [level] * len(unique),
        kind.series_column: (unique >> 32).tolist(),
        "bucket": ((unique & 0xFFFFFFFF) * level).tolist(),
    }
    for column in _STAT_COLUMNS[kind.name]:
        data = stats[column][order]
        if column.startswith("sum_"):
            rows[column] = np.add.reduceat(np.nan_to_num(data), starts).tolist()
        else:
            reduced = np.fmax.reduceat(data, starts)
            rows[column] = [None if np.isnan(x) else float(x) for x in reduced.tolist()]
    sketches = grouped_sketches(kind.spec, inverse.astype(np.int64), sketch_columns)
    rows["sketch"] = [sketches.get(i, b"") for i in range(len(unique))]
    return [dict(zip(rows, values_, strict=True)) for values_ in zip(*rows.values(), strict=True)]


def merge_rollup_rows(kind: _Kind, rows: Sequence[dict[str, Any]], level: int) -> list[dict[str, Any]]:
    """Combine rollup rows (finer buckets, or a stored row and a late addition) into *level* buckets."""
    if not rows:
        return []
    series = np.array([r[kind.series_column] for r in rows], dtype=np.int64)
    buckets = np.array([r["bucket"] for r in rows], dtype=np.int64)
    buckets -= buckets % level
    combined = (series << 32) | (buckets // level)
    unique, inverse = np.unique(combined, return_inverse=True)
    order = np.argsort(inverse, kind="stable")
    starts = np.flatnonzero(np.r_[True, np.diff(inverse[order]) != 0])
    merged: dict[str, Any] = {
        "level": [level] * len(unique),
        kind.series_column: (unique >> 32).tolist(),
        "bucket": ((unique & 0xFFFFFFFF) * level).tolist(),
        "n": np.add.reduceat(np.array([r["n"] for r in rows], dtype=np.int64)[order], starts).tolist(),
    }
    for column in _STAT_COLUMNS[kind.name]:
        data = np.array([np.nan if r[column] is None else r[column] for r in rows], dtype=np.float64)[order]
        if column.startswith("sum_"):
            merged[column] = np.add.reduceat(data, starts).tolist()
        else:
            reduced = np.fmax.reduceat(data, starts)
            merged[column] = [None if np.isnan(x) else float(x) for x in reduced.tolist()]
    sketches = merge_grouped(inverse.astype(np.int64), [r["sketch"] for r in rows])
    merged["sketch"] = [sketches.get(i, b"") for i in range(len(unique))]
    return [dict(zip(merged, values_, strict=True)) for values_ in zip(*merged.values(), strict=True)]


# --- inserting ---------------------------------------------------------------------------------------


def _insert(session: Session, model: Any) -> Any:
    if session.get_bind().dialect.name == "postgresql":
        return postgresql.insert(model).on_conflict_do_nothing()
    return sqlite.insert(model).on_conflict_do_nothing()


def _series_ids(
    session: Session, kind: _Kind, refs: set[tuple[str, str, str]], now: datetime
) -> dict[tuple[str, str, str], int]:
    """The id of every series named in *refs*, creating the new ones; ``last_seen`` refreshed now and then."""
    table = kind.series_table
    columns = [c for c in table.columns if c.name not in ("id", "first_seen", "last_seen")]
    names = [c.name for c in columns]
    found: dict[tuple[str, str, str], int] = {}
    stale: list[int] = []
    for vcenter in {r[0] for r in refs}:
        rows = session.execute(
            select(table.c.id, *columns, table.c.last_seen).where(table.c.vcenter == vcenter)
        ).all()
        for row in rows:
            key = (row[1], row[2], row[3])
            if key in refs:
                found[key] = row[0]
                if row[4] is not None and row[4].replace(tzinfo=UTC) < now - _SEEN_REFRESH:
                    stale.append(row[0])
    missing = [r for r in refs if r not in found]
    if missing:
        session.execute(
            _insert(session, table),
            [dict(zip(names, r, strict=True)) | {"first_seen": now, "last_seen": now} for r in missing],
        )
        for vcenter in {r[0] for r in missing}:
            rows = session.execute(select(table.c.id, *columns).where(table.c.vcenter == vcenter)).all()
            found.update(
                {(row[1], row[2], row[3]): row[0] for row in rows if (row[1], row[2], row[3]) in refs}
            )
    if stale:
        session.execute(update(table).where(table.c.id.in_(stale)).values(last_seen=now))
    return found


def _watermarks(session: Session, kind: _Kind, *, exclusive: bool) -> dict[int, int]:
    query = select(RollupState.level, RollupState.watermark).where(RollupState.kind == kind.name)
    # Shared for inserts (they may run side by side), exclusive for the roll-up; a no-op on SQLite,
    # whose write transactions (BEGIN IMMEDIATE) are serialised already.
    query = query.with_for_update(read=not exclusive)
    marks: dict[int, int] = dict(session.execute(query).all())
    for level in LEVELS:
        marks.setdefault(level, 0)
    return marks


def _read_watermarks(session: Session, kind: _Kind) -> dict[int, int]:
    query = select(RollupState.level, RollupState.watermark).where(RollupState.kind == kind.name)
    marks: dict[int, int] = dict(session.execute(query).all())
    for level in LEVELS:
        marks.setdefault(level, 0)
    return marks


def _record(session: Session, kind: _Kind, samples: Sequence[Any], now: datetime | None) -> InsertReport:
    if not samples:
        return InsertReport(0, 0, 0)
    seen_at = now or datetime.now(UTC)
    ref_of = (
        attrgetter("vcenter", "vm", "instance")
        if kind is DISK
        else attrgetter("vcenter", "host", "datastore")
    )
    values_of = attrgetter(*kind.values)
    names = (kind.series_column, "ts", *kind.values)
    refs = {ref_of(x) for x in samples}
    marks = _watermarks(session, kind, exclusive=False)
    ids = _series_ids(session, kind, refs, seen_at)
    rows: dict[tuple[int, int], dict[str, Any]] = {}
    for sample in samples:
        series_id = ids[ref_of(sample)]
        ts = int(sample.ts)
        # the same sample twice in one batch counts once
        rows[(series_id, ts)] = dict(zip(names, (series_id, ts, *values_of(sample)), strict=True))
    duplicates = len(samples) - len(rows)
    oldest_open = marks[LEVEL_5MIN]
    current = [r for key, r in rows.items() if key[1] >= oldest_open]
    late = [r for key, r in rows.items() if key[1] < oldest_open]
    # Into the table, not through the ORM class: an ORM bulk insert groups the rows by which values are
    # None and sends each run of alike rows apart (hundreds of statements a cycle, three times the CPU
    # and as much longer holding the store's write lock); the table takes them in one statement.
    if current:
        session.execute(_insert(session, kind.raw_table), current)
    if late:
        late, already = _drop_stored(session, kind, late)
        duplicates += already
        if late:
            session.execute(_insert(session, kind.raw_table), late)
            _merge_late(session, kind, late, marks)
    return InsertReport(len(samples), duplicates, len(late))


def _drop_stored(
    session: Session, kind: _Kind, rows: list[dict[str, Any]]
) -> tuple[list[dict[str, Any]], int]:
    """The rows not stored yet (a re-collected sample must not be merged into a rollup twice)."""
    raw = kind.raw_table.c
    series_column = raw[kind.series_column]
    keys = [(r[kind.series_column], r["ts"]) for r in rows]
    stored: set[tuple[int, int]] = set()
    for start in range(0, len(keys), 500):
        chunk = keys[start : start + 500]
        stored.update(
            (a, b)
            for a, b in session.execute(
                select(series_column, raw.ts).where(tuple_(series_column, raw.ts).in_(chunk))
            )
        )
    fresh = [r for r, key in zip(rows, keys, strict=True) if key not in stored]
    return fresh, len(rows) - len(fresh)


def _arrays(
    kind: _Kind, rows: Sequence[Any], offset: int
) -> tuple[IntArray, IntArray, dict[str, FloatArray]]:
    """(series ids, times, value columns) from raw rows laid out as (series, ts, *values)."""
    table = np.array([tuple(r)[offset:] for r in rows], dtype=np.float64).reshape(
        len(rows), len(kind.values) + 2
    )
    series = table[:, 0].astype(np.int64)
    ts = table[:, 1].astype(np.int64)
    values = {name: table[:, 2 + i] for i, name in enumerate(kind.values)}
    return series, ts, values


def _merge_late(session: Session, kind: _Kind, late: list[dict[str, Any]], marks: dict[int, int]) -> None:
    """Add samples for buckets that are already rolled up to those buckets' rollups, level by level."""
    rows = [[r[kind.series_column], r["ts"], *(r[name] for name in kind.values)] for r in late]
    series, ts, values = _arrays(kind, [tuple(np.nan if v is None else v for v in row) for row in rows], 0)
    for level in LEVELS:
        mask = ts < marks[level]
        if not mask.any():
            continue
        additions = aggregate(kind, series[mask], ts[mask], {k: v[mask] for k, v in values.items()}, level)
        _upsert_rollups(session, kind, level, additions)


def _upsert_rollups(session: Session, kind: _Kind, level: int, additions: list[dict[str, Any]]) -> None:
    table = kind.rollup_table
    series_column = table.c[kind.series_column]
    keys = [(a[kind.series_column], a["bucket"]) for a in additions]
    existing: dict[tuple[int, int], dict[str, Any]] = {}
    for start in range(0, len(keys), 500):
        chunk = keys[start : start + 500]
        query = (
            select(table)
            .where(and_(table.c.level == level, tuple_(series_column, table.c.bucket).in_(chunk)))
            .with_for_update()
        )
        for row in session.execute(query).mappings():
            existing[(row[kind.series_column], row["bucket"])] = dict(row)
    new_rows = [a for a, key in zip(additions, keys, strict=True) if key not in existing]
    if new_rows:
        session.execute(table.insert(), new_rows)
    for addition, key in zip(additions, keys, strict=True):
        if key in existing:
            merged = merge_rollup_rows(kind, [existing[key], addition], level)[0]
            session.execute(
                table.update()
                .where(and_(table.c.level == level, series_column == key[0], table.c.bucket == key[1]))
                .values({k: v for k, v in merged.items() if k not in ("level", kind.series_column, "bucket")})
            )


def record_disk_samples(
    session: Session, samples: Sequence[DiskSampleIn], now: datetime | None = None
) -> InsertReport:
    """Store disk samples (idempotent: a sample already stored is counted as a duplicate and skipped)."""
    return _record(session, DISK, samples, now)


def record_host_datastore_samples(
    session: Session, samples: Sequence[HostDatastoreSampleIn], now: datetime | None = None
) -> InsertReport:
    """Store host/datastore samples (idempotent, like :func:`record_disk_samples`)."""
    return _record(session, HOST_DATASTORE, samples, now)


# --- rolling up and pruning ------------------------------------------------------------------------


@dataclass(frozen=True)
class RollupReport:
    """Rows written per (kind, level) by one :func:`roll_up`, and the new watermarks."""

    rows: dict[str, int]
    watermarks: dict[str, int]


def roll_up(session: Session, now: int, grace_s: int = ROLLUP_GRACE_S) -> RollupReport:
    """Summarise every bucket that closed at least *grace_s* before *now* (seconds since the epoch)."""
    written: dict[str, int] = {}
    marks_out: dict[str, int] = {}
    for kind in (DISK, HOST_DATASTORE):
        marks = _watermarks(session, kind, exclusive=True)
        end5 = _floor(now - grace_s, LEVEL_5MIN)
        start5 = marks[LEVEL_5MIN] or _first_raw_bucket(session, kind)
        count5 = 0
        if start5 is not None and end5 > start5:
            count5 = _roll_raw(session, kind, start5, end5)
            _set_watermark(session, kind, LEVEL_5MIN, end5)
            marks[LEVEL_5MIN] = end5
        end_h = _floor(marks[LEVEL_5MIN], LEVEL_HOUR)
        start_h = marks[LEVEL_HOUR] or _first_rollup_hour(session, kind)
        count_h = 0
        if start_h is not None and end_h > start_h:
            count_h = _roll_hours(session, kind, start_h, end_h)
            _set_watermark(session, kind, LEVEL_HOUR, end_h)
            marks[LEVEL_HOUR] = end_h
        written[f"{kind.name}/5m"] = count5
        written[f"{kind.name}/1h"] = count_h
        marks_out[f"{kind.name}/5m"] = marks[LEVEL_5MIN]
        marks_out[f"{kind.name}/1h"] = marks[LEVEL_HOUR]
    return RollupReport(written, marks_out)


def _floor(ts: int, level: int) -> int:
    return ts - ts % level


def _ceil(ts: int, level: int) -> int:
    return -(-ts // level) * level


def _first_raw_bucket(session: Session, kind: _Kind) -> int | None:
    first = session.execute(select(func.min(kind.raw_table.c.ts))).scalar()
    return None if first is None else _floor(int(first), LEVEL_5MIN)


def _first_rollup_hour(session: Session, kind: _Kind) -> int | None:
    table = kind.rollup_table
    first = session.execute(select(func.min(table.c.bucket)).where(table.c.level == LEVEL_5MIN)).scalar()
    return None if first is None else _floor(int(first), LEVEL_HOUR)


def _set_watermark(session: Session, kind: _Kind, level: int, value: int) -> None:
    changed = session.execute(
        update(RollupState)
        .where(RollupState.kind == kind.name, RollupState.level == level)
        .values(watermark=value)
    )
    if changed.rowcount == 0:  # type: ignore[attr-defined]
        session.add(RollupState(kind=kind.name, level=level, watermark=value))
        session.flush()


def _raw_select(kind: _Kind) -> Select[Any]:
    raw = kind.raw_table.c
    return select(raw[kind.series_column], raw.ts, *(raw[name] for name in kind.values))


def _roll_raw(session: Session, kind: _Kind, start: int, end: int) -> int:
    raw = kind.raw_table.c
    written = 0
    cursor = start
    while cursor < end:
        nxt = session.execute(select(func.min(raw.ts)).where(raw.ts >= cursor, raw.ts < end)).scalar()
        if nxt is None:
            break
        cursor = _floor(int(nxt), LEVEL_5MIN)
        stop = min(cursor + _CHUNK_S, end)
        rows = session.execute(_raw_select(kind).where(raw.ts >= cursor, raw.ts < stop)).all()
        if rows:
            series, ts, values = _arrays(kind, rows, 0)
            new_rows = aggregate(kind, series, ts, values, LEVEL_5MIN)
            session.execute(kind.rollup_table.insert(), new_rows)
            written += len(new_rows)
        cursor = stop
    return written


def _roll_hours(session: Session, kind: _Kind, start: int, end: int) -> int:
    table = kind.rollup_table
    written = 0
    for hour in range(start, end, LEVEL_HOUR):
        rows = [
            dict(r)
            for r in session.execute(
                select(table).where(
                    table.c.level == LEVEL_5MIN, table.c.bucket >= hour, table.c.bucket < hour + LEVEL_HOUR
                )
            ).mappings()
        ]
        if rows:
            merged = merge_rollup_rows(kind, rows, LEVEL_HOUR)
            session.execute(table.insert(), merged)
            written += len(merged)
    return written


@dataclass(frozen=True)
class SampleRetention:
    """How long samples and rollups are kept (``basil.config.RetentionConfig`` carries the same three)."""

    raw: timedelta
    five_min: timedelta
    hourly: timedelta
    hourly_sketches: timedelta | None = None


def prune_samples(session: Session, now: int, retention: SampleRetention) -> dict[str, int]:
    """Delete samples and rollups past their retention; raw rows are kept until they are rolled up."""
    deleted: dict[str, int] = {}
    for kind in (DISK, HOST_DATASTORE):
        marks = _watermarks(session, kind, exclusive=True)
        raw_horizon = min(now - int(retention.raw.total_seconds()), marks[LEVEL_5MIN])
        raw = kind.raw_table
        result = session.execute(delete(raw).where(raw.c.ts < raw_horizon))
        deleted[f"{kind.name}/raw"] = int(result.rowcount)  # type: ignore[attr-defined]
        rollup = kind.rollup_table
        five_horizon = min(now - int(retention.five_min.total_seconds()), marks[LEVEL_HOUR])
        for label, level, horizon in (
            ("5m", LEVEL_5MIN, five_horizon),
            ("1h", LEVEL_HOUR, now - int(retention.hourly.total_seconds())),
        ):
            result = session.execute(
                delete(rollup).where(rollup.c.level == level, rollup.c.bucket < horizon - level + 1)
            )
            deleted[f"{kind.name}/{label}"] = int(result.rowcount)  # type: ignore[attr-defined]
        if retention.hourly_sketches is not None:
            horizon = now - int(retention.hourly_sketches.total_seconds())
            result = session.execute(
                update(rollup)
                .where(
                    rollup.c.level == LEVEL_HOUR, rollup.c.bucket < horizon, func.length(rollup.c.sketch) > 0
                )
                .values(sketch=b"")
            )
            deleted[f"{kind.name}/1h-sketches"] = int(result.rowcount)  # type: ignore[attr-defined]
    return deleted


def latest_sample_time(session: Session) -> int | None:
    """The newest sample time stored (vCenter's clock), a good "now" for :func:`roll_up` and pruning."""
    latest = [
        session.execute(select(func.max(k.raw.__table__.c.ts))).scalar() for k in (DISK, HOST_DATASTORE)
    ]
    found = [int(t) for t in latest if t is not None]
    return max(found) if found else None


def newest_sample_times(session: Session, vcenter: str) -> dict[str, int]:
    """Per VM and per host of *vcenter*, the time of its newest stored raw sample.

    A collector restarted on this store goes on from there (one index lookup per series: the
    newest sample of a series is the last entry of its primary key).
    """
    out: dict[str, int] = {}
    for kind, owner in ((DISK, "vm"), (HOST_DATASTORE, "host")):
        raw = kind.raw_table.c
        series = kind.series_table.c
        newest = select(func.max(raw.ts)).where(raw[kind.series_column] == series.id).scalar_subquery()
        for entity, ts in session.execute(select(series[owner], newest).where(series.vcenter == vcenter)):
            if ts is not None and int(ts) > out.get(entity, -1):
                out[entity] = int(ts)
    return out


# --- reading -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Segment:
    """A span [start, end) read from one level (0 = raw samples)."""

    level: int
    start: int
    end: int


def cover(since: int, until: int, watermarks: dict[int, int]) -> list[Segment]:
    """Split [since, until) into spans served by the coarsest level that holds them whole.

    A rollup level serves only whole buckets below its watermark; the ragged edges and the newest
    minutes come from finer levels and, last, from raw samples. Sketches merge exactly, so reading
    hourly rollups where they exist loses nothing for percentiles and reads 12 times fewer rows.
    """
    levels = sorted((lv for lv in watermarks if lv > 0), reverse=True)

    def split(a: int, b: int, remaining: list[int]) -> list[Segment]:
        if a >= b:
            return []
        if not remaining:
            return [Segment(0, a, b)]
        level, finer = remaining[0], remaining[1:]
        start = _ceil(a, level)
        end = min(_floor(b, level), watermarks[level])
        if start >= end:
            return split(a, b, finer)
        return [*split(a, start, finer), Segment(level, start, end), *split(end, b, finer)]

    return split(since, until, levels)


@dataclass(frozen=True)
class WorkloadPercentiles:
    """Per-parameter quantiles of one disk over a window (BASIL §3), and how many samples fed each."""

    oio: float | None
    io_size_kb: float | None
    read_pct: float | None
    random_pct: float | None
    samples: int
    counts: tuple[int, int, int, int]

    @property
    def complete(self) -> bool:
        return None not in (self.oio, self.io_size_kb, self.read_pct, self.random_pct)


def _series_filter(
    session: Session, kind: _Kind, vcenter: str | None, refs: Iterable[tuple[str, str, str]] | None
) -> dict[int, tuple[str, str, str]]:
    table = kind.series_table
    columns = [c for c in table.columns if c.name not in ("id", "first_seen", "last_seen")]
    query = select(table.c.id, *columns)
    if vcenter is not None:
        query = query.where(table.c.vcenter == vcenter)
    wanted = {tuple(r) for r in refs} if refs is not None else None
    if wanted is not None and len(wanted) <= 500:
        # A few named series: let the unique index find them instead of reading every series.
        query = query.where(tuple_(*columns).in_(sorted(wanted)))
    found: dict[int, tuple[str, str, str]] = {}
    for row in session.execute(query):
        key = (row[1], row[2], row[3])
        if wanted is None or key in wanted:
            found[row[0]] = key
    return found


def _sketches_by_group(
    session: Session, kind: _Kind, groups: dict[int, int], since: int, until: int
) -> tuple[IntArray, list[bytes]]:
    """Every sketch over [since, until) of the series in *groups* (series id -> group), ordered by group.

    Rollups serve the spans they cover whole; raw samples the rest, each series' raw samples made
    into one sketch on the fly.
    """
    marks = _read_watermarks(session, kind)
    tagged: list[tuple[int, bytes]] = []
    rollup = kind.rollup_table
    raw = kind.raw_table
    ids = list(groups)
    for segment in cover(since, until, marks):
        if segment.level:
            series_column = rollup.c[kind.series_column]
            query = select(series_column, rollup.c.sketch).where(
                rollup.c.level == segment.level,
                rollup.c.bucket >= segment.start,
                rollup.c.bucket < segment.end,
            )
            if len(ids) <= 500:
                query = query.where(series_column.in_(ids))
            tagged.extend((groups[s], b) for s, b in session.execute(query) if s in groups)
        else:
            raw_query = _raw_select(kind).where(raw.c.ts >= segment.start, raw.c.ts < segment.end)
            if len(ids) <= 500:
                raw_query = raw_query.where(raw.c[kind.series_column].in_(ids))
            raw_rows = [r for r in session.execute(raw_query).all() if r[0] in groups]
            if raw_rows:
                series, _ts, values = _arrays(
                    kind, [tuple(np.nan if v is None else v for v in r) for r in raw_rows], 0
                )
                _stats, columns = kind.contributions(values)
                fresh = grouped_sketches(kind.spec, series, columns)
                tagged.extend((groups[s], b) for s, b in fresh.items())
    tagged.sort(key=lambda item: item[0])
    return np.array([g for g, _ in tagged], dtype=np.int64), [b for _, b in tagged]


def workload_percentiles(
    session: Session,
    since: int,
    until: int,
    q: float = 0.9,
    *,
    vcenter: str | None = None,
    disks: Iterable[DiskRef] | None = None,
) -> dict[DiskRef, WorkloadPercentiles]:
    """The q-quantile of OIO, IO size, read % and random % of each disk over [since, until) (BASIL §3, §6.1).

    Reads hourly and 5-minute sketches where they cover the window and raw samples for the rest, so
    a day costs at most ~24 + 24 + 15 rows per disk. Values are within 1 % (OIO, IO size) or 0.25
    points (percentages) of the exact quantile of the raw samples. Disks without samples are absent.
    """
    ids = _series_filter(session, DISK, vcenter, disks)
    order = list(ids)
    groups, blobs = _sketches_by_group(session, DISK, {s: i for i, s in enumerate(order)}, since, until)
    result: dict[DiskRef, WorkloadPercentiles] = {}
    for series_id, params in zip(
        order, quantiles_by_group(DISK_SKETCH, groups, blobs, len(order), q), strict=True
    ):
        (oio, n_oio), (size, n_size), (read, n_read), (rand, n_rand) = params
        if n_oio == 0:
            continue
        result[DiskRef(*ids[series_id])] = WorkloadPercentiles(
            oio, size, read, rand, n_oio, (n_oio, n_size, n_read, n_rand)
        )
    return result


def datastore_latency_percentiles(
    session: Session, since: int, until: int, q: float = 0.9, *, vcenter: str | None = None
) -> dict[tuple[str, str], tuple[float | None, int]]:
    """(q-quantile of latency, samples) per (vcenter, datastore) over [since, until), all hosts pooled.

    Pooling host samples weighs each host's view equally; Storage DRS's "90th percentile over a day"
    threshold is checked against this.
    """
    ids = _series_filter(session, HOST_DATASTORE, vcenter, None)
    datastores = sorted({(vc, ds) for vc, _host, ds in ids.values()})
    index = {key: i for i, key in enumerate(datastores)}
    lookup = {series_id: index[(vc, ds)] for series_id, (vc, _host, ds) in ids.items()}
    groups, blobs = _sketches_by_group(session, HOST_DATASTORE, lookup, since, until)
    quantiles = quantiles_by_group(HOST_DATASTORE_SKETCH, groups, blobs, len(datastores), q)
    latency = HOST_DATASTORE_SKETCH.index("latency_ms")
    return {datastores[i]: params[latency] for i, params in enumerate(quantiles) if params[latency][1] > 0}


@dataclass(frozen=True)
class DevicePoints:
    """⟨OIO, latency⟩ points of one datastore, aggregated over its hosts (BASIL §4, §6.1).

    Per point: read OIO summed over hosts, read latency IOPS-weighted over hosts, read IOPS, mean
    read IO size, and ``weight`` = the number of 20 s samples per host it stands for (1 for raw
    points, up to 15 or 180 for rollup points, whose values are bucket means); and the write side's
    IOPS-weighted latency and IOPS (for the device model's write-cache transient filter).
    """

    ts: tuple[int, ...]
    read_oio: tuple[float, ...]
    read_latency_ms: tuple[float, ...]
    read_iops: tuple[float, ...]
    read_io_size_kb: tuple[float, ...]
    weight: tuple[float, ...]
    write_latency_ms: tuple[float, ...] = ()
    write_iops: tuple[float, ...] = ()


_Point = tuple[int, float, float, float, float, float, float, float]


def device_points(session: Session, vcenter: str, datastore: str, since: int, until: int) -> DevicePoints:
    """The device model's input for one datastore over [since, until): raw points, then bucket means."""
    table = _table(HostDatastore)
    ids = [
        row[0]
        for row in session.execute(
            select(table.c.id).where(table.c.vcenter == vcenter, table.c.datastore == datastore)
        )
    ]
    marks = _read_watermarks(session, HOST_DATASTORE)
    points: list[_Point] = []
    if ids:
        for segment in cover(since, until, marks):
            points.extend(_device_segment(session, ids, segment))
    points.sort()
    columns = list(zip(*points, strict=True)) if points else [()] * 8
    return DevicePoints(*(tuple(c) for c in columns))


def _device_segment(session: Session, ids: list[int], segment: Segment) -> list[_Point]:
    out: list[_Point] = []
    if segment.level == 0:
        raw = _table(HostDatastoreSample).c
        query = (
            select(
                raw.ts,
                func.sum(raw.read_oio),
                func.sum(raw.read_latency_ms * raw.read_iops),
                func.sum(raw.read_iops),
                func.sum(raw.read_kbps),
                func.sum(raw.write_latency_ms * raw.write_iops),
                func.sum(raw.write_iops),
            )
            .where(raw.hd_id.in_(ids), raw.ts >= segment.start, raw.ts < segment.end)
            .group_by(raw.ts)
        )
        for ts, oio, lat_iops, iops, kbps, w_lat_iops, w_iops in session.execute(query):
            if iops and iops > 0:
                w = float(w_iops or 0.0)
                w_lat = float(w_lat_iops) / w if w > 0 else 0.0
                out.append(
                    (
                        int(ts),
                        float(oio),
                        float(lat_iops) / iops,
                        float(iops),
                        float(kbps) / iops,
                        1.0,
                        w_lat,
                        w,
                    )
                )
        return out
    rollup = _table(HostDatastoreRollup).c
    query = (
        select(
            rollup.bucket,
            func.sum(rollup.sum_read_oio / rollup.n),
            func.sum(rollup.sum_read_latency_iops),
            func.sum(rollup.sum_read_iops),
            func.sum(rollup.sum_read_iops / rollup.n),
            func.sum(rollup.sum_read_kbps),
            func.max(rollup.n),
            func.sum(rollup.sum_write_latency_iops),
            func.sum(rollup.sum_write_iops),
            func.sum(rollup.sum_write_iops / rollup.n),
        )
        .where(
            rollup.level == segment.level,
            rollup.hd_id.in_(ids),
            rollup.bucket >= segment.start,
            rollup.bucket < segment.end,
        )
        .group_by(rollup.bucket)
    )
    for row in (tuple(r) for r in session.execute(query)):
        bucket, oio, lat_iops, iops_sum, iops_mean, kbps, n, w_lat_iops, w_sum, w_mean = row
        if iops_sum and iops_sum > 0:
            w_lat = float(w_lat_iops) / float(w_sum) if w_sum else 0.0
            out.append(
                (
                    int(bucket),
                    float(oio),
                    float(lat_iops) / iops_sum,
                    float(iops_mean),
                    float(kbps) / iops_sum,
                    float(n),
                    w_lat,
                    float(w_mean or 0.0),
                )
            )
    return out


def _per_time_queries(
    session: Session,
    vcenter: str,
    columns: tuple[Any, ...],
    *,
    disks: Sequence[tuple[str, str]],
    timed: Sequence[tuple[str, str, int, int]],
    since: int,
    until: int,
) -> Iterator[Select[Any]]:
    """*columns* of the disk samples grouped by raw sample time, in queries of at most 500 of *disks*
    over [since, until), and one per *timed* disk over its own [from, until) within it; disks the
    store does not know are left out."""
    table = _table(Disk)
    wanted = set(disks) | {(vm, inst) for vm, inst, _a, _b in timed}
    ids = {
        (vm, instance): disk_id
        for disk_id, vm, instance in session.execute(
            select(table.c.id, table.c.vm, table.c.instance).where(table.c.vcenter == vcenter)
        )
        if (vm, instance) in wanted
    }
    raw = _table(DiskSample).c
    static = [ids[d] for d in disks if d in ids]
    for start in range(0, len(static), 500):
        yield (
            select(*columns)
            .where(raw.disk_id.in_(static[start : start + 500]), raw.ts >= since, raw.ts < until)
            .group_by(raw.ts)
        )
    for vm, instance, begin, end in timed:
        if (vm, instance) in ids:
            yield (
                select(*columns)
                .where(
                    raw.disk_id == ids[(vm, instance)], raw.ts >= max(since, begin), raw.ts < min(until, end)
                )
                .group_by(raw.ts)
            )


def disk_read_latency_us(
    session: Session,
    vcenter: str,
    disks: Sequence[tuple[str, str]],
    since: int,
    until: int,
    *,
    timed: Sequence[tuple[str, str, int, int]] = (),
) -> dict[int, tuple[float, float, float]]:
    """Per raw sample time in [since, until): the read IOPS of *disks* (VM moid, instance), and the
    IOPS-weighted ``readLatencyUS`` over those of them that have it, with their read IOPS.

    *timed* are disks that count only over [from, until) of their own (a disk moved in or out).
    Returns ts -> (read IOPS of all the disks, µs latency, read IOPS of the disks with a µs figure).
    The device model takes a datastore's µs read latency from the disks on it when their IOPS
    account for the host-level read IOPS (see :mod:`basil.app.modelling`).
    """
    if not disks and not timed:
        return {}
    raw = _table(DiskSample).c
    with_us = raw.read_latency_us.is_not(None)
    sums: dict[int, tuple[float, float, float]] = {}

    def add(query: Select[Any]) -> None:
        for ts, iops, lat_iops, iops_us in session.execute(query):
            a, b, c = sums.get(int(ts), (0.0, 0.0, 0.0))
            sums[int(ts)] = (a + float(iops or 0.0), b + float(lat_iops or 0.0), c + float(iops_us or 0.0))

    columns = (
        raw.ts,
        func.sum(raw.read_iops),
        func.sum(case((with_us, raw.read_latency_us * raw.read_iops), else_=0.0)),
        func.sum(case((with_us, raw.read_iops), else_=0.0)),
    )
    for query in _per_time_queries(
        session, vcenter, columns, disks=disks, timed=timed, since=since, until=until
    ):
        add(query)
    return {ts: (iops, lat / us if us > 0 else 0.0, us) for ts, (iops, lat, us) in sums.items()}


class CachedWrites(NamedTuple):
    """The cached writes of a datastore's disks in one raw 20 s sample time."""

    random_iops: float  # Σ cached write IOPS × random share (of the disks' seek histograms)
    unknown: int  # disks with cached writes but no seek counters (random share unknown)


def cached_random_writes(
    session: Session,
    vcenter: str,
    disks: Sequence[tuple[str, str]],
    since: int,
    until: int,
    *,
    write_cache_ms: float,
    timed: Sequence[tuple[str, str, int, int]] = (),
) -> dict[int, CachedWrites]:
    """Per raw sample time in [since, until) at which any of *disks* (VM moid, instance) was sampled:
    their cached writes (write latency at most *write_cache_ms*) times each one's random share, and
    how many cached writers had no seek counters. *timed* disks count only over [from, until) of
    their own, as in :func:`disk_read_latency_us`. The what-if's separated device model weighs each
    interval's destaging by it (:mod:`basil.app.modelling`)."""
    if not disks and not timed:
        return {}
    raw = _table(DiskSample).c
    cached = and_(raw.write_iops > 0, raw.write_latency_ms <= write_cache_ms)
    seeks = raw.small_seeks + raw.medium_seeks + raw.large_seeks  # NULL when any counter is
    known = and_(seeks.is_not(None), seeks > 0)
    columns = (
        raw.ts,
        func.sum(
            case(
                (and_(cached, known), raw.write_iops * (raw.medium_seeks + raw.large_seeks) / seeks),
                else_=0.0,
            )
        ),
        func.sum(case((and_(cached, or_(seeks.is_(None), seeks <= 0)), 1), else_=0)),
    )
    out: dict[int, CachedWrites] = {}

    def add(query: Select[Any]) -> None:
        for ts, random_iops, unknown in session.execute(query):
            before = out.get(int(ts), CachedWrites(0.0, 0))
            out[int(ts)] = CachedWrites(
                before.random_iops + float(random_iops or 0.0), before.unknown + int(unknown or 0)
            )

    for query in _per_time_queries(
        session, vcenter, columns, disks=disks, timed=timed, since=since, until=until
    ):
        add(query)
    return out


@dataclass(frozen=True)
class DiskPoint:
    """One point of a disk's history: means over the point's span (one sample, or a rollup bucket)."""

    ts: int
    samples: int
    read_iops: float
    write_iops: float
    oio: float
    read_latency_ms: float | None
    write_latency_ms: float | None
    max_oio: float
    max_latency_ms: float


def disk_history(
    session: Session, disk: DiskRef, since: int, until: int, resolution: int = LEVEL_5MIN
) -> list[DiskPoint]:
    """A disk's history at *resolution* (0 = raw samples, 300, 3600), for charts and the API."""
    found = _series_filter(session, DISK, disk.vcenter, [disk])
    if not found:
        return []
    (series_id,) = found
    if resolution == 0:
        raw_table = _table(DiskSample)
        raw = raw_table.c
        rows = session.execute(
            select(raw_table)
            .where(raw.disk_id == series_id, raw.ts >= since, raw.ts < until)
            .order_by(raw.ts)
        ).mappings()
        return [
            DiskPoint(
                r["ts"],
                1,
                r["read_iops"],
                r["write_iops"],
                r["read_oio"] + r["write_oio"],
                r["read_latency_ms"],
                r["write_latency_ms"],
                r["read_oio"] + r["write_oio"],
                max(r["read_latency_ms"], r["write_latency_ms"]),
            )
            for r in rows
        ]
    if resolution not in LEVELS:
        raise ValueError(f"resolution must be 0, {LEVEL_5MIN} or {LEVEL_HOUR}, not {resolution}")
    rollup_table = _table(DiskRollup)
    rollup = rollup_table.c
    rows = session.execute(
        select(rollup_table)
        .where(
            rollup.level == resolution,
            rollup.disk_id == series_id,
            rollup.bucket >= since,
            rollup.bucket < until,
        )
        .order_by(rollup.bucket)
    ).mappings()
    points = []
    for r in rows:
        n = r["n"]
        points.append(
            DiskPoint(
                r["bucket"],
                n,
                r["sum_read_iops"] / n,
                r["sum_write_iops"] / n,
                (r["sum_read_oio"] + r["sum_write_oio"]) / n,
                r["sum_read_latency_iops"] / r["sum_read_iops"] if r["sum_read_iops"] > 0 else None,
                r["sum_write_latency_iops"] / r["sum_write_iops"] if r["sum_write_iops"] > 0 else None,
                r["max_oio"],
                r["max_latency_ms"],
            )
        )
    return points


def disk_refs(session: Session, vcenter: str | None = None) -> list[DiskRef]:
    """Every disk that has ever been sampled (of one vCenter, or all)."""
    return [DiskRef(*key) for key in _series_filter(session, DISK, vcenter, None).values()]


def disk_id(session: Session, disk: DiskRef) -> int | None:
    """The store's id of a disk (the key of :mod:`basil.store.fits`), if it was ever seen."""
    found = _series_filter(session, DISK, disk.vcenter, [disk])
    return next(iter(found), None)


def ensure_disk_ids(
    session: Session, disks: Iterable[DiskRef], now: datetime | None = None
) -> dict[DiskRef, int]:
    """The ids of *disks*, registering those never sampled (a model or setting may come first)."""
    refs = {tuple(d) for d in disks}
    ids = _series_ids(session, DISK, refs, now or datetime.now(UTC))  # type: ignore[arg-type]
    return {DiskRef(*k): v for k, v in ids.items()}
