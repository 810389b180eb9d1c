"""Store benchmark: sample insert throughput, roll-up cost, and the 90th-percentile query over a day.

The load is the lab's large scenario: per 20 s collection cycle, 6,000 virtual-disk samples and
3,200 host/datastore samples (32 hosts × 100 datastores). For SQLite (a file in a temporary
directory) and PostgreSQL (a throw-away cluster from Debian's binaries, as the tests use) it prints:

- insert: the time of one collection cycle (both kinds of samples, one transaction) and samples/s;
- roll-up: the time to summarise one 5-minute bucket of that load (90,000 + 48,000 raw rows);
- query: a day of downsampled history (5-minute and hourly rollups of every disk) is written, then
  the time of the 90th-percentile workload query for one disk over the day, and for every disk at
  once (what a modelling round does).

Usage: ``python benchmarks/bench_store.py [--backends sqlite,postgresql] [--disks 6000] [--cycles 15]``
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from sqlalchemy import func, select, update

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.pg_cluster import start_cluster, stop_cluster
from tests.store.builders import T0, disk_cycle, host_cycle

from basil.store import Store
from basil.store.models import LEVEL_5MIN, LEVEL_HOUR, DiskRollup, RollupState
from basil.store.samples import (
    DISK,
    DiskRef,
    aggregate,
    merge_rollup_rows,
    record_disk_samples,
    record_host_datastore_samples,
    roll_up,
    workload_percentiles,
)


def bench_inserts(store: Store, disks: int, hosts: int, datastores: int, cycles: int) -> list[float]:
    rng = np.random.default_rng(1)
    times = []
    for i in range(cycles):
        ts = T0 + 20 * i
        disk_batch = disk_cycle(rng, ts, disks)
        host_batch = host_cycle(rng, ts, hosts, datastores)
        start = time.perf_counter()
        with store.session() as session:
            record_disk_samples(session, disk_batch)
            record_host_datastore_samples(session, host_batch)
        times.append(time.perf_counter() - start)
    return times


def bench_rollup(store: Store, cycles: int) -> float:
    start = time.perf_counter()
    with store.session() as session:
        report = roll_up(session, now=T0 + 20 * cycles + 60)
    elapsed = time.perf_counter() - start
    print(f"    rows written: {report.rows}")
    return elapsed


def write_day_of_rollups(store: Store, disks: int, day_start: int) -> None:
    """A day of 5-minute and hourly disk rollups, by the store's own aggregation of synthetic samples."""
    rng = np.random.default_rng(2)
    with store.session() as session:
        ids = [
            row[0] for row in session.execute(select(DISK.series_table.c.id).order_by(DISK.series_table.c.id))
        ]
    ids = ids[:disks]
    series_ids = np.array(ids, dtype=np.int64)
    for hour in range(24):
        start = day_start + hour * 3600
        ts = np.repeat(np.arange(start, start + 3600, 20, dtype=np.int64), len(series_ids))
        series = np.tile(series_ids, 180)
        n = len(ts)
        values = {
            "read_iops": rng.gamma(2.0, 50.0, n),
            "write_iops": rng.gamma(2.0, 30.0, n),
            "read_oio": rng.lognormal(0.5, 0.8, n),
            "write_oio": rng.lognormal(0.0, 0.8, n),
            "read_latency_ms": rng.gamma(3.0, 2.0, n),
            "write_latency_ms": rng.gamma(2.0, 1.5, n),
            "read_io_size_kb": rng.choice([4.0, 8.0, 16.0, 64.0], n),
            "write_io_size_kb": rng.choice([4.0, 32.0], n),
            "small_seeks": rng.integers(0, 100, n).astype(np.float64),
            "medium_seeks": rng.integers(0, 100, n).astype(np.float64),
            "large_seeks": rng.integers(0, 100, n).astype(np.float64),
        }
        five = aggregate(DISK, series, ts, values, LEVEL_5MIN)
        hourly = merge_rollup_rows(DISK, five, LEVEL_HOUR)
        with store.session() as session:
            table = DISK.rollup_table
            for chunk in range(0, len(five), 20_000):
                session.execute(table.insert(), five[chunk : chunk + 20_000])
            session.execute(table.insert(), hourly)
    with store.session() as session:
        for level in (LEVEL_5MIN, LEVEL_HOUR):
            session.execute(
                update(RollupState)
                .where(RollupState.kind == "disk", RollupState.level == level)
                .values(watermark=day_start + 86400)
            )


