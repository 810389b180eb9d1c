"""Samples: idempotent inserts, rollups, late samples, retention and the model queries, on both backends."""

from __future__ import annotations

import dataclasses
import math
from datetime import timedelta
from typing import Any

import numpy as np
from sqlalchemy import event, func, select

from basil.store import Store
from basil.store.models import LEVEL_5MIN, LEVEL_HOUR, Disk, DiskRollup, DiskSample
from basil.store.samples import (
    DiskRef,
    DiskSampleIn,
    HostDatastoreSampleIn,
    SampleRetention,
    Segment,
    cover,
    datastore_latency_percentiles,
    device_points,
    disk_history,
    disk_read_latency_us,
    latest_sample_time,
    newest_sample_times,
    prune_samples,
    record_disk_samples,
    record_host_datastore_samples,
    roll_up,
    workload_percentiles,
)
from basil.store.sketch import ALPHA

from .builders import T0, disk_cycle, host_cycle


def workload_params(s: DiskSampleIn) -> tuple[float, float | None, float | None, float | None]:
    """BASIL §3's four parameters of one sample, computed plainly (reference for the store's numpy)."""
    iops = s.read_iops + s.write_iops
    size = (s.read_iops * s.read_io_size_kb + s.write_iops * s.write_io_size_kb) / iops if iops > 0 else None
    read = 100.0 * s.read_iops / iops if iops > 0 else None
    seeks = (s.small_seeks or 0) + (s.medium_seeks or 0) + (s.large_seeks or 0)
    rand = 100.0 * ((s.medium_seeks or 0) + (s.large_seeks or 0)) / seeks if seeks > 0 else None
    return s.read_oio + s.write_oio, size, read, rand


def exact_quantile(values: list[float], q: float) -> float:
    return float(np.quantile(np.array(values), q, method="lower"))


def collect(store: Store, start: int, end: int, n_disks: int, seed: int = 0) -> list[DiskSampleIn]:
    """Insert one cycle every 20 s and roll up every 5 minutes, as the service's jobs would."""
    rng = np.random.default_rng(seed)
    everything: list[DiskSampleIn] = []
    for ts in range(start, end, 20):
        batch = disk_cycle(rng, ts, n_disks)
        everything += batch
        with store.session() as session:
            record_disk_samples(session, batch)
            if ts % LEVEL_5MIN == 0:
                roll_up(session, now=ts)
    with store.session() as session:
        roll_up(session, now=end + 60)  # a minute later, the last bucket is closed too
    return everything


def test_cover_uses_the_coarsest_level_that_holds_whole_buckets() -> None:
    marks = {LEVEL_5MIN: T0 + 7200, LEVEL_HOUR: T0 + 3600}
    segments = cover(T0 - 130, T0 + 7500, marks)
    assert segments == [
        Segment(0, T0 - 130, T0 - 0),
        Segment(LEVEL_HOUR, T0, T0 + 3600),
        Segment(LEVEL_5MIN, T0 + 3600, T0 + 7200),
        Segment(0, T0 + 7200, T0 + 7500),
    ]
    assert cover(T0, T0 + 600, {LEVEL_5MIN: 0, LEVEL_HOUR: 0}) == [Segment(0, T0, T0 + 600)]


def test_insert_is_idempotent(store: Store) -> None:
    batch = disk_cycle(np.random.default_rng(1), T0, 5)
    with store.session() as session:
        first = record_disk_samples(session, batch + batch[:2])
    with store.session() as session:
        second = record_disk_samples(session, batch)
    with store.read_session() as session:
        stored = session.execute(select(func.count()).select_from(DiskSample)).scalar()
    assert (first.offered, first.duplicates) == (7, 2)
    assert second.offered == 5
    assert stored == 5


def test_newest_sample_times_per_vm_and_host_of_one_vcenter(store: Store) -> None:
    rng = np.random.default_rng(3)
    with store.session() as session:
        assert newest_sample_times(session, "vc") == {}
        record_disk_samples(session, disk_cycle(rng, T0, 3) + disk_cycle(rng, T0 + 20, 2))
        record_disk_samples(session, disk_cycle(rng, T0 + 60, 1, vcenter="other"))
        record_host_datastore_samples(session, host_cycle(rng, T0, 2, 2) + host_cycle(rng, T0 + 40, 1, 1))
    with store.read_session() as session:
        newest = newest_sample_times(session, "vc")
        other = newest_sample_times(session, "other")
    # vm-0 and vm-1 delivered at T0 + 20, vm-2 only at T0; host-0 saw ds-0 last at T0 + 40.
    assert newest == {"vm-0": T0 + 20, "vm-1": T0 + 20, "vm-2": T0, "host-0": T0 + 40, "host-1": T0}
    assert other == {"vm-0": T0 + 60}


