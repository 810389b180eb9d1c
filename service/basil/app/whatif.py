"""A consolidation what-if from what the service holds: disks moved to a datastore, predicted.

The figures of each disk are its newest sample where it runs now (the disk's history on its
current datastore stands in for the paper's isolation run); a disk that shares its datastore with
other active disks never ran alone, and the answer says so. The disks already on the target form
one group (measured together), the moved disks one group per source datastore. ``max_conn`` is
the target's ``datastoreMaxQueueDepth`` from the hosts' newest samples (32 when no host reported
it). Nothing is stored or changed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from basil.core.consolidation import DeviceParams, WorkloadMeasurement, predict_consolidation
from basil.errors import BasilError, NotFoundError, Problem, raise_if_problems

if TYPE_CHECKING:
    from basil.app.service import Service
    from basil.vcenter.types import DiskSample, Inventory

DEFAULT_MAX_CONN = 32.0
# A disk doing less than this many IO/s is idle: it does not spoil another disk's "alone".
ACTIVE_IOPS = 1.0


def _measurement(name: str, sample: DiskSample, group: str, alone: bool) -> WorkloadMeasurement:
    return WorkloadMeasurement(
        name=name,
        read_iops=sample.read_iops or 0.0,
        write_iops=sample.write_iops or 0.0,
        read_latency_ms=sample.read_latency_ms or 0.0,
        write_latency_ms=sample.write_latency_ms or 0.0,
        read_oio=sample.read_oio,
        write_oio=sample.write_oio,
        group=group,
        alone=alone,
    )


def _disks_by_datastore(inv: Inventory) -> dict[str, list[tuple[str, str]]]:
    where: dict[str, list[tuple[str, str]]] = {}
    for vm in inv.vms.values():
        for disk in vm.disks:
            where.setdefault(disk.datastore, []).append((vm.moid, disk.instance))
    return where


def datastore_whatif(svc: Service, datastore_ident: str, disk_idents: list[str]) -> dict[str, Any]:
    """Predict every disk on *datastore_ident* once *disk_idents* are moved there."""
    vcenter, moid = svc.ids.parse_object(datastore_ident, "datastore")
    inv = svc.inventory(vcenter, refresh=False)
    target = inv.datastores.get(moid) or next((d for d in inv.datastores.values() if d.name == moid), None)
    if target is None:
        raise NotFoundError(f"no datastore {datastore_ident!r}")
    latest = svc.newest_disk_samples(vcenter)
    by_datastore = _disks_by_datastore(inv)

    def active(key: tuple[str, str]) -> bool:
        s = latest.get(key)
        return s is not None and (s.iops or 0.0) >= ACTIVE_IOPS

    def alone(key: tuple[str, str], datastore: str) -> bool:
        return not any(other != key and active(other) for other in by_datastore.get(datastore, []))

    problems: list[Problem] = []
    moved: list[tuple[tuple[str, str], str]] = []
    for k, ident in enumerate(disk_idents):
        field = f"disks[{k}]"
        try:
            vc, vm_moid, instance = svc.ids.parse_disk(ident)
        except BasilError as err:  # the id parser's own error names what is wrong
            problems.append(Problem(field, err.message))
            continue
        vm = inv.vms.get(vm_moid)
        disk = next((d for d in vm.disks if d.instance == instance), None) if vm is not None else None
        if vc != vcenter or disk is None:
            problems.append(Problem(field, f"no disk {ident!r} in vCenter {vcenter!r}"))
        elif disk.datastore == target.moid:
            problems.append(Problem(field, f"{ident!r} is already on {target.name}"))
        elif (vm_moid, instance) not in latest:
            problems.append(Problem(field, f"{ident!r} has no sample yet: collect first"))
        elif any(key == (vm_moid, instance) for key, _ in moved):
            problems.append(Problem(field, f"{ident!r} appears more than once"))
        else:
            moved.append(((vm_moid, instance), disk.datastore))
    raise_if_problems(problems, "what-if")

    moved_keys = {key for key, _ in moved}
    workloads: list[WorkloadMeasurement] = []
    for key in by_datastore.get(target.moid, []):
        sample = latest.get(key)
        if sample is not None and key not in moved_keys:
            name = svc.ids.disk_id(vcenter, *key)
            workloads.append(_measurement(name, sample, f"on {target.name}", alone(key, target.moid)))
    for key, source in moved:
        source_name = inv.datastores[source].name if source in inv.datastores else source
        name = svc.ids.disk_id(vcenter, *key)
        workloads.append(_measurement(name, latest[key], f"from {source_name}", alone(key, source)))

    depths = [
        s.max_queue_depth
        for (_host, ds), s in svc.newest_host_samples(vcenter).items()
        if ds == target.moid and s.max_queue_depth
    ]
    device = DeviceParams(max_conn=max(depths) if depths else DEFAULT_MAX_CONN)
    prediction = predict_consolidation(workloads, device)
    return {
        "datastore": svc.ids.object_id(vcenter, target.moid),
        "datastore_name": target.name,
        "moved": [svc.ids.disk_id(vcenter, *key) for key, _ in moved],
        "max_conn_source": "datastoreMaxQueueDepth" if depths else "default (no host reported a queue depth)",
        **prediction.to_dict(),
    }
