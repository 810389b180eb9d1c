"""Per-disk storageIOAllocation and Storage I/O Control, as Basil's SRP actuator will set them."""

from __future__ import annotations

from statistics import mean
from typing import Any

import pytest
from pyVmomi import vim, vmodl

from tests.lab.helpers import NUMBER_READ_AVERAGED, NUMBER_WRITE_AVERAGED, disk, latest, objects, wait_task
from tests.lab_vcenter import LabInstance


def set_allocation(lab: LabInstance, vm: Any, unit: str, **changes: Any) -> Any:
    d = disk(vm, unit)
    for name, value in changes.items():
        setattr(d.storageIOAllocation, name, value)
    edit = vim.vm.device.VirtualDeviceSpec(operation="edit", device=d)
    return wait_task(lab, vm.ReconfigVM_Task(vim.vm.ConfigSpec(deviceChange=[edit])))


def iops(si: Any, vm: Any, unit: str) -> float:
    reads = latest(si, vm, NUMBER_READ_AVERAGED, unit, samples=2)
    writes = latest(si, vm, NUMBER_WRITE_AVERAGED, unit, samples=2)
    return mean(r + w for r, w in zip(reads, writes, strict=True))


def test_shares_divide_a_congested_datastore(lab: LabInstance, si: Any) -> None:
    # ds-busy runs SIOC (30 ms) and is congested by four equal disks.
    vms = objects(si, vim.VirtualMachine)
    lab.step(3)
    before = iops(si, vms["db-1"], "scsi0:1"), iops(si, vms["web-1"], "scsi0:0")
    assert before[0] == pytest.approx(before[1], rel=0.2)

    info = set_allocation(lab, vms["db-1"], "scsi0:1", shares=vim.SharesInfo(level="high", shares=0))
    assert info.state == "success", info.error
    info = set_allocation(lab, vms["web-1"], "scsi0:0", shares=vim.SharesInfo(level="low", shares=0))
    assert info.state == "success", info.error
    assert disk(vms["db-1"], "scsi0:1").storageIOAllocation.shares.shares == 2000
    assert (
        disk(vms["db-1"], "scsi0:0").storageIOAllocation.shares.shares == 1000
    )  # the edit landed on one disk

    lab.step(3)
    high, low = iops(si, vms["db-1"], "scsi0:1"), iops(si, vms["web-1"], "scsi0:0")
    normal = iops(si, vms["db-1"], "scsi0:0")
    # 2000 : 1000 : 500 shares under contention.
    assert high / low == pytest.approx(4, rel=0.25)
    assert high / normal == pytest.approx(2, rel=0.25)


def test_limit_caps_a_disk(lab: LabInstance, si: Any) -> None:
    vm = objects(si, vim.VirtualMachine)["db-2"]
    lab.step(2)
    assert iops(si, vm, "scsi0:0") > 40
    info = set_allocation(lab, vm, "scsi0:0", limit=20)
    assert info.state == "success", info.error
    lab.step(3)
    assert iops(si, vm, "scsi0:0") <= 20 * 1.1
    truth = lab.control("GET", "truth?intervals=2")
    [d] = [d for d in truth["disks"] if d["vm"] == "db-2"]
    assert d["iops"] <= 20.5


def test_invalid_allocation_is_refused_and_changes_nothing(lab: LabInstance, si: Any) -> None:
    vm = objects(si, vim.VirtualMachine)["db-2"]
    info = set_allocation(lab, vm, "scsi0:0", limit=100, reservation=500)
    assert info.state == "error"
    assert isinstance(info.error, vmodl.fault.InvalidArgument)
    assert "reservation" in info.error.invalidProperty
    a = disk(vm, "scsi0:0").storageIOAllocation
    assert (a.limit, a.reservation) == (-1, 0)


def test_configure_datastore_iorm(lab: LabInstance, si: Any) -> None:
    content = si.RetrieveContent()
    srm = content.storageResourceManager
    idle = objects(si, vim.Datastore)["ds-idle"]
    option = srm.QueryIORMConfigOption(host=objects(si, vim.HostSystem)["esx-01"])
    assert (option.congestionThresholdOption.min, option.congestionThresholdOption.max) == (5, 100)
    assert not idle.iormConfiguration.enabled
    spec = vim.StorageResourceManager.IORMConfigSpec(enabled=True, congestionThreshold=25)
    assert wait_task(lab, srm.ConfigureDatastoreIORM_Task(datastore=idle, spec=spec)).state == "success"
    assert idle.iormConfiguration.enabled
    assert idle.iormConfiguration.congestionThreshold == 25
    placed = {d["name"]: d for d in lab.control("GET", "placement")["datastores"]}
    assert placed["ds-idle"]["sioc_enabled"]
    bad = vim.StorageResourceManager.IORMConfigSpec(congestionThreshold=500)
    info = wait_task(lab, srm.ConfigureDatastoreIORM_Task(datastore=idle, spec=bad))
    assert isinstance(info.error, vmodl.fault.InvalidArgument)
    assert idle.iormConfiguration.congestionThreshold == 25