def test_percentiles_over_rollups_match_the_raw_samples(store: Store) -> None:
    start, end = T0, T0 + 3 * 3600 + 600
    samples = collect(store, start, end, n_disks=3)
    with store.read_session() as session:
        levels = dict(
            session.execute(select(DiskRollup.level, func.count()).group_by(DiskRollup.level)).all()
        )
        result = workload_percentiles(session, start, end, 0.9)
    assert levels[LEVEL_HOUR] == 3 * 3  # three closed hours for three disks
    assert levels[LEVEL_5MIN] >= 3 * 36
    for i in range(3):
        mine = [workload_params(s) for s in samples if s.vm == f"vm-{i}"]
        got = result[DiskRef("vc", f"vm-{i}", "scsi0:0")]
        assert got.samples == len(mine)
        for index, value in enumerate((got.oio, got.io_size_kb, got.read_pct, got.random_pct)):
            exact = exact_quantile([m[index] for m in mine if m[index] is not None], 0.9)
            assert value is not None
            tolerance = ALPHA * exact if index < 2 else 0.25
            assert abs(value - exact) <= tolerance + 1e-9, (i, index, value, exact)


def test_a_window_inside_the_raw_retention_reads_raw(store: Store) -> None:
    samples = collect(store, T0, T0 + 900, n_disks=2, seed=3)
    since = T0 + 130  # not on a bucket edge: raw serves the edges
    with store.read_session() as session:
        result = workload_percentiles(session, since, T0 + 900, 0.5, disks=[DiskRef("vc", "vm-1", "scsi0:0")])
    assert list(result) == [DiskRef("vc", "vm-1", "scsi0:0")]
    mine = [workload_params(s)[0] for s in samples if s.vm == "vm-1" and s.ts >= since]
    got = result[DiskRef("vc", "vm-1", "scsi0:0")]
    assert got.samples == len(mine)
    assert got.oio is not None
    assert abs(got.oio - exact_quantile(mine, 0.5)) <= ALPHA * exact_quantile(mine, 0.5)


def test_late_samples_are_merged_into_rolled_buckets_once(store: Store) -> None:
    collect(store, T0, T0 + 2 * 3600, n_disks=1, seed=4)
    late = DiskSampleIn("vc", "vm-0", "scsi0:0", T0 + 610, 10, 0, 500.0, 0, 1, 1, 8, 8, 0, 0, 10)
    for _ in range(2):  # the second time it is a duplicate and must not be counted again
        with store.session() as session:
            report = record_disk_samples(session, [late])
    assert (report.duplicates, report.late) == (1, 0)
    with store.read_session() as session:
        hourly = session.execute(
            select(DiskRollup.n).where(DiskRollup.level == LEVEL_HOUR, DiskRollup.bucket == T0)
        ).scalar_one()
        result = workload_percentiles(session, T0, T0 + 3600, 1.0)
    assert hourly == 181  # 180 samples of the hour, plus the late one
    got = result[DiskRef("vc", "vm-0", "scsi0:0")]
    assert got.samples == 181
    assert got.oio is not None
    assert abs(got.oio - 500.0) <= ALPHA * 500.0


def test_history_means(store: Store) -> None:
    samples = collect(store, T0, T0 + 3600, n_disks=1, seed=5)
    with store.read_session() as session:
        points = disk_history(session, DiskRef("vc", "vm-0", "scsi0:0"), T0, T0 + 3600, LEVEL_5MIN)
        raw = disk_history(session, DiskRef("vc", "vm-0", "scsi0:0"), T0, T0 + 60, 0)
    assert len(points) == 12
    first = [s for s in samples if s.ts < T0 + 300]
    assert points[0].samples == 15
    assert math.isclose(points[0].read_iops, sum(s.read_iops for s in first) / 15)
    weighted = sum(s.read_latency_ms * s.read_iops for s in first) / sum(s.read_iops for s in first)
    assert points[0].read_latency_ms is not None
    assert math.isclose(points[0].read_latency_ms, weighted)
    assert [p.ts for p in raw] == [T0, T0 + 20, T0 + 40]


