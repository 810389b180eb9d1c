"""PerformanceManager as a collector uses it: the real counter ids and names, per-disk instances of
virtualDisk.* on VMs, per-datastore instances of datastore.* on hosts, the real-time interval with
its history, and config.vpxd.stats.maxQueryMetrics."""

from __future__ import annotations

import itertools
from datetime import datetime, timedelta
from typing import Any

import pytest
from pyVmomi import vim, vmodl

from tests.lab.helpers import DATASTORE_COUNTERS, VIRTUAL_DISK_COUNTERS, objects
from tests.lab_vcenter import LabInstance


def counter_names(si: Any) -> dict[int, str]:
    perf = si.RetrieveContent().perfManager
    return {c.key: f"{c.groupInfo.key}.{c.nameInfo.key}.{c.rollupType}" for c in perf.perfCounter}


def query(si: Any, entity: Any, ids: list[Any], **spec: Any) -> Any:
    perf = si.RetrieveContent().perfManager
    qs = vim.PerformanceManager.QuerySpec(entity=entity, metricId=ids, **spec)
    return perf.QueryPerf(querySpec=[qs])[0]


def test_available_metrics_per_disk_and_per_datastore(si: Any) -> None:
    names = counter_names(si)
    perf = si.RetrieveContent().perfManager
    vm = objects(si, vim.VirtualMachine)["db-1"]
    available = perf.QueryAvailablePerfMetric(entity=vm, intervalId=20)
    by_instance: dict[str, set[str]] = {}
    for m in available:
        group, rest = names[m.counterId].split(".", 1)
        assert group == "virtualDisk"
        by_instance.setdefault(m.instance, set()).add(rest)
    assert by_instance == {"scsi0:0": VIRTUAL_DISK_COUNTERS, "scsi0:1": VIRTUAL_DISK_COUNTERS}

    host = objects(si, vim.HostSystem)["esx-02"]
    uuids = {ds.summary.url.rstrip("/").rsplit("/", 1)[1]: ds.name for ds in host.datastore}
    per_ds: dict[str, set[str]] = {}
    for m in perf.QueryAvailablePerfMetric(entity=host, intervalId=20):
        if m.instance:
            per_ds.setdefault(m.instance, set()).add(names[m.counterId].split(".", 1)[1])
    # Instances are the datastores' volume UUIDs (the last element of summary.url), as on vCenter.
    assert set(per_ds) == set(uuids)
    assert {uuids[u] for u in per_ds} == {"ds-busy", "ds-idle", "ds-small", "ds-nfs"}
    assert all(counters == DATASTORE_COUNTERS for counters in per_ds.values())


def test_virtual_disk_counters_in_vcenter_units(lab: LabInstance, si: Any) -> None:
    lab.step(3)
    names = {v: k for k, v in counter_names(si).items()}
    vm = objects(si, vim.VirtualMachine)["db-1"]
    wanted = [f"virtualDisk.{c}" for c in sorted(VIRTUAL_DISK_COUNTERS)]
    ids = [vim.PerformanceManager.MetricId(counterId=names[w], instance="scsi0:1") for w in wanted]
    res = query(si, vm, ids, intervalId=20, maxSample=1)
    value = {counter_names(si)[s.id.counterId].split(".", 1)[1]: s.value[0] for s in res.value}
    assert value["readIOSize.latest"] == pytest.approx(
        8192, rel=0.05
    )  # bytes: 8 KB reads, sampled with noise
    assert value["totalReadLatency.average"] > 0
    # The microsecond counter agrees with the millisecond one, which vCenter rounds.
    assert abs(value["readLatencyUS.latest"] / 1000 - value["totalReadLatency.average"]) <= 1
    reads, writes = value["numberReadAveraged.average"], value["numberWriteAveraged.average"]
    assert 0.55 < reads / (reads + writes) < 0.85  # 70 % reads
    assert value["read.average"] == pytest.approx(reads * 8, rel=0.1)  # KB/s of 8 KB reads
    seeks = value["smallSeeks.latest"] + value["mediumSeeks.latest"] + value["largeSeeks.latest"]
    assert (value["mediumSeeks.latest"] + value["largeSeeks.latest"]) / seeks > 0.9  # 100 % random
    assert value["readOIO.latest"] + value["writeOIO.latest"] == pytest.approx(16, abs=2)


