"""Where a VM's SRP reservation should come from: the capacity its request trace needs for a target.

An operator uploads a request trace of a VM with a target (a fraction f of its IOs within δ ms);
the capacity search (Lu's RTT with a binary search on C, :func:`basil.core.shaping.plan_capacity`)
runs once and its answer is kept, not the trace (:mod:`basil.store.vm_capacity`, latest upload per
VM). The suggestion shows the capacity for f within δ, rounded up to a whole IOPS (vSphere's
reservations are whole IOPS, and the SRP loop rounds a reservation down when it issues it), beside
the VM's place in a Storage Resource Pool tree: the pool its leaf hangs from, the leaf's
reservation, limit and shares as the tree sets them, and its entitlement from the last control step.
The current reservation meets the target when it is at least the capacity found.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from basil.app.actor import Actor, audited
from basil.app.trace_capacity import plan_trace
from basil.app.views import shown
from basil.errors import NotFoundError
from basil.srp.tree import UNLIMITED, NodeKind
from basil.store.vm_capacity import VmCapacity, delete_vm_capacity, get_vm_capacity, put_vm_capacity
from basil.vcenter.types import VirtualMachine

if TYPE_CHECKING:
    from basil.app.service import Service

#: The audited actions.
UPLOAD_ACTION = "vm.trace.upload"
DELETE_ACTION = "vm.trace.delete"


def find_vm(svc: Service, ident: str) -> tuple[str, VirtualMachine]:
    """(vcenter, VM) of a VM id (``[vc:]vm-17``) or name, from the inventory as last polled."""
    vcenter, moid = svc.ids.parse_object(ident, "VM")
    inv = svc.inventory(vcenter, refresh=False)
    vm = inv.vms.get(moid) or next((x for x in inv.vms.values() if x.name == moid), None)
    if vm is None:
        raise NotFoundError(f"no VM {ident!r}")
    return vcenter, vm


def suggested_reservation(capacity_iops: float) -> int:
    """The reservation to set for a capacity found: the next whole IOPS at or above it."""
    return math.ceil(capacity_iops)


def upload_trace(svc: Service, ident: str, body: Mapping[str, Any], actor: Actor) -> dict[str, Any]:
    """Plan the capacity of the trace in *body* for its target and keep the answer for the VM.

    Everything is checked before anything is kept: a bad target or an unreadable trace line is a
    ValidationError naming the field (or the line) and the kept answer stays as it was."""
    with audited(svc.store, actor, UPLOAD_ACTION, f"vm {ident}") as note:
        vcenter, vm = find_vm(svc, ident)
        planned = plan_trace(body, "trace upload")
        params, trace, plan = planned.params, planned.trace, planned.plan
        found = VmCapacity(
            vcenter=vcenter,
            vm=vm.moid,
            fraction=params.fraction,
            bound_ms=params.bound_ms,
            capacity_iops=plan.capacity_iops,
            capacity_full_iops=plan.capacity_full_iops,
            result=planned.report(),  # JSON as it is: no NaN (undefined is None)
            uploaded_at=svc.clock(),
            uploaded_by=actor.name,
        )
        with svc.store.session() as session:
            put_vm_capacity(session, found)
        note.details = {
            "fraction": str(params.fraction),
            "bound_ms": str(params.bound_ms),
            "requests": str(trace.requests),
            "capacity_iops": f"{found.capacity_iops:.1f}",
        }
    return reservation(svc, ident)


def delete_trace(svc: Service, ident: str, actor: Actor) -> None:
    """Forget the VM's kept capacity (404 when there is none)."""
    with audited(svc.store, actor, DELETE_ACTION, f"vm {ident}"):
        vcenter, vm = find_vm(svc, ident)
        with svc.store.session() as session:
            found = delete_vm_capacity(session, vcenter, vm.moid)
        if not found:
            raise NotFoundError(f"no trace was uploaded for VM {ident!r}")


def reservation(svc: Service, ident: str) -> dict[str, Any]:
    """The suggested SRP reservation of the VM beside its pool settings (``suggestion`` null until a
    trace was uploaded; ``srp`` null when no valid pool tree holds the VM, else the first by name)."""
    vcenter, vm = find_vm(svc, ident)
    with svc.store.read_session() as session:
        kept = get_vm_capacity(session, vcenter, vm.moid)
    srp = _pool_settings(svc, vcenter, vm.moid)
    suggestion: dict[str, Any] | None = None
    if kept is not None:
        result = kept.result
        suggestion = {
            "reservation_iops": suggested_reservation(kept.capacity_iops),
            "rounding": "up to a whole IOPS",
            "fraction": kept.fraction,
            "bound_ms": kept.bound_ms,
            "capacity_iops": kept.capacity_iops,
            "capacity_full_iops": kept.capacity_full_iops,
            "overflow_fraction": result.get("overflow_fraction"),
            "curve": result.get("curve", []),
            "trace": result.get("trace", {}),
            "uploaded_at": shown(svc, kept.uploaded_at, vcenter),
            "uploaded_by": kept.uploaded_by,
        }
    meets: bool | None = None
    if kept is not None and srp is not None:
        meets = srp["reservation"] >= kept.capacity_iops
    return {
        "vm": svc.ids.object_id(vcenter, vm.moid),
        "vm_name": vm.name,
        "suggestion": suggestion,
        "srp": srp,
        "meets_target": meets,
    }


def _pool_settings(svc: Service, vcenter: str, moid: str) -> dict[str, Any] | None:
    """The VM's leaves in the (valid) pool tree holding it: the pool each hangs from and the settings
    the tree gives them (summed over the leaves of a VM placed by its disks), and the VM's dynamic
    settings and entitlement from the tree's last control step (null before the first)."""
    holding = [
        d for d in svc.pool_documents(refresh=False) if d.vcenter == vcenter and moid in d.tree.vm_names()
    ]
    doc = min(holding, key=lambda d: d.name, default=None)
    if doc is None:
        return None
    nodes = doc.tree.nodes
    leaves = [n for n in nodes if n.is_leaf and n.vm == moid]
    name = doc.vm_names.get(moid, moid)
    entries = []
    for leaf in leaves:
        parent = nodes[leaf.parent]
        entries.append(
            {
                "leaf": name if leaf.kind is NodeKind.VM else f"{name}/{leaf.disk}",
                "disk": leaf.disk,
                "pool": parent.name if parent.kind is NodeKind.POOL else None,
                "reservation": leaf.controls.reservation,
                "limit": None if leaf.controls.limit == UNLIMITED else leaf.controls.limit,
                "shares": leaf.controls.shares,
            }
        )
    limits = [leaf.controls.limit for leaf in leaves]
    state = svc.srp.states.get(doc.name)
    result = state.result if state is not None else None
    alloc = result.vms.get(moid) if result is not None else None
    pools = sorted({e["pool"] for e in entries if e["pool"] is not None})
    return {
        "pool_tree": doc.name,
        "datastore": svc.ids.object_id(vcenter, doc.datastore),
        "pool": pools[0] if len(pools) == 1 else None,
        "reservation": sum(leaf.controls.reservation for leaf in leaves),
        "limit": None if any(x == UNLIMITED for x in limits) else sum(limits),
        "shares": sum(leaf.controls.shares for leaf in leaves),
        "leaves": entries,
        "dynamic": None
        if alloc is None
        else {
            "reservation": alloc.reservation,
            "limit": None if alloc.limit == UNLIMITED else alloc.limit,
            "shares": alloc.shares,
            "entitlement": alloc.entitlement,
            "demand": alloc.demand,
            "computed_at": shown(svc, state.computed_at if state else None, vcenter),
        },
    }