def test_device_points_aggregate_hosts(store: Store) -> None:
    def sample(host: str, ts: int, r: float, oio: float, lat: float) -> HostDatastoreSampleIn:
        return HostDatastoreSampleIn("vc", host, "ds-1", ts, r, 5.0, oio, 1.0, lat, 2.0, r * 8.0, 40.0)

    with store.session() as session:
        for ts in range(T0, T0 + 600, 20):
            record_host_datastore_samples(
                session, [sample("h1", ts, 100.0, 2.0, 4.0), sample("h2", ts, 300.0, 6.0, 8.0)]
            )
        roll_up(session, now=T0 + 600)
    with store.read_session() as session:
        raw = device_points(session, "vc", "ds-1", T0 + 300, T0 + 600)
        rolled = device_points(session, "vc", "ds-1", T0, T0 + 300)
    # BASIL §6.1: OIO summed over hosts, latency IOPS-weighted: (100·4 + 300·8) / 400 = 7.
    assert raw.read_oio[0] == 8.0
    assert math.isclose(raw.read_latency_ms[0], 7.0)
    assert math.isclose(raw.read_io_size_kb[0], 8.0)
    assert len(raw.ts) == 15
    assert rolled.ts == (T0,)
    assert math.isclose(rolled.read_oio[0], 8.0)
    assert math.isclose(rolled.read_latency_ms[0], 7.0)
    assert math.isclose(rolled.read_iops[0], 400.0)
    assert rolled.weight == (15.0,)
    # The write side, for the device model's write-cache transient filter: 5 IOPS at 2 ms per host.
    assert raw.write_iops[0] == 10.0
    assert math.isclose(raw.write_latency_ms[0], 2.0)
    assert math.isclose(rolled.write_iops[0], 10.0)
    assert math.isclose(rolled.write_latency_ms[0], 2.0)


def test_microsecond_read_latency_of_the_disks_on_a_datastore(store: Store) -> None:
    def sample(vm: str, ts: int, iops: float, us: float | None) -> DiskSampleIn:
        ms = round(us / 1000) if us is not None else 1.0
        return DiskSampleIn(
            "vc", vm, "scsi0:1", ts, iops, 1.0, 1.0, 0.0, ms, 0.4, 8.0, 8.0, read_latency_us=us
        )

    with store.session() as session:
        for ts in (T0, T0 + 20, T0 + 40):
            record_disk_samples(
                session,
                [
                    sample("vm-a", ts, 100.0, 400.0),
                    sample("vm-b", ts, 300.0, 800.0),
                    sample("vm-c", ts, 50.0, None),
                ],
            )
    with store.read_session() as session:
        both = disk_read_latency_us(session, "vc", [("vm-a", "scsi0:1"), ("vm-b", "scsi0:1")], T0, T0 + 60)
        # vm-c reports no µs: its IOPS count in the total, not in the µs part.
        with_c = disk_read_latency_us(session, "vc", [("vm-a", "scsi0:1"), ("vm-c", "scsi0:1")], T0, T0 + 60)
        # vm-b counts only from T0 + 20 (it moved in then).
        timed = disk_read_latency_us(
            session, "vc", [("vm-a", "scsi0:1")], T0, T0 + 60, timed=[("vm-b", "scsi0:1", T0 + 20, 2**62)]
        )
    assert sorted(both) == [T0, T0 + 20, T0 + 40]
    iops, us, us_iops = both[T0]
    assert (iops, us_iops) == (400.0, 400.0)
    assert math.isclose(us, (100 * 400 + 300 * 800) / 400)  # IOPS-weighted: 700 µs
    assert with_c[T0] == (150.0, 400.0, 100.0)
    assert timed[T0] == (100.0, 400.0, 100.0)
    assert math.isclose(timed[T0 + 20][1], 700.0)


