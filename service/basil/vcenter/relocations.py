"""Storage vMotions vCenter ran lately, whoever started them: the device model leaves their copy out.

A relocation copies a disk by reading its source datastore and writing its target, so the latency
VMs see on both is not the device's alone while it runs (lab/README.md "Storage vMotion"). vCenter's
``TaskManager.recentTask`` lists the last tasks of every entity (about 200, some minutes to hours);
their ``info`` carries the start and completion times in vCenter's clock, the clock samples use.
All task infos are read in one PropertyCollector call.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from basil.vcenter._vmomi import vim, vmodl
from basil.vcenter.connection import VCenterConnection

#: vCenter's description id of a Storage vMotion (RelocateVM_Task).
RELOCATE = "VirtualMachine.relocate"


@dataclass(frozen=True)
class Relocation:
    """One relocation task: the VM it moves, when it ran (``end`` None while it runs), its task moid."""

    task: str
    vm: str
    start: datetime
    end: datetime | None
    state: str


def _utc(moment: datetime) -> datetime:
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def recent_relocations(conn: VCenterConnection) -> list[Relocation]:
    """The relocation tasks in vCenter's recent task list that have started, oldest first."""
    with conn.translate("reading recent tasks"):
        tasks = list(conn.content.taskManager.recentTask or ())
    if not tasks:
        return []
    spec = vmodl.query.PropertyCollector.FilterSpec(
        objectSet=[vmodl.query.PropertyCollector.ObjectSpec(obj=t, skip=False) for t in tasks],
        propSet=[vmodl.query.PropertyCollector.PropertySpec(type=vim.Task, pathSet=["info"])],
    )
    with conn.translate("reading recent tasks"):
        result = conn.content.propertyCollector.RetrievePropertiesEx(
            specSet=[spec], options=vmodl.query.PropertyCollector.RetrieveOptions()
        )
    out: list[Relocation] = []
    for oc in (result.objects if result is not None else None) or ():
        info: Any = next((p.val for p in oc.propSet or () if p.name == "info"), None)
        if info is None or str(getattr(info, "descriptionId", "")) != RELOCATE:
            continue
        entity = getattr(info, "entity", None)
        started = getattr(info, "startTime", None)
        if entity is None or started is None:
            continue  # queued: nothing copied yet
        completed = getattr(info, "completeTime", None)
        out.append(
            Relocation(
                task=oc.obj._moId,
                vm=entity._moId,
                start=_utc(started),
                end=_utc(completed) if completed is not None else None,
                state=str(getattr(info, "state", "")),
            )
        )
    return sorted(out, key=lambda r: (r.start, r.task))
