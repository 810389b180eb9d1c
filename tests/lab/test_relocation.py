"""Storage vMotion of one disk, as Basil's applier will do it: RelocateVM_Task with a DiskLocator."""

from __future__ import annotations

from statistics import mean
from typing import Any

import pytest
from pyVmomi import vim

from tests.lab.helpers import DS_TOTAL_READ_LATENCY, TOTAL_READ_LATENCY, disk, latest, objects, wait_task
from tests.lab_vcenter import LabInstance


def volume(ds: Any) -> str:
    return ds.summary.url.rstrip("/").rsplit("/", 1)[1]


def test_moving_a_busy_disk_to_an_idle_datastore_lowers_both_latencies(lab: LabInstance, si: Any) -> None:
    lab.step(4)
    vm = objects(si, vim.VirtualMachine)["db-1"]
    stores = objects(si, vim.Datastore)
    busy, idle = stores["ds-busy"], stores["ds-idle"]
    host = vm.runtime.host
    disk_before = mean(latest(si, vm, TOTAL_READ_LATENCY, "scsi0:1"))
    busy_before = mean(latest(si, host, DS_TOTAL_READ_LATENCY, volume(busy)))
    free_busy, free_idle = busy.summary.freeSpace, idle.summary.freeSpace

    d1 = disk(vm, "scsi0:1")
    spec = vim.vm.RelocateSpec(disk=[vim.vm.RelocateSpec.DiskLocator(diskId=d1.key, datastore=idle)])
    task = vm.RelocateVM_Task(spec)
    progress = []
    for _ in range(10):
        if task.info.state in ("success", "error"):
            break
        progress.append(task.info.progress)
        lab.step(1)
    info = wait_task(lab, task)
    assert info.state == "success", info.error
    seen = [p for p in progress if p is not None]
    assert seen == sorted(seen)
    assert len(set(seen)) >= 2  # the copy took several intervals and reported its progress

    moved = disk(vm, "scsi0:1")
    assert moved.backing.fileName == "[ds-idle] db-1/db-1_1.vmdk"
    assert moved.backing.datastore == idle
    assert disk(vm, "scsi0:0").backing.fileName == "[ds-busy] db-1/db-1.vmdk"
    assert {d.name for d in vm.datastore} == {"ds-busy", "ds-idle"}
    size = 10 * 1024**3
    assert busy.summary.freeSpace - free_busy == pytest.approx(size, abs=1024**2)
    assert free_idle - idle.summary.freeSpace == pytest.approx(size, abs=1024**2)
    placed = lab.control("GET", "placement")
    by_unit = {d["unit"]: d for v in placed["vms"] if v["name"] == "db-1" for d in v["disks"]}
    assert by_unit["scsi0:1"]["datastore"] == "ds-idle"

    lab.step(4)
    disk_after = mean(latest(si, vm, TOTAL_READ_LATENCY, "scsi0:1"))
    busy_after = mean(latest(si, host, DS_TOTAL_READ_LATENCY, volume(busy)))
    assert disk_after < disk_before / 2, (disk_before, disk_after)
    assert busy_after < busy_before, (busy_before, busy_after)


@pytest.mark.parametrize(
    ("target", "fault"),
    [
        pytest.param("ds-small", vim.fault.NoDiskSpace, id="target-lacks-space"),
        pytest.param("ds-nfs", vim.fault.DatastoreNotWritableOnHost, id="target-not-mounted-on-the-host"),
    ],
)
def test_refused_relocations_fail_with_the_vsphere_fault(
    lab: LabInstance, si: Any, target: str, fault: type[Exception]
) -> None:
    vm = objects(si, vim.VirtualMachine)["db-1"]
    before = disk(vm, "scsi0:0").backing.fileName
    task = vm.RelocateVM_Task(vim.vm.RelocateSpec(datastore=objects(si, vim.Datastore)[target]))
    info = wait_task(lab, task, max_intervals=2)
    assert info.state == "error"
    assert isinstance(info.error, fault)
    assert disk(vm, "scsi0:0").backing.fileName == before


def test_relocation_in_maintenance(lab: LabInstance, si: Any) -> None:
    stores = objects(si, vim.Datastore)
    idle = stores["ds-idle"]
    result = idle.DatastoreEnterMaintenanceMode()
    assert idle.summary.maintenanceMode == "inMaintenance"  # nothing was on it
    assert wait_task(lab, result.task).state == "success"
    vm = objects(si, vim.VirtualMachine)["db-2"]
    task = vm.RelocateVM_Task(vim.vm.RelocateSpec(datastore=idle))
    info = wait_task(lab, task, max_intervals=1)
    assert isinstance(info.error, vim.fault.InvalidDatastoreState)
    assert wait_task(lab, idle.DatastoreExitMaintenanceMode_Task()).state == "success"
    assert idle.summary.maintenanceMode == "normal"
