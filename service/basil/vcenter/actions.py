"""The changes Basil makes in vCenter, one object per change, each with a fixed life.

An action describes itself, checks before (against the inventory: can and should it be done?),
executes one vCenter task and follows it to the end with progress, then checks after (reads the
object back from vCenter: is exactly the asked-for change there, and nothing else touched?). A
dry run stops after the pre-check and reports what would be sent. Only :mod:`basil.vcenter.actuator`
runs actions in the service; they can be run alone in tests and diagnostics.
"""

from __future__ import annotations

import logging
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from basil.vcenter._vmomi import vim, vmodl
from basil.vcenter.connection import VCenterConnection
from basil.vcenter.errors import (
    PostcheckFailedError,
    VCenterError,
    VCenterNotFoundError,
    VCenterTimeoutError,
    error_from_fault,
)
from basil.vcenter.inventory import disks_of
from basil.vcenter.types import Datastore, Inventory, IOAllocation, IORMConfig, VirtualDisk, VirtualMachine

log = logging.getLogger(__name__)

ProgressCallback = Callable[["Action", int], None]

#: vSphere's accepted range for a manual SIOC congestion threshold, in ms.
SIOC_THRESHOLD_MS = (5, 100)
#: vSphere's accepted range for the automatic threshold, in % of peak throughput.
SIOC_PEAK_PCT = (50, 100)


@dataclass(frozen=True)
class TaskOutcome:
    """What the vCenter task said when it ended."""

    task: str  # the task's moid, e.g. task-123
    state: str  # success or error
    message: str = ""
    no_op: bool = False  # nothing needed doing: no task was started


def read_properties(conn: VCenterConnection, ref: Any, paths: Sequence[str]) -> dict[str, Any]:
    """Some properties of one object, fresh from vCenter, in one RetrievePropertiesEx call."""
    spec = vmodl.query.PropertyCollector.FilterSpec(
        objectSet=[vmodl.query.PropertyCollector.ObjectSpec(obj=ref, skip=False)],
        propSet=[vmodl.query.PropertyCollector.PropertySpec(type=type(ref), pathSet=list(paths))],
    )
    with conn.translate(f"reading {ref._moId}"):
        result = conn.content.propertyCollector.RetrievePropertiesEx(
            specSet=[spec], options=vmodl.query.PropertyCollector.RetrieveOptions()
        )
    out: dict[str, Any] = {}
    for oc in (result.objects if result is not None else None) or ():
        for dp in oc.propSet or ():
            out[dp.name] = dp.val
    return out


class TaskNotFollowedError(VCenterError):
    """Basil stopped following a task vCenter may still be running (the service is stopping).

    Nothing is known about the task's outcome: whoever follows up reads the task (``task``) and the
    objects it changes.
    """

    code = "vcenter_task_not_followed"
    http_status = 503

    def __init__(self, message: str, task: str) -> None:
        super().__init__(message)
        self.task = task


class _TaskState:
    """What vCenter said of the task so far, from the collector's updates or from reading the task."""

    def __init__(self) -> None:
        self.state = "queued"
        self.progress = -1
        self.error: Any = None

    def _progress(self, value: Any, on_progress: Callable[[int], None] | None) -> None:
        if value is None:
            return
        progress = int(value)
        if progress != self.progress and on_progress is not None:
            on_progress(progress)
        self.progress = progress

    def apply(self, update: Any, on_progress: Callable[[int], None] | None) -> None:
        for fs in update.filterSet or ():
            for ou in fs.objectSet or ():
                for change in ou.changeSet or ():
                    if change.name == "info.state":
                        self.state = str(change.val)
                    elif change.name == "info.error":
                        self.error = change.val
                    elif change.name == "info.progress":
                        self._progress(change.val, on_progress)

    def read(self, conn: VCenterConnection, task: Any, on_progress: Callable[[int], None] | None) -> None:
        """Read the task itself (one RetrievePropertiesEx on the session's default collector)."""
        info = read_properties(conn, task, ["info"]).get("info")
        if info is None:
            raise VCenterNotFoundError(
                f"task {task._moId} has no info in vCenter", fault="ManagedObjectNotFound"
            )
        self.state = str(getattr(info, "state", "") or self.state)
        self.error = getattr(info, "error", None)
        self._progress(getattr(info, "progress", None), on_progress)


