"""Collection: the adapter's typed real-time samples mapped onto the store's records, on vCenter's clock.

A sample that lacks a counter the store needs (IOPS or OIO; latency or IO size on a side that did
IO) is left out and counted as incomplete, never guessed; counters vCenter does not deliver at all
come back in the report. The newest sample time is "now" for everything downstream (models,
retention, rollups), so the lab's accelerated clock and a vCenter whose clock differs from ours
both work.

A cycle's samples arrive in chunks (:class:`~basil.vcenter.types.SampleChunk`) and each is stored in
its own transaction as it comes (:class:`CollectionWriter`), so a cycle that catches up an hour of
backlog never holds more than a chunk of it. Between two chunks of a cycle the writer pauses
(``CHUNK_PAUSE_S``, the GIL and the store's write lock released): an API write waiting for the lock
and the API's threads get in, instead of the whole catch-up running as one stall.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TypeVar

from basil.store import Store
from basil.store.samples import (
    DiskSampleIn,
    HostDatastoreSampleIn,
    record_disk_samples,
    record_host_datastore_samples,
)
from basil.vcenter.types import CollectionReport, DiskSample, HostDatastoreSample, SampleChunk

_S = TypeVar("_S", DiskSample, HostDatastoreSample)

#: The writer's pause between two chunks of one cycle: the API's threads and a write waiting for the
#: store's lock (SQLite's busy handler retries within milliseconds at first) get in. A regular cycle is
#: one chunk and never pauses; an hour's catch-up pauses about 0.3 s on the bench's 300 disks (15
#: chunks) and about 6 s on the lab's large scenario of 6,000 disks (about 300 chunks, 54 s in all).
CHUNK_PAUSE_S = 0.02


def pause_between_chunks(seconds: float) -> None:
    time.sleep(seconds)  # releases the GIL; the store's write lock is not held here


def _ts(moment: datetime) -> int:
    return int(moment.astimezone(UTC).timestamp())


def _side(iops: float | None, *values: float | None) -> tuple[float, ...] | None:
    """The values of one side (reads or writes): 0 where the side did no IO, None if one is unknown."""
    if iops is None:
        return None
    if iops <= 0:
        return tuple(v if v is not None else 0.0 for v in values)
    if any(v is None for v in values):
        return None
    return tuple(float(v) for v in values if v is not None)


def disk_record(vcenter: str, s: DiskSample) -> DiskSampleIn | None:
    """The store's row for one disk sample, or None when a needed counter is missing."""
    if s.read_oio is None or s.write_oio is None:
        return None
    read = _side(s.read_iops, s.read_latency_ms, s.read_io_size_kb)
    write = _side(s.write_iops, s.write_latency_ms, s.write_io_size_kb)
    if read is None or write is None or s.read_iops is None or s.write_iops is None:
        return None
    # The adapter reduces the seek histogram to random % already; the store keeps a histogram, so
    # random % is written back as a 100-IO histogram (medium = random, small = sequential).
    small = medium = large = None
    if s.random_pct is not None:
        small, medium, large = 100.0 - s.random_pct, s.random_pct, 0.0
    return DiskSampleIn(
        vcenter=vcenter,
        vm=s.vm,
        instance=s.instance,
        ts=_ts(s.timestamp),
        read_iops=s.read_iops,
        write_iops=s.write_iops,
        read_oio=s.read_oio,
        write_oio=s.write_oio,
        read_latency_ms=read[0],
        write_latency_ms=write[0],
        read_io_size_kb=read[1],
        write_io_size_kb=write[1],
        small_seeks=small,
        medium_seeks=medium,
        large_seeks=large,
        read_latency_us=s.read_latency_us if s.read_iops else None,
    )


def host_datastore_record(vcenter: str, s: HostDatastoreSample) -> HostDatastoreSampleIn | None:
    """The store's row for one host-datastore sample, or None when a needed counter is missing."""
    if s.read_oio is None or s.write_oio is None:
        return None
    read = _side(s.read_iops, s.read_latency_ms)
    write = _side(s.write_iops, s.write_latency_ms)
    if read is None or write is None or s.read_iops is None or s.write_iops is None:
        return None
    return HostDatastoreSampleIn(
        vcenter=vcenter,
        host=s.host,
        datastore=s.datastore,
        ts=_ts(s.timestamp),
        read_iops=s.read_iops,
        write_iops=s.write_iops,
        read_oio=s.read_oio,
        write_oio=s.write_oio,
        read_latency_ms=read[0],
        write_latency_ms=write[0],
        # Throughput only feeds the mean IO size of the device model's §4.1 filter; unknown reads as 0.
        read_kbps=s.read_kbps or 0.0,
        write_kbps=s.write_kbps or 0.0,
        max_queue_depth=s.max_queue_depth,
    )


@dataclass(frozen=True)
class CollectionOutcome:
    """What one collection cycle stored."""

    vcenter: str
    disk_samples: int
    host_samples: int
    stored: int
    duplicates: int
    incomplete: int
    requests: int
    missing_counters: tuple[str, ...]
    missing: int
    errors: tuple[str, ...]
    latest: datetime | None  # vCenter time of the newest sample
    latest_disk: dict[tuple[str, str], DiskSample] = field(default_factory=dict, repr=False)
    latest_host: dict[tuple[str, str], HostDatastoreSample] = field(default_factory=dict, repr=False)
    rounds: int = 1
    chunks: int = 0
    behind: int = 0

    def summary(self) -> dict[str, object]:
        return {
            "vcenter": self.vcenter,
            "disk_samples": self.disk_samples,
            "host_samples": self.host_samples,
            "stored": self.stored,
            "duplicates": self.duplicates,
            "incomplete": self.incomplete,
            "requests": self.requests,
            "rounds": self.rounds,
            "chunks": self.chunks,
            "behind": self.behind,
            "missing_counters": list(self.missing_counters),
            "missing": self.missing,
            "errors": list(self.errors),
            "latest": self.latest.isoformat() if self.latest else None,
        }


