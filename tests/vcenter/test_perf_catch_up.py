"""Catching up a backlog from the lab: an hour of samples in bounded windows and chunks, none lost or
repeated, also when the sink or a query fails half-way."""

from __future__ import annotations

import dataclasses
import itertools
from collections import Counter
from collections.abc import Callable, Iterable
from datetime import datetime, timedelta

import pytest

from basil.vcenter.connection import VCenterConnection
from basil.vcenter.inventory import fetch_inventory
from basil.vcenter.perf import DISK_COUNTERS, CollectorParams, PerfCollector
from basil.vcenter.types import Inventory, SampleChunk

from .labvc import LabVC

pytestmark = pytest.mark.lab

HOUR = 180  # 20 s intervals: what vCenter keeps of real-time samples
STEP = timedelta(seconds=20)
# Small windows and chunks, and one entity per query (a VM's counters fill the budget), so that an
# hour is many of each.
PARAMS = CollectorParams(
    workers=1, max_query_metrics=len(DISK_COUNTERS), window_samples=15, max_rounds=16, chunk_samples=40
)

Key = tuple[str, str, datetime]  # (VM or host, disk instance or datastore, sample time)


class StoreDownError(Exception):
    """What a sink raises when it cannot keep a chunk."""


class Recorder:
    """A sink that keeps every chunk it accepts; it can refuse the n-th, or act after accepting one."""

    def __init__(self, refuse: int | None = None, after: Callable[[int], None] | None = None) -> None:
        self.chunks: list[SampleChunk] = []
        self.refuse = refuse
        self.after = after
        self.offered = 0

    def __call__(self, chunk: SampleChunk) -> None:
        self.offered += 1
        if self.offered == self.refuse:
            raise StoreDownError("the store is down")
        self.chunks.append(chunk)
        if self.after is not None:
            self.after(len(self.chunks))


def keys(chunks: Iterable[SampleChunk]) -> list[Key]:
    out: list[Key] = []
    for chunk in chunks:
        out += [(s.vm, s.instance, s.timestamp) for s in chunk.disk_samples]
        out += [(s.host, s.datastore, s.timestamp) for s in chunk.host_datastore_samples]
    return out


def by_series(samples: Iterable[Key]) -> dict[tuple[str, str], list[datetime]]:
    series: dict[tuple[str, str], list[datetime]] = {}
    for entity, instance, ts in samples:
        series.setdefault((entity, instance), []).append(ts)
    return {k: sorted(v) for k, v in series.items()}


def assert_every_interval_once(samples: list[Key], after: datetime, until: datetime) -> None:
    """Each series has exactly one sample per 20 s interval in (after, until]: no gap, no repeat."""
    expected = [after + STEP * i for i in range(1, round((until - after) / STEP) + 1)]
    series = by_series(samples)
    assert series
    for key, times in series.items():
        assert times == expected, (key, len(times), len(expected))


def series_of(inv: Inventory) -> int:
    disks = sum(len(v.disks) for v in inv.vms.values() if v.powered_on)
    return disks + sum(len(h.datastores) for h in inv.hosts.values())


@pytest.fixture
def paused(lab_vc: LabVC, conn: VCenterConnection) -> Inventory:
    lab_vc.pause()
    lab_vc.step(3)
    return fetch_inventory(conn, with_tags=False)


@pytest.fixture
def caught_up(conn: VCenterConnection, paused: Inventory) -> tuple[PerfCollector, datetime]:
    """A collector that has every entity's newest sample, and that sample's time."""
    collector = PerfCollector(conn, PARAMS)
    first = collector.collect(paused)
    times = {s.timestamp for s in first.disk_samples} | {s.timestamp for s in first.host_datastore_samples}
    assert len(times) == 1
    return collector, times.pop()


def test_an_hour_of_backlog_comes_in_windows_and_chunks(
    lab_vc: LabVC, paused: Inventory, caught_up: tuple[PerfCollector, datetime]
) -> None:
    collector, t0 = caught_up
    lab_vc.step(HOUR)
    sink = Recorder()
    report = collector.collect(paused, sink=sink)
    assert report.errors == ()
    assert report.behind == 0
    assert report.disk_samples == ()  # streamed, not gathered
    assert report.host_datastore_samples == ()
    # Rounds of 15-sample windows; every entity is behind in every round, one query each.
    assert report.rounds == HOUR // PARAMS.window_samples
    assert report.requests == report.rounds * report.entities
    assert report.disk_sample_count + report.host_sample_count == HOUR * series_of(paused)
    assert report.chunks == len(sink.chunks)
    widest = max(
        [len(v.disks) for v in paused.vms.values()] + [len(h.datastores) for h in paused.hosts.values()]
    )
    for chunk in sink.chunks:
        # A chunk holds at most one window per series, and closes once it reaches chunk_samples.
        assert max(Counter(k[:2] for k in keys([chunk])).values()) <= PARAMS.window_samples
        assert len(chunk) < PARAMS.chunk_samples + PARAMS.window_samples * widest
    assert len(sink.chunks) > report.rounds  # several chunks per round
    assert {c.round for c in sink.chunks} == set(range(report.rounds))
    assert_every_interval_once(keys(sink.chunks), t0, t0 + HOUR * STEP)
    # Caught up: the next interval is one sample per series, in one round.
    lab_vc.step(1)
    after = collector.collect(paused)
    assert after.rounds == 1
    assert_every_interval_once(
        keys([SampleChunk(after.disk_samples, after.host_datastore_samples, 0)]),
        t0 + HOUR * STEP,
        t0 + (HOUR + 1) * STEP,
    )