def _task_collector(conn: VCenterConnection, task: Any, doing: str) -> Any:
    """A private PropertyCollector watching the task's state, progress and error."""
    with conn.translate(f"{doing}: following {task._moId}"):
        pc = conn.content.propertyCollector.CreatePropertyCollector()
    spec = vmodl.query.PropertyCollector.FilterSpec(
        objectSet=[vmodl.query.PropertyCollector.ObjectSpec(obj=task, skip=False)],
        propSet=[
            vmodl.query.PropertyCollector.PropertySpec(
                type=vim.Task, pathSet=["info.state", "info.progress", "info.error"]
            )
        ],
    )
    try:
        with conn.translate(f"{doing}: following {task._moId}"):
            pc.CreateFilter(spec=spec, partialUpdates=False)
    except VCenterError:
        _drop_collector(pc)
        raise
    return pc


def _drop_collector(pc: Any) -> None:
    if pc is None:
        return
    try:
        pc.DestroyPropertyCollector()
    except (vmodl.MethodFault, VCenterError) as err:
        log.debug("destroying the task collector: %s", err)


@dataclass(frozen=True)
class FollowOptions:
    """How a task is followed: each wait for an update, and the pauses after vCenter failed to answer."""

    wait_s: float = 60.0  # longest WaitForUpdatesEx; the task itself is read again after a quiet wait
    retry_s: float = 1.0  # first pause after a failed read, doubled up to retry_max_s
    retry_max_s: float = 30.0


def _read_after_failure(
    conn: VCenterConnection,
    task: Any,
    seen: _TaskState,
    doing: str,
    *,
    on_progress: Callable[[int], None] | None,
    opts: FollowOptions,
    failures: int,
    stop: threading.Event | None,
) -> None:
    """After the watch failed: read the task itself; if vCenter does not answer, pause (growing)."""
    try:
        seen.read(conn, task, on_progress)
    except VCenterNotFoundError:
        raise  # vCenter no longer knows the task: the caller judges by the objects it changes
    except VCenterError as err:
        delay = min(opts.retry_max_s, opts.retry_s * 2 ** min(failures - 1, 16))
        log.warning("%s: reading %s failed (%s); again in %.0fs", doing, task._moId, err.message, delay)
        if stop is not None:
            if stop.is_set() or stop.wait(delay):
                raise TaskNotFollowedError(
                    f"{doing}: stopped following {task._moId} while vCenter does not answer "
                    f"({err.message}); it goes on in vCenter",
                    task=task._moId,
                ) from None
        else:
            time.sleep(delay)