def bench_queries(store: Store, disks: int) -> None:
    day_start = T0 + 86400  # a day after the insert benchmark's samples
    start = time.perf_counter()
    write_day_of_rollups(store, disks, day_start)
    print(f"    wrote a day of rollups for {disks} disks in {time.perf_counter() - start:.1f} s")
    with store.read_session() as session:
        sizes = session.execute(
            select(DiskRollup.level, func.count(), func.avg(func.length(DiskRollup.sketch))).group_by(
                DiskRollup.level
            )
        ).all()
    for level, count, blob in sizes:
        print(f"    {level} s rollups: {count} rows, mean sketch {float(blob):.0f} bytes")
    disk = DiskRef("vc", f"vm-{disks // 2}", "scsi0:0")
    one: list[float] = []
    for _ in range(20):
        t = time.perf_counter()
        with store.read_session() as session:
            result = workload_percentiles(
                session, day_start, day_start + 86400, 0.9, vcenter="vc", disks=[disk]
            )
        one.append(time.perf_counter() - t)
    p90 = result[disk]
    print(
        f"    p90 over a day, one disk: median {statistics.median(one) * 1000:.1f} ms, "
        f"max {max(one) * 1000:.1f} ms  (samples {p90.samples}, OIO p90 {p90.oio:.2f}, "
        f"IO size p90 {p90.io_size_kb:.1f} KB, read% p90 {p90.read_pct:.1f}, "
        f"random% p90 {p90.random_pct:.1f})"
    )
    t = time.perf_counter()
    with store.read_session() as session:
        everything = workload_percentiles(session, day_start, day_start + 86400, 0.9, vcenter="vc")
    print(f"    p90 over a day, all {len(everything)} disks at once: {time.perf_counter() - t:.2f} s")
    ragged = day_start + 86400 - 7 * 3600 - 130  # not on an hour: hourly + 5-minute rollups
    t = time.perf_counter()
    with store.read_session() as session:
        workload_percentiles(session, ragged - 86400 + 3600, ragged, 0.9, vcenter="vc", disks=[disk])
    elapsed = (time.perf_counter() - t) * 1000
    print(f"    p90 over 23 h ending off the hour (hourly + 5-minute rollups), one disk: {elapsed:.1f} ms")


def run(backend: str, url: str, args: argparse.Namespace) -> None:
    print(f"== {backend}")
    store = Store(url)
    try:
        store.upgrade()
        per_cycle = args.disks + args.hosts * args.datastores
        times = bench_inserts(store, args.disks, args.hosts, args.datastores, args.cycles)
        steady = times[1:]  # the first cycle also registers every disk and host/datastore pair
        print(
            f"  insert: {per_cycle} samples per cycle ({args.disks} disk + {args.hosts * args.datastores} "
            f"host/datastore); first cycle {times[0]:.2f} s, then median {statistics.median(steady):.3f} s, "
            f"max {max(steady):.3f} s -> {per_cycle / statistics.median(steady):,.0f} samples/s "
            f"(budget: one cycle every 20 s)"
        )
        elapsed = bench_rollup(store, args.cycles)
        print(f"  roll-up of one 5-minute bucket ({args.cycles} cycles): {elapsed:.2f} s")
        print("  query:")
        bench_queries(store, args.disks)
    finally:
        store.dispose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backends", default="sqlite,postgresql")
    parser.add_argument("--disks", type=int, default=6000)
    parser.add_argument("--hosts", type=int, default=32)
    parser.add_argument("--datastores", type=int, default=100)
    parser.add_argument("--cycles", type=int, default=15)
    args = parser.parse_args()
    for backend in args.backends.split(","):
        if backend == "sqlite":
            with tempfile.TemporaryDirectory() as tmp:
                run("sqlite", f"sqlite:///{tmp}/bench.db", args)
        elif backend == "postgresql":
            server = start_cluster()
            try:
                server.admin("CREATE DATABASE bench")
                run("postgresql", server.url("bench"), args)
            finally:
                stop_cluster(server)
        else:
            parser.error(f"unknown backend {backend!r}")


if __name__ == "__main__":
    main()
