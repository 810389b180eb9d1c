"""What vCenter is doing to one VM right now: its recent tasks, where its disks are, and waiting for a task.

The plan executor reads these before every move and after a restart: a disk already on its target
is never moved again, and a relocation a stopped service left running in vCenter is waited for
instead of being started a second time. Everything here reads fresh from vCenter, not from an
inventory that may lag behind.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from basil.vcenter._vmomi import vim
from basil.vcenter.actions import FollowOptions, TaskOutcome, follow_task, read_properties
from basil.vcenter.connection import VCenterConnection
from basil.vcenter.errors import VCenterNotFoundError, fault_message
from basil.vcenter.inventory import disks_of

#: vCenter's description id of a Storage vMotion (RelocateVM_Task).
RELOCATE = "VirtualMachine.relocate"


@dataclass(frozen=True)
class TaskSummary:
    """One task of an entity's ``recentTask`` list."""

    moid: str
    description_id: str  # e.g. VirtualMachine.relocate
    state: str  # queued, running, success, error
    progress: int | None
    message: str = ""  # vCenter's message when it ended in error

    @property
    def active(self) -> bool:
        return self.state in ("queued", "running")


def recent_tasks(conn: VCenterConnection, vm_moid: str) -> list[TaskSummary]:
    """The VM's recent tasks (vCenter keeps the last ones per entity), oldest first."""
    props = read_properties(conn, conn.ref(vim.VirtualMachine, vm_moid), ["recentTask"])
    out: list[TaskSummary] = []
    for task in props.get("recentTask") or ():
        info: Any = read_properties(conn, task, ["info"]).get("info")
        if info is None:
            continue
        out.append(_summary(task._moId, info))
    return out


def active_relocations(conn: VCenterConnection, vm_moid: str) -> list[TaskSummary]:
    """Storage vMotions of the VM that are queued or running in vCenter now."""
    return [t for t in recent_tasks(conn, vm_moid) if t.description_id == RELOCATE and t.active]


def wait_for_task(
    conn: VCenterConnection,
    task_moid: str,
    doing: str,
    on_progress: Callable[[int], None] | None = None,
    *,
    stop: threading.Event | None = None,
    options: FollowOptions | None = None,
) -> TaskOutcome:
    """Follow a task started by someone else (or by a previous run of Basil) to its end.

    A task that ends in error raises the typed :class:`basil.errors.VCenterError` with vCenter's message;
    *stop* and *options* as for :func:`basil.vcenter.actions.follow_task`.
    """
    return follow_task(conn, conn.ref(vim.Task, task_moid), doing, on_progress, stop=stop, options=options)


def task_summary(conn: VCenterConnection, task_moid: str) -> TaskSummary | None:
    """One task as vCenter tells it now (None when vCenter no longer knows it)."""
    try:
        info: Any = read_properties(conn, conn.ref(vim.Task, task_moid), ["info"]).get("info")
    except VCenterNotFoundError:
        return None
    return None if info is None else _summary(task_moid, info)


def _summary(moid: str, info: Any) -> TaskSummary:
    error = getattr(info, "error", None)
    message = ""
    if error is not None:
        message = getattr(error, "localizedMessage", "") or fault_message(getattr(error, "fault", error))
    return TaskSummary(
        moid=moid,
        description_id=str(getattr(info, "descriptionId", "") or ""),
        state=str(getattr(info, "state", "") or ""),
        progress=getattr(info, "progress", None),
        message=message,
    )


def disk_locations(conn: VCenterConnection, vm_moid: str) -> dict[str, str]:
    """Each disk instance of the VM (``scsi0:1``) -> the moid of the datastore holding it, read now."""
    props = read_properties(conn, conn.ref(vim.VirtualMachine, vm_moid), ["config.hardware.device"])
    return {d.instance: d.datastore for d in disks_of(props.get("config.hardware.device") or ())}