def latest_by_key(
    disks: Sequence[DiskSample], hosts: Sequence[HostDatastoreSample]
) -> tuple[dict[tuple[str, str], DiskSample], dict[tuple[str, str], HostDatastoreSample]]:
    """The newest sample of each disk (vm, instance) and each (host, datastore)."""
    d: dict[tuple[str, str], DiskSample] = {}
    for s in disks:
        key = (s.vm, s.instance)
        if key not in d or s.timestamp > d[key].timestamp:
            d[key] = s
    h: dict[tuple[str, str], HostDatastoreSample] = {}
    for x in hosts:
        hkey = (x.host, x.datastore)
        if hkey not in h or x.timestamp > h[hkey].timestamp:
            h[hkey] = x
    return d, h


def keep_newer(into: dict[tuple[str, str], _S], newer: Mapping[tuple[str, str], _S]) -> None:
    """Merge *newer* into *into*, keeping for each key the sample with the later timestamp."""
    for key, sample in newer.items():
        old = into.get(key)
        if old is None or sample.timestamp >= old.timestamp:
            into[key] = sample


@dataclass(frozen=True)
class StoredChunk:
    """One chunk once it is in the store: what it added, for the service's in-memory view."""

    disk_samples: int
    host_samples: int
    incomplete: int
    latest: datetime | None
    latest_disk: dict[tuple[str, str], DiskSample]
    latest_host: dict[tuple[str, str], HostDatastoreSample]


class CollectionWriter:
    """The sink of a collection cycle: stores each chunk in its own transaction and keeps the tallies.

    A chunk that fails to store raises out of the collector, which then keeps that chunk's
    entities where they were: the next cycle fetches those samples again (the store is idempotent).
    """

    def __init__(
        self, store: Store, vcenter: str, on_stored: Callable[[StoredChunk], None] | None = None
    ) -> None:
        self.store = store
        self.vcenter = vcenter
        self.on_stored = on_stored
        self.disk_samples = self.host_samples = 0
        self.stored = self.duplicates = self.incomplete = self.chunks = 0
        self.latest: datetime | None = None
        self.latest_disk: dict[tuple[str, str], DiskSample] = {}
        self.latest_host: dict[tuple[str, str], HostDatastoreSample] = {}

    def __call__(self, chunk: SampleChunk) -> None:
        vcenter = self.vcenter
        disk_rows = [r for r in (disk_record(vcenter, s) for s in chunk.disk_samples) if r is not None]
        host_rows = [
            r
            for r in (host_datastore_record(vcenter, s) for s in chunk.host_datastore_samples)
            if r is not None
        ]
        incomplete = (
            len(chunk.disk_samples) - len(disk_rows) + len(chunk.host_datastore_samples) - len(host_rows)
        )
        times = [s.timestamp for s in chunk.disk_samples] + [
            s.timestamp for s in chunk.host_datastore_samples
        ]
        latest = max(times) if times else None
        if disk_rows or host_rows:
            if self.chunks:
                pause_between_chunks(CHUNK_PAUSE_S)
            with self.store.session() as session:
                a = record_disk_samples(session, disk_rows, latest)
                b = record_host_datastore_samples(session, host_rows, latest)
            self.stored += a.offered - a.duplicates + b.offered - b.duplicates
            self.duplicates += a.duplicates + b.duplicates
        self.chunks += 1
        self.disk_samples += len(chunk.disk_samples)
        self.host_samples += len(chunk.host_datastore_samples)
        self.incomplete += incomplete
        if latest is not None and (self.latest is None or latest > self.latest):
            self.latest = latest
        latest_disk, latest_host = latest_by_key(chunk.disk_samples, chunk.host_datastore_samples)
        keep_newer(self.latest_disk, latest_disk)
        keep_newer(self.latest_host, latest_host)
        if self.on_stored is not None:
            self.on_stored(
                StoredChunk(
                    disk_samples=len(chunk.disk_samples),
                    host_samples=len(chunk.host_datastore_samples),
                    incomplete=incomplete,
                    latest=latest,
                    latest_disk=latest_disk,
                    latest_host=latest_host,
                )
            )

    def outcome(self, report: CollectionReport) -> CollectionOutcome:
        """The cycle's outcome once the collector has returned *report*."""
        return CollectionOutcome(
            vcenter=self.vcenter,
            disk_samples=self.disk_samples,
            host_samples=self.host_samples,
            stored=self.stored,
            duplicates=self.duplicates,
            incomplete=self.incomplete,
            requests=report.requests,
            missing_counters=report.missing_counters,
            missing=len(report.missing),
            errors=report.errors,
            latest=self.latest,
            latest_disk=self.latest_disk,
            latest_host=self.latest_host,
            rounds=report.rounds,
            chunks=self.chunks,
            behind=report.behind,
        )
