"""Real-time collection from the lab: samples against the lab's ground truth, batching, increments."""

from __future__ import annotations

import http.client
import itertools
import math
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

import pytest

from basil.vcenter import perf, perf_wire
from basil.vcenter.connection import VCenterConnection
from basil.vcenter.inventory import fetch_inventory
from basil.vcenter.perf import DISK_COUNTERS, HOST_DATASTORE_COUNTERS, CollectorParams, PerfCollector
from basil.vcenter.types import CollectionReport, DiskSample, Inventory

from .labvc import LabVC

pytestmark = pytest.mark.lab

T = TypeVar("T")

NOISE = 0.02  # the adapter scenario's settings.noise_pct


def close(measured: float | None, true: float, rounding: float = 0.5) -> bool:
    """Within 5 sigma of the lab's relative noise, plus vCenter's rounding to whole numbers."""
    assert measured is not None
    return abs(measured - true) <= 5 * NOISE * abs(true) + rounding


@pytest.fixture
def paused(lab_vc: LabVC, conn: VCenterConnection) -> Inventory:
    """The lab stopped at an interval boundary, a few intervals into the scenario."""
    lab_vc.pause()
    lab_vc.step(3)
    return fetch_inventory(conn, with_tags=False)


def by_disk(report: CollectionReport, inv: Inventory) -> dict[tuple[str, str], list[DiskSample]]:
    out: dict[tuple[str, str], list[DiskSample]] = {}
    for s in report.disk_samples:
        out.setdefault((inv.vms[s.vm].name, s.instance), []).append(s)
    return out


def test_disk_samples_match_the_ground_truth(
    lab_vc: LabVC, conn: VCenterConnection, paused: Inventory
) -> None:
    report = PerfCollector(conn).collect(paused)
    truth = lab_vc.truth()
    assert report.errors == ()
    assert report.missing == ()
    samples = by_disk(report, paused)
    # Real-time statistics exist for running VMs only.
    running = [t for t in truth["disks"] if paused.vm_by_name(t["vm"]).powered_on]
    assert len(running) < len(truth["disks"])
    assert sorted(samples) == sorted((t["vm"], t["unit"]) for t in running)
    end = truth["to"].replace("Z", "+00:00")
    for t in running:
        (s,) = samples[(t["vm"], t["unit"])]
        assert s.timestamp.isoformat() == end, "sample stamped with vCenter's sample time"
        assert s.interval_s == 20
        assert close(s.read_iops, t["read_iops"]), (t, s)
        assert close(s.write_iops, t["write_iops"]), (t, s)
        # vCenter reports latency in whole milliseconds.
        assert close(s.read_latency_ms, t["read_latency_ms"], rounding=1.0), (t, s)
        assert close(s.write_latency_ms, t["write_latency_ms"], rounding=1.0), (t, s)
        assert close(s.read_kbps, t["read_kbps"]), (t, s)
        # readLatencyUS/writeLatencyUS: the same latency in whole microseconds.
        assert close(s.read_latency_us, t["read_latency_ms"] * 1000, rounding=1.0), (t, s)
        assert close(s.write_latency_us, t["write_latency_ms"] * 1000, rounding=1.0), (t, s)


def test_workload_parameters_match_the_scenario(
    paused: Inventory, conn: VCenterConnection, lab_vc: LabVC
) -> None:
    report = PerfCollector(conn).collect(paused)
    samples = by_disk(report, paused)
    for vm in lab_vc.scenario["vms"]:
        for disk in vm["disks"]:
            w = disk.get("workload")
            if w is None or vm.get("powered_on") is False:
                continue
            (s,) = samples[(vm["name"], disk["unit"])]
            # Outstanding IOs are a closed loop's population: reads + writes = the workload's OIO
            # (vCenter reports whole numbers).
            assert s.oio is not None
            assert abs(s.oio - w["oio"]) <= 1.0, (vm["name"], s)
            assert s.read_io_size_kb == pytest.approx(w["io_size_kb"], rel=0.1)
            if w["read_pct"] < 100:
                assert s.write_io_size_kb == pytest.approx(w["io_size_kb"], rel=0.1)
            assert s.read_pct is not None
            assert abs(s.read_pct - w["read_pct"]) <= 10, (vm["name"], s)
            assert s.random_pct is not None
            assert abs(s.random_pct - w["random_pct"]) <= 10, (vm["name"], s)