def follow_task(  # noqa: PLR0912 (watch, renewed session, failed watch, stop: one loop reads best)
    conn: VCenterConnection,
    task: Any,
    doing: str,
    on_progress: Callable[[int], None] | None = None,
    timeout_s: float = 4 * 3600.0,
    *,
    stop: threading.Event | None = None,
    options: FollowOptions | None = None,
) -> TaskOutcome:
    """Wait for *task* to end, reporting its progress; a task error becomes a typed VCenterError.

    A private PropertyCollector watches ``info.state`` and ``info.progress`` with WaitForUpdatesEx,
    so the wait costs one request per change instead of a poll loop. The task's own state decides:
    when the watch fails (the session was lost and its collector with it, vCenter hung past the call
    timeout, the connection broke) or stays quiet for ``wait_s``, the task itself is read, and a new
    collector is made; vCenter not answering at all is waited out (with growing pauses) until
    *timeout_s*. When *stop* is set, the task is still followed to its end while vCenter answers; once
    vCenter fails to answer, :class:`TaskNotFollowedError` is raised and the task goes on in vCenter.
    """
    opts = options or FollowOptions()
    deadline = time.monotonic() + timeout_s
    seen = _TaskState()
    pc: Any = None
    version = ""
    failures = 0
    generation = conn.generation
    try:
        while seen.state not in ("success", "error"):
            if pc is not None and conn.generation != generation:
                # The session was renewed: the collector died with the old one. A new one (below)
                # reports the task's whole state again (its first update), so nothing is missed.
                pc = None
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise VCenterTimeoutError(
                    f"{doing}: task {task._moId} still {seen.state} after {timeout_s:.0f}s"
                )
            try:
                if pc is None:
                    generation = conn.generation
                    pc = _task_collector(conn, task, doing)
                    version = ""
                wait = vmodl.query.PropertyCollector.WaitOptions(
                    maxWaitSeconds=int(min(opts.wait_s, max(1, remaining)))
                )
                with conn.translate(f"{doing}: following {task._moId}"):
                    update = pc.WaitForUpdatesEx(version=version, options=wait)
                if update is not None:
                    version = update.version
                    seen.apply(update, on_progress)
                else:
                    seen.read(conn, task, on_progress)
                failures = 0
            except VCenterError as err:
                failures += 1
                if stop is not None and stop.is_set():  # stopping, and vCenter fails: no more calls
                    raise TaskNotFollowedError(
                        f"{doing}: stopped following {task._moId} after vCenter failed ({err.message}); "
                        "it goes on in vCenter",
                        task=task._moId,
                    ) from None
                log.warning("%s: following %s failed (%s); reading the task", doing, task._moId, err.message)
                _drop_collector(pc)
                pc = None
                _read_after_failure(
                    conn, task, seen, doing, on_progress=on_progress, opts=opts, failures=failures, stop=stop
                )
    finally:
        if pc is not None and conn.generation == generation and not (stop is not None and stop.is_set()):
            _drop_collector(pc)  # (when stopping, vCenter drops it with the session; a lost one died with it)
    if seen.state == "error":
        if seen.error is None:
            raise VCenterError(f"{doing}: task {task._moId} failed without a fault", fault="")
        raise error_from_fault(seen.error, doing)
    if on_progress is not None and seen.progress != 100:
        on_progress(100)
    return TaskOutcome(task=task._moId, state="success")


class Action(ABC):
    """One change to vCenter. Subclasses are frozen dataclasses."""

    kind: str = "action"

    @abstractmethod
    def describe(self, inv: Inventory | None = None) -> str:
        """A sentence an administrator understands, with names when the inventory is given."""

    @abstractmethod
    def precheck(self, inv: Inventory) -> list[str]:
        """Reasons the action cannot or should not run now (empty: go)."""

    @abstractmethod
    def plan(self, inv: Inventory) -> dict[str, Any]:
        """What would be sent to vCenter (shown by a dry run)."""

    @abstractmethod
    def execute(
        self, conn: VCenterConnection, on_progress: Callable[[int], None] | None = None
    ) -> TaskOutcome:
        """Start the vCenter task and follow it to its end."""

    @abstractmethod
    def postcheck(self, conn: VCenterConnection) -> list[str]:
        """Differences between what vCenter now has and what was asked (empty: as asked)."""

    # Used by the actuator for Storage vMotion limits and the per-run budget.
    def datastores(self) -> tuple[str, ...]:
        return ()

    def hosts(self) -> tuple[str, ...]:
        return ()

    def vms(self) -> tuple[str, ...]:
        """VMs this action changes (vCenter runs one task on a VM at a time)."""
        return ()

    def move_bytes(self, inv: Inventory) -> int:
        """Bytes this action copies between datastores (0 for settings changes)."""
        return 0

    def bind(self, inv: Inventory) -> Action:
        """Note what the actuator's limits need from the inventory (source datastores, host)."""
        return self


def _vm_or_reason(inv: Inventory, moid: str) -> tuple[VirtualMachine | None, list[str]]:
    vm = inv.vms.get(moid)
    return vm, ([] if vm is not None else [f"VM {moid} is not in the inventory"])


