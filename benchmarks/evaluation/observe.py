"""From the lab's vCenter counters to Basil's snapshot, with the core's own public types and models.

The quantities are those the service collects (basil.vcenter.perf, basil.app.modelling): per
datastore and interval the read-side ``datastore.*`` counters (OIO, latency in whole ms, IOPS, IO
size), aggregated over the hosts as the service's store does, as device samples, with the write side
alongside (the core's write-cache transient filter reads it), per
virtual disk OIO, IO size, read % and random % (from the seek histogram) as workload samples. Every
measured interval so far is kept, as the service's 24 h window would.

Microsecond read latency, as the service derives it (basil.app.modelling): an interval's sample of a
datastore gets ``latency_us``, the read-IOPS-weighted mean of ``virtualDisk.readLatencyUS`` over the
disks on that datastore, when those disks' read IOPS account for the hosts' (within 10 % + 2 IOPS);
otherwise the sample keeps only its whole-millisecond latency.

Each datastore is configured with its device kind and device count from the scenario's description
(``device_kind``, ``spindles``), as an administrator would configure them, so a datastore without a
credible fit gets the core's prior.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from basil.core.device_model import OP_WRITE, PER_DEVICE_P, DeviceSample
from basil.core.snapshot import Datastore, Disk, Snapshot
from basil.core.workload_model import WorkloadSample

from .labtool import Placement

ALL_HOSTS = "all-hosts"  # the service's samples are per interval, aggregated over hosts (BASIL §6.1)

# The service's coverage rule for µs latency (basil.app.modelling.COVERAGE_REL / COVERAGE_ABS_IOPS).
COVERAGE_REL = 0.10
COVERAGE_ABS_IOPS = 2.0


def micro_latency(host_read_iops: float, disk_read_iops: float, weighted_us: float) -> float | None:
    """A host-and-datastore interval's µs read latency from its disks' ``readLatencyUS``, or ``None``
    when the disks do not account for the host's read IOPS. *weighted_us* is Σ read IOPS × µs."""
    if disk_read_iops <= 0:
        return None
    if abs(disk_read_iops - host_read_iops) > COVERAGE_REL * host_read_iops + COVERAGE_ABS_IOPS:
        return None
    return weighted_us / disk_read_iops


@dataclass(slots=True)
class Observations:
    """Everything vCenter reported for a pod so far: samples per datastore and per disk."""

    device: dict[str, list[DeviceSample]] = field(default_factory=lambda: defaultdict(list))
    workload: dict[str, list[WorkloadSample]] = field(default_factory=lambda: defaultdict(list))
    iops: dict[str, float] = field(default_factory=dict)  # per disk, mean over the latest window
    now: float = 0.0

    def add(self, measured: dict[str, Any], where: Placement) -> None:
        """Add one measurement's intervals (the answer of ``LabTool.measure``); *where* is every disk's
        datastore while it was measured (for the µs latency of each datastore)."""
        iops_sum: dict[str, float] = defaultdict(float)
        intervals = measured["intervals"]
        for interval in intervals:
            t = float(interval["time"])
            self.now = max(self.now, t)
            disk_iops: dict[str, float] = defaultdict(float)
            disk_us: dict[str, float] = defaultdict(float)
            for d in interval["disks"]:
                disk_iops[where[d["id"]]] += d["read_iops"]
                disk_us[where[d["id"]]] += d["read_iops"] * d["read_latency_us"]
            for ds, rows in _by_datastore(interval["hosts"]).items():
                self.device[ds].extend(_device_samples(rows, t, disk_iops[ds], disk_us[ds]))
            for d in interval["disks"]:
                total = d["read_iops"] + d["write_iops"]
                iops_sum[d["id"]] += total
                seeks = d["small_seeks"] + d["medium_seeks"] + d["large_seeks"]
                if total <= 0 or seeks <= 0:
                    continue  # an idle interval says nothing of the workload's shape
                self.workload[d["id"]].append(
                    WorkloadSample(
                        oio=float(d["read_oio"] + d["write_oio"]),
                        io_size_kb=(d["read_kbps"] + d["write_kbps"]) / total,
                        read_pct=100.0 * d["read_iops"] / total,
                        random_pct=100.0 * (d["medium_seeks"] + d["large_seeks"]) / seeks,
                        time=t,
                        read_oio=float(d["read_oio"]),
                    )
                )
        n = max(1, len(intervals))
        self.iops = {disk: s / n for disk, s in iops_sum.items()}