def test_host_datastore_samples_add_up_per_datastore(
    paused: Inventory, conn: VCenterConnection, lab_vc: LabVC
) -> None:
    report = PerfCollector(conn).collect(paused)
    truth = {d["moid"]: d for d in lab_vc.truth()["datastores"]}
    per_ds: dict[str, float] = {}
    pairs = set()
    for s in report.host_datastore_samples:
        pairs.add((s.host, s.datastore))
        per_ds[s.datastore] = per_ds.get(s.datastore, 0.0) + (s.iops or 0.0)
    # Every mounted (host, datastore) pair of a connected host is sampled.
    expected = {(h.moid, d) for h in paused.hosts.values() for d in h.datastores}
    assert pairs == expected
    for moid, t in truth.items():
        # Summed over hosts, the device sees the datastore's IOPS (each host's figure is rounded).
        hosts = sum(1 for h, d in pairs if d == moid)
        assert abs(per_ds.get(moid, 0.0) - t["iops"]) <= 5 * NOISE * t["iops"] + hosts, (moid, t)


def test_collection_is_incremental_per_entity(
    lab_vc: LabVC, conn: VCenterConnection, paused: Inventory
) -> None:
    collector = PerfCollector(conn)
    first = collector.collect(paused)
    n_disks = len(first.disk_samples)
    assert n_disks == sum(len(v.disks) for v in paused.vms.values() if v.powered_on)
    again = collector.collect(paused)
    assert again.disk_samples == ()
    assert again.host_datastore_samples == ()
    lab_vc.step(3)
    later = collector.collect(paused)
    assert len(later.disk_samples) == 3 * n_disks  # exactly the three new samples, no repeat
    newest = max(s.timestamp for s in first.disk_samples)
    assert min(s.timestamp for s in later.disk_samples) > newest
    times = sorted({s.timestamp for s in later.disk_samples})
    assert [(b - a).total_seconds() for a, b in itertools.pairwise(times)] == [20.0, 20.0]