def test_datastore_latency_percentile_pools_hosts(store: Store) -> None:
    rng = np.random.default_rng(9)
    with store.session() as session:
        for ts in range(T0, T0 + 1200, 20):
            record_host_datastore_samples(session, host_cycle(rng, ts, hosts=2, datastores=2))
        roll_up(session, now=T0 + 1200)
    with store.read_session() as session:
        result = datastore_latency_percentiles(session, T0, T0 + 1200, 0.9)
    assert set(result) == {("vc", "ds-0"), ("vc", "ds-1")}
    value, count = result[("vc", "ds-0")]
    assert count == 2 * 60
    assert value is not None
    assert value > 0


def test_retention_keeps_what_is_not_rolled_up(store: Store) -> None:
    collect(store, T0, T0 + 3 * 3600, n_disks=2, seed=6)
    retention = SampleRetention(raw=timedelta(hours=1), five_min=timedelta(hours=2), hourly=timedelta(days=1))
    with store.session() as session:
        assert latest_sample_time(session) == T0 + 3 * 3600 - 20
        deleted = prune_samples(session, now=T0 + 3 * 3600, retention=retention)
    assert deleted["disk/raw"] == 2 * 2 * 180  # the two oldest hours
    assert deleted["disk/5m"] == 2 * 12  # the oldest hour's 5-minute buckets
    assert deleted["disk/1h"] == 0
    with store.read_session() as session:
        oldest_raw = session.execute(select(func.min(DiskSample.ts))).scalar()
        result = workload_percentiles(session, T0, T0 + 3 * 3600, 0.9)
    assert oldest_raw == T0 + 2 * 3600
    # Hourly rollups still hold the whole span.
    assert result[DiskRef("vc", "vm-0", "scsi0:0")].samples == 3 * 180
    # Past hourly_sketches, hourly rows keep their means but lose their distributions.
    thinner = SampleRetention(timedelta(hours=1), timedelta(hours=2), timedelta(days=1), timedelta(hours=2))
    with store.session() as session:
        assert prune_samples(session, now=T0 + 3 * 3600, retention=thinner)["disk/1h-sketches"] == 2
    with store.read_session() as session:
        result = workload_percentiles(session, T0, T0 + 3 * 3600, 0.9)
        means = disk_history(session, DiskRef("vc", "vm-0", "scsi0:0"), T0, T0 + 3600, LEVEL_HOUR)
    assert result[DiskRef("vc", "vm-0", "scsi0:0")].samples == 2 * 180
    assert means[0].samples == 180


def test_prune_never_drops_raw_rows_that_are_not_rolled_up(store: Store) -> None:
    batch = disk_cycle(np.random.default_rng(2), T0, 3)
    retention = SampleRetention(
        raw=timedelta(minutes=1), five_min=timedelta(hours=1), hourly=timedelta(days=1)
    )
    with store.session() as session:
        record_disk_samples(session, batch)
        deleted = prune_samples(session, now=T0 + 86400, retention=retention)
    assert deleted["disk/raw"] == 0


def test_a_cycle_is_stored_in_one_statement_whatever_values_are_missing(store: Store) -> None:
    # Alternating missing values (no seek histogram, no microsecond latency) must not split the cycle
    # into one INSERT per run of alike rows: that held the write lock three times as long.
    batch = [
        s if i % 2 else dataclasses.replace(s, small_seeks=None, medium_seeks=None, large_seeks=None)
        for i, s in enumerate(disk_cycle(np.random.default_rng(3), T0, 40))
    ]
    batch = [
        dataclasses.replace(s, read_latency_us=None if i % 3 else 700.0 + i) for i, s in enumerate(batch)
    ]
    inserts: list[str] = []

    def count(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        if statement.startswith("INSERT INTO disk_samples"):
            inserts.append(statement)

    before = store.generation("disk_samples")[0]
    event.listen(store.engine, "before_cursor_execute", count)
    try:
        with store.session() as session:
            report = record_disk_samples(session, batch)
    finally:
        event.remove(store.engine, "before_cursor_execute", count)
    assert len(inserts) == 1
    assert (report.offered, report.duplicates) == (40, 0)
    assert store.generation("disk_samples")[0] == before + 1  # cached reads of the samples see the write
    with store.read_session() as session:
        rows = session.execute(
            select(Disk.vm, DiskSample.small_seeks, DiskSample.read_latency_us).join(
                Disk, Disk.id == DiskSample.disk_id
            )
        ).all()
    assert sorted(tuple(r) for r in rows) == sorted((s.vm, s.small_seeks, s.read_latency_us) for s in batch)
