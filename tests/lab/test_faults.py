"""Injected faults reach a pyVmomi client as the vSphere faults they name."""

from __future__ import annotations

from typing import Any

import pytest
from pyVmomi import vim, vmodl

from tests.lab.helpers import disk, objects, wait_task
from tests.lab_vcenter import LabControlError, LabInstance


def test_a_task_fails_with_the_injected_fault_once(lab: LabInstance, si: Any) -> None:
    rule = lab.control(
        "POST",
        "faults/rules",
        {"method": "RelocateVM_Task", "fault": "FileLocked", "message": "Unable to access file", "count": 1},
    )
    assert rule["delivery"] == "task"
    vm = objects(si, vim.VirtualMachine)["db-2"]
    idle = objects(si, vim.Datastore)["ds-idle"]
    d = disk(vm, "scsi0:0")
    spec = vim.vm.RelocateSpec(disk=[vim.vm.RelocateSpec.DiskLocator(diskId=d.key, datastore=idle)])
    info = wait_task(lab, vm.RelocateVM_Task(spec), max_intervals=1)
    assert info.state == "error"
    assert isinstance(info.error, vim.fault.FileLocked)
    assert info.error.msg == "Unable to access file"
    assert info.entity == vm
    # The rule is spent: the same call now goes through.
    assert wait_task(lab, vm.RelocateVM_Task(spec)).state == "success"
    assert lab.control("GET", "faults")["rules"][0]["fired"] == 1


def test_a_call_fails_with_the_injected_soap_fault(lab: LabInstance, si: Any) -> None:
    lab.control(
        "POST", "faults/rules", {"method": "QueryPerf", "fault": "SystemError", "message": "overloaded"}
    )
    perf = si.RetrieveContent().perfManager
    vm = objects(si, vim.VirtualMachine)["db-1"]
    with pytest.raises(vmodl.fault.SystemError, match="overloaded"):
        perf.QueryPerf(querySpec=[vim.PerformanceManager.QuerySpec(entity=vm, maxSample=1)])
    lab.control("DELETE", "faults")
    perf.QueryPerf(querySpec=[vim.PerformanceManager.QuerySpec(entity=vm, maxSample=1)])


def test_a_bad_rule_is_refused_naming_every_problem(lab: LabInstance) -> None:
    with pytest.raises(LabControlError) as refused:
        lab.control("POST", "faults/rules", {"method": "QueryPerf", "fault": "NoSuchFault", "probability": 2})
    assert refused.value.status == 400
    assert "fault:" in refused.value.detail
    assert "probability:" in refused.value.detail
    assert lab.control("GET", "faults")["rules"] == []


def test_an_inaccessible_datastore(lab: LabInstance, si: Any) -> None:
    lab.step(2)
    lab.control("POST", "faults/datastore", {"datastore": "ds-idle", "accessible": False})
    idle = objects(si, vim.Datastore)["ds-idle"]
    assert not idle.summary.accessible
    assert all(not m.mountInfo.accessible for m in idle.host)
    vm = objects(si, vim.VirtualMachine)["db-2"]
    info = wait_task(lab, vm.RelocateVM_Task(vim.vm.RelocateSpec(datastore=idle)), max_intervals=1)
    assert isinstance(info.error, vim.fault.InaccessibleDatastore)
    lab.control("DELETE", "faults")
    assert idle.summary.accessible