def test_batches_respect_max_query_metrics(lab_vc: LabVC, conn: VCenterConnection, paused: Inventory) -> None:
    # Make the lab refuse real-time queries above 20 metrics, as it does historical ones.
    lab_vc.settings(max_query_metrics=20, cap_realtime_queries=True)
    collector = PerfCollector(conn)
    assert collector.max_query_metrics() == 20
    report = collector.collect(paused)
    assert report.errors == ()
    vms = sum(1 for v in paused.vms.values() if v.powered_on)
    hosts = len(paused.hosts)
    # Each VM's 15 counters fit alone; two VMs (30) do not; each host's 10 counters pair up.
    per_vm = math.ceil(len(DISK_COUNTERS) / 20)
    assert report.requests == vms * per_vm + math.ceil(hosts / (20 // len(HOST_DATASTORE_COUNTERS)))
    assert len(report.disk_samples) == sum(len(v.disks) for v in paused.vms.values() if v.powered_on)


def test_a_refused_query_is_split_and_the_budget_lowered(
    lab_vc: LabVC, conn: VCenterConnection, paused: Inventory
) -> None:
    lab_vc.settings(max_query_metrics=16, cap_realtime_queries=True)
    collector = PerfCollector(conn, CollectorParams(max_query_metrics=256))  # believes in a higher cap
    report = collector.collect(paused)
    assert report.errors == ()
    assert collector.max_query_metrics() <= 16
    assert len(report.disk_samples) == sum(len(v.disks) for v in paused.vms.values() if v.powered_on)


def test_a_failed_batch_is_reported_and_caught_up_next_cycle(
    lab_vc: LabVC, conn: VCenterConnection, paused: Inventory
) -> None:
    collector = PerfCollector(conn, CollectorParams(workers=1))
    # Two refusals: the fast CSV path hands any fault to pyVmomi's path, which asks once more.
    lab_vc.add_fault(method="QueryPerf", fault="SystemError", message="stats collector restarting", count=2)
    first = collector.collect(paused)
    assert len(first.errors) == 1
    assert "stats collector restarting" in first.errors[0]
    assert len(first.disk_samples) + len(first.host_datastore_samples) > 0
    got_first = {(s.vm, s.instance) for s in first.disk_samples}
    lab_vc.step(1)
    second = collector.collect(paused)
    assert second.errors == ()
    # Entities of the failed batch deliver both of their samples now; the others just the new one.
    counts: dict[tuple[str, str], int] = {}
    for s in second.disk_samples:
        counts[(s.vm, s.instance)] = counts.get((s.vm, s.instance), 0) + 1
    for key, n in counts.items():
        assert n == (1 if key in got_first else 2), key


def test_powered_off_vms_are_not_queried_and_gaps_are_reported(
    lab_vc: LabVC, conn: VCenterConnection, paused: Inventory
) -> None:
    off = paused.vm_by_name("off-1")
    collector = PerfCollector(conn)
    batches, missing = collector.plan(paused)
    assert off.moid not in {u.entity for b in batches for u in b}
    assert missing == []
    # An inaccessible datastore still answers for its hosts, or is reported missing: never fatal.
    lab_vc.set_accessible("ds-nfs", False)
    lab_vc.step(1)
    report = collector.collect(paused)
    assert report.errors == ()
    nfs = paused.datastore_by_name("ds-nfs").moid
    delivered = {s.datastore for s in report.host_datastore_samples}
    assert nfs in delivered or any(m.name == nfs and m.what == "instance" for m in report.missing)


class _Overlap:
    """How many threads are inside the wrapped calls at once, at most (each call lingers a little so
    that calls left to overlap do)."""

    def __init__(self, linger_s: float) -> None:
        self.linger_s = linger_s
        self.inside = self.most = 0
        self._lock = threading.Lock()

    def wrap(self, fn: Callable[..., T]) -> Callable[..., T]:
        def wrapped(*args: Any, **kw: Any) -> T:
            with self._lock:
                self.inside += 1
                self.most = max(self.most, self.inside)
            try:
                time.sleep(self.linger_s)
                return fn(*args, **kw)
            finally:
                with self._lock:
                    self.inside -= 1

        return wrapped


def test_queries_overlap_on_the_network_but_one_thread_parses_at_a_time(
    lab_vc: LabVC, conn: VCenterConnection, paused: Inventory, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Many small queries, four in flight: the Python work of a cycle (writing requests, parsing answers,
    # turning them into samples) is done by one thread at a time, so that the other threads of the
    # process (basil serve's requests) compete with one collection thread for the GIL, not with four.
    lab_vc.settings(max_query_metrics=20, cap_realtime_queries=True)
    python_work = _Overlap(0.005)
    network = _Overlap(0.02)  # as if vCenter took 20 ms to answer
    monkeypatch.setattr(perf_wire, "parse_answer", python_work.wrap(perf_wire.parse_answer))
    monkeypatch.setattr(perf._Cycle, "_take", python_work.wrap(perf._Cycle._take))
    monkeypatch.setattr(
        http.client.HTTPConnection, "getresponse", network.wrap(http.client.HTTPConnection.getresponse)
    )
    report = PerfCollector(conn, CollectorParams(workers=4)).collect(paused)
    assert report.errors == ()
    assert report.requests > 4  # more queries than workers
    assert len(report.disk_samples) == sum(len(v.disks) for v in paused.vms.values() if v.powered_on)
    assert network.most > 1, "the queries no longer overlap on the network"
    assert python_work.most == 1, "several collection threads did Python work at once"


def test_the_counter_list_is_read_once_per_vcenter_build(lab_vc: LabVC) -> None:
    """A new connection to the same vCenter (a re-connect of ``basil serve``) does not read the counter list
    again: parsing it through pyVmomi is most of a second in a busy serving process."""
    perf._counter_lists.clear()
    with VCenterConnection(lab_vc.connection_params()) as first:
        before = first.requests_made
        ids = PerfCollector(first).counter_ids()
        assert first.requests_made > before  # read from vCenter
    assert {"virtualDisk.numberReadAveraged.average", "datastore.totalReadLatency.average"} <= set(ids)
    with VCenterConnection(lab_vc.connection_params()) as second:
        before = second.requests_made
        assert PerfCollector(second).counter_ids() == ids
        assert second.requests_made == before  # known for this vCenter's instance, version and build
    assert len(perf._counter_lists) == 1