def _target_reasons(vm: VirtualMachine, target: Datastore | None, target_moid: str, needed: int) -> list[str]:
    if target is None:
        return [f"datastore {target_moid} is not in the inventory"]
    reasons = []
    if not target.accessible:
        reasons.append(f"datastore {target.name} is not accessible")
    if target.in_maintenance:
        reasons.append(f"datastore {target.name} is in maintenance mode ({target.maintenance_mode})")
    if vm.host is not None and vm.host not in target.hosts:
        reasons.append(f"the VM's host {vm.host} does not mount datastore {target.name}")
    if vm.datacenter and target.datacenter and vm.datacenter != target.datacenter:
        reasons.append(f"datastore {target.name} is in another datacenter")
    if needed > target.free_bytes:
        reasons.append(
            f"datastore {target.name} has {target.free_bytes / 2**30:.1f} GB free, "
            f"{needed / 2**30:.1f} GB needed"
        )
    return reasons


def _current_disks(conn: VCenterConnection, vm_moid: str) -> tuple[tuple[VirtualDisk, ...], list[Any], Any]:
    """The VM's disks, raw devices and home path, read now from vCenter (not from an inventory)."""
    ref = conn.ref(vim.VirtualMachine, vm_moid)
    props = read_properties(conn, ref, ["config.hardware.device", "config.files.vmPathName"])
    devices = list(props.get("config.hardware.device") or ())
    return disks_of(devices), devices, props.get("config.files.vmPathName")