def test_a_backlog_longer_than_vcenter_keeps_starts_at_its_oldest_sample(
    lab_vc: LabVC, paused: Inventory, caught_up: tuple[PerfCollector, datetime]
) -> None:
    collector, t0 = caught_up
    lab_vc.step(HOUR + 30)
    now = t0 + (HOUR + 30) * STEP
    sink = Recorder()
    report = collector.collect(paused, sink=sink)
    assert report.errors == ()
    assert report.behind == 0
    # Nothing is asked for before vCenter's hour, so no window is wasted on samples that are gone.
    assert report.rounds == HOUR // PARAMS.window_samples
    assert_every_interval_once(keys(sink.chunks), now - HOUR * STEP, now)


def test_when_the_rounds_run_out_the_next_cycle_goes_on(
    lab_vc: LabVC, conn: VCenterConnection, paused: Inventory, caught_up: tuple[PerfCollector, datetime]
) -> None:
    _, t0 = caught_up
    collector = PerfCollector(conn, dataclasses.replace(PARAMS, max_rounds=5))
    collector.resume(caught_up[0].last_sample_times)
    lab_vc.step(HOUR)
    first = Recorder()
    report = collector.collect(paused, sink=first)
    assert report.rounds == 5
    assert report.behind == report.entities
    assert report.disk_sample_count == 5 * PARAMS.window_samples * sum(
        len(v.disks) for v in paused.vms.values() if v.powered_on
    )
    later = Recorder()
    rounds = [report.rounds]
    while report.behind:
        report = collector.collect(paused, sink=later)
        rounds.append(report.rounds)
    assert rounds == [5, 5, HOUR // PARAMS.window_samples - 10]
    assert_every_interval_once(keys(first.chunks + later.chunks), t0, t0 + HOUR * STEP)


def test_a_sink_that_fails_half_way_loses_nothing(
    lab_vc: LabVC, paused: Inventory, caught_up: tuple[PerfCollector, datetime]
) -> None:
    collector, t0 = caught_up
    lab_vc.step(HOUR)
    failing = Recorder(refuse=5)
    with pytest.raises(StoreDownError):
        collector.collect(paused, sink=failing)
    assert len(failing.chunks) == 4
    # The refused chunk's entities were not moved on: the next cycle fetches from where the accepted
    # chunks ended, and only that.
    sink = Recorder()
    report = collector.collect(paused, sink=sink)
    assert report.errors == ()
    assert report.behind == 0
    assert_every_interval_once(keys(failing.chunks + sink.chunks), t0, t0 + HOUR * STEP)


def test_a_query_that_fails_half_way_is_retried_next_cycle(
    lab_vc: LabVC, paused: Inventory, caught_up: tuple[PerfCollector, datetime]
) -> None:
    collector, t0 = caught_up
    lab_vc.step(HOUR)

    def fault_after_third(accepted: int) -> None:
        if accepted == 3:
            # Two refusals: the fast CSV path hands a fault to pyVmomi's path, which asks once more.
            lab_vc.add_fault(method="QueryPerf", fault="SystemError", message="stats restarting", count=2)

    first = Recorder(after=fault_after_third)
    report = collector.collect(paused, sink=first)
    assert len(report.errors) == 1
    assert "stats restarting" in report.errors[0]
    assert report.behind == 0  # the failed entity sits this cycle out; everyone else caught up
    second = Recorder()
    again = collector.collect(paused, sink=second)
    assert again.errors == ()
    # Only the entity whose query failed was still behind, and it goes on where it stopped.
    assert len({k[0] for k in keys(second.chunks)}) == 1
    assert again.rounds > 1
    assert_every_interval_once(keys(first.chunks + second.chunks), t0, t0 + HOUR * STEP)


def test_resumed_bookmarks_pass_over_windows_without_samples(
    lab_vc: LabVC, conn: VCenterConnection, paused: Inventory
) -> None:
    lab_vc.step(30)
    entities = [v.moid for v in paused.vms.values() if v.powered_on] + list(paused.hosts)
    end = datetime.fromisoformat(lab_vc.truth()["to"].replace("Z", "+00:00"))
    # Ten minutes before the lab's first sample: the first windows hold nothing at all.
    since = end - 33 * STEP - timedelta(minutes=10)
    everything = PerfCollector(conn, CollectorParams(window_samples=HOUR))
    assert everything.resume(dict.fromkeys(entities, since)) == len(entities)
    reference = everything.collect(paused)
    assert reference.rounds == 1
    collector = PerfCollector(conn, PARAMS)
    assert collector.resume(dict.fromkeys(entities, since)) == len(entities)
    assert collector.resume(dict.fromkeys(entities, end)) == 0  # its own bookmarks are kept
    sink = Recorder()
    report = collector.collect(paused, sink=sink)
    assert report.behind == 0
    assert 0 not in {c.round for c in sink.chunks}  # round 0 found nothing and moved on
    got = keys(sink.chunks)
    assert len(got) == len(set(got))
    assert sorted(got) == sorted(
        keys([SampleChunk(reference.disk_samples, reference.host_datastore_samples, 0)])
    )
    newest = {times[-1] for times in by_series(got).values()}
    assert newest == {end}
    assert all((b - a) == STEP for times in by_series(got).values() for a, b in itertools.pairwise(times))
