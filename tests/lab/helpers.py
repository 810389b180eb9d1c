"""Helpers for the lab's tests: find inventory objects and read counters with pyVmomi, as the Basil
service will."""

from __future__ import annotations

import ssl
import time
from typing import Any

from pyVim.connect import SmartConnect
from pyVmomi import vim

from tests.lab_vcenter import LabInstance

# Counter keys of the simulator's vCenter counter list (group.name.rollup in comments).
NUMBER_READ_AVERAGED = 171  # virtualDisk.numberReadAveraged.average
NUMBER_WRITE_AVERAGED = 172  # virtualDisk.numberWriteAveraged.average
TOTAL_READ_LATENCY = 175  # virtualDisk.totalReadLatency.average (ms)
READ_LATENCY_US = 532  # virtualDisk.readLatencyUS.latest
DS_READ_IOPS = 351  # datastore.datastoreReadIops.latest
DS_TOTAL_READ_LATENCY = 182  # datastore.totalReadLatency.average (ms)

VIRTUAL_DISK_COUNTERS = {
    "numberReadAveraged.average",
    "numberWriteAveraged.average",
    "totalReadLatency.average",
    "totalWriteLatency.average",
    "readOIO.latest",
    "writeOIO.latest",
    "readIOSize.latest",
    "writeIOSize.latest",
    "smallSeeks.latest",
    "mediumSeeks.latest",
    "largeSeeks.latest",
    "readLatencyUS.latest",
    "writeLatencyUS.latest",
    "read.average",
    "write.average",
}
DATASTORE_COUNTERS = {
    "numberReadAveraged.average",
    "numberWriteAveraged.average",
    "datastoreReadIops.latest",
    "datastoreWriteIops.latest",
    "datastoreReadOIO.latest",
    "datastoreWriteOIO.latest",
    "totalReadLatency.average",
    "totalWriteLatency.average",
    "datastoreMaxQueueDepth.latest",
    "sizeNormalizedDatastoreLatency.average",
    "read.average",
    "write.average",
    "datastoreIops.average",
}


def connect(lab: LabInstance) -> Any:
    """A pyVmomi ServiceInstance that verifies the lab's certificate."""
    context = ssl.create_default_context(cafile=str(lab.ca_pem))
    return SmartConnect(host=lab.host, port=lab.port, user=lab.user, pwd=lab.password, sslContext=context)


def objects(si: Any, kind: Any) -> dict[str, Any]:
    """Every object of a type, by name, through a ContainerView."""
    content = si.RetrieveContent()
    view = content.viewManager.CreateContainerView(content.rootFolder, [kind], True)
    try:
        return {o.name: o for o in view.view}
    finally:
        view.DestroyView()


def disk(vm: Any, unit: str) -> Any:
    """The VirtualDisk of a VM at a controller:unit such as "scsi0:1"."""
    devices = vm.config.hardware.device
    controllers = {d.key: d for d in devices if isinstance(d, vim.vm.device.VirtualController)}
    for d in devices:
        if isinstance(d, vim.vm.device.VirtualDisk):
            ctrl = controllers[d.controllerKey]
            kind = "scsi" if isinstance(ctrl, vim.vm.device.VirtualSCSIController) else "other"
            if f"{kind}{ctrl.busNumber}:{d.unitNumber}" == unit:
                return d
    raise KeyError(f"{vm.name} has no disk {unit}")


def wait_task(lab: LabInstance, task: Any, max_intervals: int = 30) -> Any:
    """Steps simulated time until a task ends; returns task.info (the caller checks state/error)."""
    for _ in range(max_intervals + 1):
        for _ in range(20):
            if task.info.state in (vim.TaskInfo.State.success, vim.TaskInfo.State.error):
                return task.info
            time.sleep(0.02)
        lab.step(1)
    raise AssertionError(f"task {task} did not end within {max_intervals} intervals")


def latest(si: Any, entity: Any, counter: int, instance: str, samples: int = 3) -> list[int]:
    """The last values of one real-time metric."""
    perf = si.RetrieveContent().perfManager
    spec = vim.PerformanceManager.QuerySpec(
        entity=entity,
        intervalId=20,
        maxSample=samples,
        metricId=[vim.PerformanceManager.MetricId(counterId=counter, instance=instance)],
    )
    result = perf.QueryPerf(querySpec=[spec])
    return list(result[0].value[0].value)