@dataclass(frozen=True)
class RelocateDisk(Action):
    """Storage vMotion of one virtual disk (RelocateVM_Task with one DiskLocator).

    When the move leaves every disk of the VM on the target, the VM's home (.vmx, logs) moves with
    them: that is a whole-VM relocation, so the VM's files are not left split across datastores.
    """

    vm: str
    instance: str
    target: str  # datastore moid
    kind: str = field(default="relocate_disk", init=False)
    _before: dict[str, Any] = field(default_factory=dict, init=False, compare=False, repr=False)
    # Told the task's moid as soon as vCenter took the task, before it is followed (crash safety).
    on_task: Callable[[str], None] | None = field(default=None, compare=False, repr=False, kw_only=True)
    # Set when the caller stops: following the task ends with TaskNotFollowedError as soon as vCenter
    # fails to answer (a hang must not hold up the stop); vCenter goes on with the task.
    stop: threading.Event | None = field(default=None, compare=False, repr=False, kw_only=True)
    follow: FollowOptions | None = field(default=None, compare=False, repr=False, kw_only=True)

    def describe(self, inv: Inventory | None = None) -> str:
        if inv is not None and self.vm in inv.vms and self.target in inv.datastores:
            vm = inv.vms[self.vm]
            src = "?"
            try:
                d = vm.disk(self.instance)
                src = inv.datastores[d.datastore].name if d.datastore in inv.datastores else d.datastore
                size = f" ({d.capacity_gb:.1f} GB)"
            except VCenterError:
                size = ""
            except LookupError:
                size = ""
            return (
                f"move disk {self.instance}{size} of VM {vm.name} from {src} to "
                f"{inv.datastores[self.target].name}"
            )
        return f"move disk {self.instance} of VM {self.vm} to datastore {self.target}"

    def _disk(self, vm: VirtualMachine) -> VirtualDisk | None:
        return next((d for d in vm.disks if d.instance == self.instance), None)

    def whole_vm(self, inv: Inventory) -> bool:
        vm = inv.vms.get(self.vm)
        if vm is None:
            return False
        return all(d.datastore == self.target for d in vm.disks if d.instance != self.instance)

    def precheck(self, inv: Inventory) -> list[str]:
        vm, reasons = _vm_or_reason(inv, self.vm)
        if vm is None:
            return reasons
        disk = self._disk(vm)
        if disk is None:
            return [f"VM {vm.name} has no disk {self.instance}"]
        if disk.datastore == self.target:
            return [f"disk {self.instance} of VM {vm.name} is already on {self.target}"]
        return _target_reasons(vm, inv.datastores.get(self.target), self.target, self.move_bytes(inv))

    def plan(self, inv: Inventory) -> dict[str, Any]:
        vm = inv.vms.get(self.vm)
        disk = self._disk(vm) if vm is not None else None
        return {
            "method": "VirtualMachine.RelocateVM_Task",
            "vm": self.vm,
            "spec": {
                "datastore": self.target if self.whole_vm(inv) else None,
                "disk": [{"diskId": disk.key if disk else None, "datastore": self.target}],
            },
            "whole_vm": self.whole_vm(inv),
        }

    def datastores(self) -> tuple[str, ...]:
        return (self.target, *([self._before["source"]] if "source" in self._before else []))

    def hosts(self) -> tuple[str, ...]:
        return (self._before["host"],) if self._before.get("host") else ()

    def move_bytes(self, inv: Inventory) -> int:
        vm = inv.vms.get(self.vm)
        disk = self._disk(vm) if vm is not None else None
        return disk.capacity_bytes if disk is not None else 0

    def vms(self) -> tuple[str, ...]:
        return (self.vm,)

    def bind(self, inv: Inventory) -> RelocateDisk:
        """Remember the source datastore and host from the inventory (for the actuator's limits)."""
        vm = inv.vms.get(self.vm)
        disk = self._disk(vm) if vm is not None else None
        if vm is not None and disk is not None:
            self._before.update(source=disk.datastore, host=vm.host)
        return self

    def execute(
        self, conn: VCenterConnection, on_progress: Callable[[int], None] | None = None
    ) -> TaskOutcome:
        disks, _, _ = _current_disks(conn, self.vm)
        disk = next((d for d in disks if d.instance == self.instance), None)
        doing = f"relocating disk {self.instance} of {self.vm} to {self.target}"
        if disk is None:
            raise PostcheckFailedError(f"{doing}: the VM no longer has that disk")
        self._before.update(disks={d.key: d.datastore for d in disks}, key=disk.key, source=disk.datastore)
        if disk.datastore == self.target:
            return TaskOutcome(task="", state="success", message="already on the target", no_op=True)
        whole = all(d.datastore == self.target for d in disks if d.key != disk.key)
        self._before["whole_vm"] = whole
        target = conn.ref(vim.Datastore, self.target)
        spec = vim.vm.RelocateSpec(disk=[vim.vm.RelocateSpec.DiskLocator(diskId=disk.key, datastore=target)])
        if whole:
            spec.datastore = target
        vm = conn.ref(vim.VirtualMachine, self.vm)
        with conn.translate(doing):
            task = vm.RelocateVM_Task(spec=spec, priority=vim.VirtualMachine.MovePriority.defaultPriority)
        log.info("%s: %s started%s", doing, task._moId, " (whole VM)" if whole else "")
        if self.on_task is not None:
            self.on_task(task._moId)
        return follow_task(conn, task, doing, on_progress, stop=self.stop, options=self.follow)

    def postcheck(self, conn: VCenterConnection) -> list[str]:
        disks, _, home = _current_disks(conn, self.vm)
        before: dict[int, str] = self._before.get("disks", {})
        problems = []
        for d in disks:
            if d.key == self._before.get("key"):
                if d.datastore != self.target:
                    problems.append(f"disk {d.instance} is on {d.datastore}, not {self.target}")
            elif d.key in before and before[d.key] != d.datastore:
                problems.append(f"disk {d.instance} moved from {before[d.key]} to {d.datastore} unasked")
        if not any(d.key == self._before.get("key") for d in disks):
            problems.append(f"disk {self.instance} is gone")
        if self._before.get("whole_vm") and home is not None:
            names = read_properties(conn, conn.ref(vim.Datastore, self.target), ["name"])
            if not str(home).startswith(f"[{names.get('name', '')}]"):
                problems.append(f"the VM home {home} did not move to {self.target}")
        return problems