def _by_datastore(rows: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for h in rows:
        out[h["datastore"]].append(h)
    return out


def _device_samples(
    rows: list[dict[str, Any]], t: float, disk_iops: float, disk_us: float
) -> list[DeviceSample]:
    """One interval of one datastore over every host that uses it, as the service's store query
    aggregates it (OIO summed, latency and IO size IOPS-weighted): a read sample, with ``latency_us``
    when the disks account for the hosts' read IOPS, and a write sample when there were writes."""
    reads = float(sum(h["read_iops"] for h in rows))
    writes = float(sum(h["write_iops"] for h in rows))
    out = [
        DeviceSample(
            host=ALL_HOSTS,
            oio=float(sum(h["read_oio"] for h in rows)),
            latency_ms=sum(h["read_iops"] * h["read_latency_ms"] for h in rows) / reads if reads else 0.0,
            iops=reads,
            io_size_kb=sum(h["read_kbps"] for h in rows) / reads if reads else 0.0,
            seq_pct=0.0,  # not measured per datastore; the service leaves it to the size filter
            time=t,
            latency_us=micro_latency(reads, disk_iops, disk_us),
        )
    ]
    if writes > 0:
        out.append(
            DeviceSample(
                host=ALL_HOSTS,
                oio=0.0,
                latency_ms=sum(h["write_iops"] * h["write_latency_ms"] for h in rows) / writes,
                iops=writes,
                io_size_kb=0.0,
                seq_pct=0.0,
                time=t,
                op=OP_WRITE,
            )
        )
    return out


def snapshot(description: dict[str, Any], placement: Placement, seen: Observations) -> Snapshot:
    """Basil's snapshot of the pod, disks where *placement* says (the others where the scenario put them)."""
    where = {d["id"]: placement.get(d["id"], d["datastore"]) for d in description["disks"]}
    used: dict[str, float] = defaultdict(float)
    for d in description["disks"]:
        used[where[d["id"]]] += d["size_gb"]
    pod = description["pod"]
    stores = tuple(
        Datastore(
            name=s["name"],
            capacity_gb=s["capacity_gb"],
            free_gb=max(0.0, s["capacity_gb"] - s["fixed_gb"] - used[s["name"]]),
            hosts=frozenset(s["hosts"]),
            maintenance=s["maintenance"],
            samples=tuple(seen.device.get(s["name"], ())),
            pod=pod,
            device_kind=s["kind"] if s["kind"] in PER_DEVICE_P else None,
            spindles=s["devices"] if s["kind"] in PER_DEVICE_P and s["devices"] > 0 else None,
        )
        for s in description["datastores"]
    )
    disks = []
    for d in description["disks"]:
        samples = tuple(seen.workload.get(d["id"], ()))
        if not samples:
            continue  # never active while measured: nothing to balance, L is unknown
        disks.append(
            Disk(
                id=d["id"],
                vm=d["vm"],
                datastore=where[d["id"]],
                size_gb=d["size_gb"],
                hosts=frozenset({d["host"]}),
                samples=samples,
                iops=seen.iops.get(d["id"]),
            )
        )
    return Snapshot(datastores=stores, disks=tuple(disks), now=seen.now)


def datastore_latency_us(measured: dict[str, Any], where: Placement) -> dict[str, float]:
    """Per datastore, the measured read latency (µs) of its disks over a window, IOPS-weighted.

    Read from the disks' ``virtualDisk.readLatencyUS``: the datastore's own latency counter is in
    whole milliseconds, too coarse to judge a prediction on flash.
    """
    lat: dict[str, float] = defaultdict(float)
    iops: dict[str, float] = defaultdict(float)
    for interval in measured["intervals"]:
        for d in interval["disks"]:
            ds = where[d["id"]]
            lat[ds] += d["read_iops"] * d["read_latency_us"]
            iops[ds] += d["read_iops"]
    return {ds: lat[ds] / iops[ds] for ds in iops if iops[ds] > 0}


def read_oio(measured: dict[str, Any]) -> dict[str, float]:
    """Per disk, its mean outstanding reads over a window."""
    total: dict[str, float] = defaultdict(float)
    intervals = measured["intervals"]
    for interval in intervals:
        for d in interval["disks"]:
            total[d["id"]] += d["read_oio"]
    return {k: v / max(1, len(intervals)) for k, v in total.items()}