def test_host_datastore_counters_add_up_to_the_disks(lab: LabInstance, si: Any) -> None:
    lab.step(3)
    stores = objects(si, vim.Datastore)
    busy_uuid = stores["ds-busy"].summary.url.rstrip("/").rsplit("/", 1)[1]
    host_reads = 0
    for host in objects(si, vim.HostSystem).values():
        res = query(
            si, host, [vim.PerformanceManager.MetricId(counterId=351, instance=busy_uuid)], maxSample=1
        )
        host_reads += res.value[0].value[0]
    disk_reads = 0
    for vm in objects(si, vim.VirtualMachine).values():
        res = query(si, vm, [vim.PerformanceManager.MetricId(counterId=171, instance="*")], maxSample=1)
        for series in res.value:
            disk = series.id.instance
            backing = next(
                d
                for d in vm.config.hardware.device
                if isinstance(d, vim.vm.device.VirtualDisk) and disk.endswith(f":{d.unitNumber}")
            )
            if backing.backing.datastore.name == "ds-busy":
                disk_reads += series.value[0]
    assert host_reads == pytest.approx(disk_reads, rel=0.15)


def test_realtime_history_window_and_timestamps(lab: LabInstance, si: Any) -> None:
    status = lab.step(5)
    last = datetime.fromisoformat(status["last_interval"].replace("Z", "+00:00"))
    assert si.CurrentTime() >= last  # the server's clock is the simulated one
    vm = objects(si, vim.VirtualMachine)["db-2"]
    ids = [vim.PerformanceManager.MetricId(counterId=171, instance="scsi0:0")]
    res = query(si, vm, ids, intervalId=20)
    stamps = [s.timestamp for s in res.sampleInfo]
    assert stamps[-1] == last
    assert all(b - a == timedelta(seconds=20) for a, b in itertools.pairwise(stamps))
    assert all(s.interval == 20 for s in res.sampleInfo)
    window = query(si, vm, ids, intervalId=20, startTime=stamps[1], endTime=stamps[3])
    assert [s.timestamp for s in window.sampleInfo] == stamps[2:4]
    csv = query(si, vm, ids, intervalId=20, maxSample=2, format="csv")
    assert isinstance(csv, vim.PerformanceManager.EntityMetricCSV)
    assert csv.sampleInfoCSV.count("20,") == 2


def test_max_query_metrics_is_enforced_as_vcenter_does(lab: LabInstance, si: Any) -> None:
    lab.step(15)  # five minutes: one historical (300 s) roll-up
    content = si.RetrieveContent()
    assert content.setting.QueryOptions("config.vpxd.stats.maxQueryMetrics")[0].value == "64"
    perf = content.perfManager
    vms = objects(si, vim.VirtualMachine)
    # 5 disks x 15 counters = 75 metrics, above 64.
    specs = [vim.PerformanceManager.QuerySpec(entity=vm, maxSample=1, intervalId=300) for vm in vms.values()]
    with pytest.raises(vim.fault.RestrictedByAdministrator) as refused:
        perf.QueryPerf(querySpec=specs)
    assert refused.value.details == "vpxd.stats.maxQueryMetrics"
    assert "restricted by the administrator" in refused.value.msg
    # Real-time queries are not capped by vCenter...
    realtime = [
        vim.PerformanceManager.QuerySpec(entity=vm, maxSample=1, intervalId=20) for vm in vms.values()
    ]
    assert len(perf.QueryPerf(querySpec=realtime)) == len(vms)
    # ... unless the lab is told to cap them too, so a collector's batching can be checked.
    lab.control("PUT", "settings", {"cap_realtime_queries": True})
    with pytest.raises(vim.fault.RestrictedByAdministrator):
        perf.QueryPerf(querySpec=realtime)
    # An administrator raises the limit in the advanced settings.
    content.setting.UpdateOptions(
        changedValue=[vim.option.OptionValue(key="config.vpxd.stats.maxQueryMetrics", value="100")]
    )
    assert len(perf.QueryPerf(querySpec=realtime)) == len(vms)
    assert len(perf.QueryPerf(querySpec=specs)) == len(vms)
    with pytest.raises(vmodl.fault.InvalidArgument):
        content.setting.UpdateOptions(
            changedValue=[vim.option.OptionValue(key="config.vpxd.stats.maxQueryMetrics", value="lots")]
        )