@dataclass(frozen=True)
class RelocateVM(Action):
    """Storage vMotion of a whole VM (home and every disk) to one datastore."""

    vm: str
    target: str
    kind: str = field(default="relocate_vm", init=False)
    _before: dict[str, Any] = field(default_factory=dict, init=False, compare=False, repr=False)

    def describe(self, inv: Inventory | None = None) -> str:
        if inv is not None and self.vm in inv.vms and self.target in inv.datastores:
            vm = inv.vms[self.vm]
            return f"move VM {vm.name} (home and {len(vm.disks)} disks) to {inv.datastores[self.target].name}"
        return f"move VM {self.vm} to datastore {self.target}"

    def precheck(self, inv: Inventory) -> list[str]:
        vm, reasons = _vm_or_reason(inv, self.vm)
        if vm is None:
            return reasons
        if all(d.datastore == self.target for d in vm.disks) and vm.home_datastore == self.target:
            return [f"VM {vm.name} is already on {self.target}"]
        return _target_reasons(vm, inv.datastores.get(self.target), self.target, self.move_bytes(inv))

    def plan(self, inv: Inventory) -> dict[str, Any]:
        vm = inv.vms.get(self.vm)
        keys = [d.key for d in vm.disks] if vm is not None else []
        return {
            "method": "VirtualMachine.RelocateVM_Task",
            "vm": self.vm,
            "spec": {
                "datastore": self.target,
                "disk": [{"diskId": k, "datastore": self.target} for k in keys],
            },
            "whole_vm": True,
        }

    def move_bytes(self, inv: Inventory) -> int:
        vm = inv.vms.get(self.vm)
        return sum(d.capacity_bytes for d in vm.disks if d.datastore != self.target) if vm else 0

    def vms(self) -> tuple[str, ...]:
        return (self.vm,)

    def datastores(self) -> tuple[str, ...]:
        return (self.target, *self._before.get("sources", ()))

    def hosts(self) -> tuple[str, ...]:
        return (self._before["host"],) if self._before.get("host") else ()

    def bind(self, inv: Inventory) -> RelocateVM:
        vm = inv.vms.get(self.vm)
        if vm is not None:
            sources = {d.datastore for d in vm.disks if d.datastore != self.target}
            self._before.update(sources=tuple(sorted(sources)), host=vm.host)
        return self

    def execute(
        self, conn: VCenterConnection, on_progress: Callable[[int], None] | None = None
    ) -> TaskOutcome:
        disks, _, _ = _current_disks(conn, self.vm)
        target = conn.ref(vim.Datastore, self.target)
        spec = vim.vm.RelocateSpec(
            datastore=target,
            disk=[vim.vm.RelocateSpec.DiskLocator(diskId=d.key, datastore=target) for d in disks],
        )
        doing = f"relocating VM {self.vm} to {self.target}"
        vm = conn.ref(vim.VirtualMachine, self.vm)
        with conn.translate(doing):
            task = vm.RelocateVM_Task(spec=spec, priority=vim.VirtualMachine.MovePriority.defaultPriority)
        return follow_task(conn, task, doing, on_progress)

    def postcheck(self, conn: VCenterConnection) -> list[str]:
        disks, _, home = _current_disks(conn, self.vm)
        problems = [
            f"disk {d.instance} is on {d.datastore}, not {self.target}"
            for d in disks
            if d.datastore != self.target
        ]
        names = read_properties(conn, conn.ref(vim.Datastore, self.target), ["name"])
        if home is not None and not str(home).startswith(f"[{names.get('name', '')}]"):
            problems.append(f"the VM home {home} is not on {self.target}")
        return problems


def _io_spec(io: IOAllocation) -> Any:
    return vim.StorageResourceManager.IOAllocationInfo(
        reservation=io.reservation,
        limit=io.limit,
        shares=vim.SharesInfo(level=io.shares_level, shares=io.shares),
    )


@dataclass(frozen=True)
class SetDiskIOAllocation(Action):
    """Set one disk's storageIOAllocation (reservation, limit, shares) with ReconfigVM_Task.

    Only that disk's device is in the reconfiguration spec, as vCenter read it just before (so no
    other setting of the disk and no other device is touched).
    """

    vm: str
    instance: str
    io: IOAllocation
    kind: str = field(default="set_disk_io", init=False)
    _before: dict[str, Any] = field(default_factory=dict, init=False, compare=False, repr=False)

    def vms(self) -> tuple[str, ...]:
        return (self.vm,)

    def describe(self, inv: Inventory | None = None) -> str:
        limit = "unlimited" if self.io.limit == -1 else f"{self.io.limit} IOPS"
        name = inv.vms[self.vm].name if inv is not None and self.vm in inv.vms else self.vm
        return (
            f"set IO of disk {self.instance} of VM {name}: reservation {self.io.reservation} IOPS, "
            f"limit {limit}, shares {self.io.shares} ({self.io.shares_level})"
        )

    def precheck(self, inv: Inventory) -> list[str]:
        reasons = [str(p) for p in self.io.validate()]
        vm, missing = _vm_or_reason(inv, self.vm)
        if vm is None:
            return reasons + missing
        if not any(d.instance == self.instance for d in vm.disks):
            reasons.append(f"VM {vm.name} has no disk {self.instance}")
        return reasons

    def plan(self, inv: Inventory) -> dict[str, Any]:
        vm = inv.vms.get(self.vm)
        disk = next((d for d in vm.disks if d.instance == self.instance), None) if vm else None
        return {
            "method": "VirtualMachine.ReconfigVM_Task",
            "vm": self.vm,
            "deviceChange": [
                {
                    "operation": "edit",
                    "device": disk.key if disk else None,
                    "storageIOAllocation": {
                        "reservation": self.io.reservation,
                        "limit": self.io.limit,
                        "shares": {"level": self.io.shares_level, "shares": self.io.shares},
                    },
                }
            ],
            "current": None
            if disk is None
            else {
                "reservation": disk.io.reservation,
                "limit": disk.io.limit,
                "shares": {"level": disk.io.shares_level, "shares": disk.io.shares},
            },
        }

    def execute(
        self, conn: VCenterConnection, on_progress: Callable[[int], None] | None = None
    ) -> TaskOutcome:
        doing = f"setting IO of disk {self.instance} of {self.vm}"
        disks, devices, _ = _current_disks(conn, self.vm)
        disk = next((d for d in disks if d.instance == self.instance), None)
        if disk is None:
            raise PostcheckFailedError(f"{doing}: the VM no longer has that disk")
        self._before.update(key=disk.key, io={d.key: d.io for d in disks})
        if disk.io == self.io:
            return TaskOutcome(task="", state="success", message="already set", no_op=True)
        device = next(dev for dev in devices if dev.key == disk.key)
        device.storageIOAllocation = _io_spec(self.io)
        spec = vim.vm.ConfigSpec(
            deviceChange=[
                vim.vm.device.VirtualDeviceSpec(
                    operation=vim.vm.device.VirtualDeviceSpec.Operation.edit, device=device
                )
            ]
        )
        vm = conn.ref(vim.VirtualMachine, self.vm)
        with conn.translate(doing):
            task = vm.ReconfigVM_Task(spec=spec)
        return follow_task(conn, task, doing, on_progress)

    def postcheck(self, conn: VCenterConnection) -> list[str]:
        disks, _, _ = _current_disks(conn, self.vm)
        before: dict[int, IOAllocation] = self._before.get("io", {})
        problems = []
        for d in disks:
            if d.key == self._before.get("key"):
                if d.io != self.io:
                    problems.append(f"disk {d.instance} has {d.io}, not {self.io}")
            elif d.key in before and before[d.key] != d.io:
                problems.append(f"disk {d.instance} changed unasked: {before[d.key]} -> {d.io}")
        return problems


@dataclass(frozen=True)
class ConfigureSIOC(Action):
    """Storage I/O Control on one datastore: on/off and its congestion threshold."""

    datastore: str
    iorm: IORMConfig
    kind: str = field(default="configure_sioc", init=False)

    def describe(self, inv: Inventory | None = None) -> str:
        name = (
            inv.datastores[self.datastore].name
            if inv and self.datastore in inv.datastores
            else self.datastore
        )
        if not self.iorm.enabled:
            return f"turn Storage I/O Control off on {name}"
        threshold = (
            f"{self.iorm.threshold_ms} ms"
            if self.iorm.threshold_mode == "manual"
            else f"{self.iorm.peak_pct}% of peak throughput"
        )
        return f"turn Storage I/O Control on on {name}, congestion threshold {threshold}"

    def precheck(self, inv: Inventory) -> list[str]:
        reasons = []
        i = self.iorm
        if i.threshold_mode not in ("manual", "automatic"):
            reasons.append(f"threshold_mode must be manual or automatic, got {i.threshold_mode!r}")
        lo, hi = SIOC_THRESHOLD_MS
        if i.threshold_mode == "manual" and not lo <= i.threshold_ms <= hi:
            reasons.append(f"threshold_ms must be between {lo} and {hi}, got {i.threshold_ms}")
        lo, hi = SIOC_PEAK_PCT
        if i.threshold_mode == "automatic" and not lo <= i.peak_pct <= hi:
            reasons.append(f"peak_pct must be between {lo} and {hi}, got {i.peak_pct}")
        ds = inv.datastores.get(self.datastore)
        if ds is None:
            reasons.append(f"datastore {self.datastore} is not in the inventory")
        elif not ds.accessible:
            reasons.append(f"datastore {ds.name} is not accessible")
        return reasons

    def plan(self, inv: Inventory) -> dict[str, Any]:
        ds = inv.datastores.get(self.datastore)
        return {
            "method": "StorageResourceManager.ConfigureDatastoreIORM_Task",
            "datastore": self.datastore,
            "spec": {
                "enabled": self.iorm.enabled,
                "congestionThresholdMode": self.iorm.threshold_mode,
                "congestionThreshold": self.iorm.threshold_ms,
                "percentOfPeakThroughput": self.iorm.peak_pct,
            },
            "current": None
            if ds is None
            else {
                "enabled": ds.iorm.enabled,
                "congestionThresholdMode": ds.iorm.threshold_mode,
                "congestionThreshold": ds.iorm.threshold_ms,
                "percentOfPeakThroughput": ds.iorm.peak_pct,
            },
        }

    def execute(
        self, conn: VCenterConnection, on_progress: Callable[[int], None] | None = None
    ) -> TaskOutcome:
        doing = f"configuring Storage I/O Control on {self.datastore}"
        spec = vim.StorageResourceManager.IORMConfigSpec(
            enabled=self.iorm.enabled,
            congestionThresholdMode=self.iorm.threshold_mode,
            congestionThreshold=self.iorm.threshold_ms,
            percentOfPeakThroughput=self.iorm.peak_pct,
        )
        with conn.translate(doing):
            task = conn.content.storageResourceManager.ConfigureDatastoreIORM_Task(
                datastore=conn.ref(vim.Datastore, self.datastore), spec=spec
            )
        return follow_task(conn, task, doing, on_progress)

    def postcheck(self, conn: VCenterConnection) -> list[str]:
        props = read_properties(conn, conn.ref(vim.Datastore, self.datastore), ["iormConfiguration"])
        cfg = props.get("iormConfiguration")
        if cfg is None:
            return ["the datastore reports no Storage I/O Control configuration"]
        problems = []
        if bool(cfg.enabled) != self.iorm.enabled:
            problems.append(f"enabled is {cfg.enabled}, not {self.iorm.enabled}")
        if self.iorm.enabled:
            if cfg.congestionThresholdMode != self.iorm.threshold_mode:
                problems.append(
                    f"threshold mode is {cfg.congestionThresholdMode}, not {self.iorm.threshold_mode}"
                )
            elif self.iorm.threshold_mode == "manual" and cfg.congestionThreshold != self.iorm.threshold_ms:
                problems.append(f"threshold is {cfg.congestionThreshold} ms, not {self.iorm.threshold_ms}")
            elif (
                self.iorm.threshold_mode == "automatic" and cfg.percentOfPeakThroughput != self.iorm.peak_pct
            ):
                problems.append(f"peak is {cfg.percentOfPeakThroughput}%, not {self.iorm.peak_pct}%")
        return problems
