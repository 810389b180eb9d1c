"""Per VM, the capacity its request trace needs for a latency target (``PUT /api/v1/vms/{vm}/trace``).

The trace is not kept: only the capacity search's answer (the capacity for the target fraction and
for 100 %, the curve of capacity against fraction, the trace's summary) with the target and who
uploaded it when. Retention: one row per VM, the latest upload; an upload replaces it and a DELETE
removes it. A row outlives its VM in the inventory (it is not shown then: the VM is unknown).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy.orm import Session

from basil.store.models import VmCapacityRow


@dataclass(frozen=True)
class VmCapacity:
    vcenter: str
    vm: str  # the VM's managed object id
    fraction: float
    bound_ms: float
    capacity_iops: float
    capacity_full_iops: float
    result: dict[str, Any]  # curve, trace summary, overflow, Miser: the capacity answer as JSON
    uploaded_at: datetime  # the service's clock (shown on vCenter's)
    uploaded_by: str


def _of(row: VmCapacityRow) -> VmCapacity:
    return VmCapacity(
        row.vcenter, row.vm, row.fraction, row.bound_ms, row.capacity_iops, row.capacity_full_iops,
        dict(row.result), row.uploaded_at, row.uploaded_by,
    )  # fmt: skip


def get_vm_capacity(session: Session, vcenter: str, vm: str) -> VmCapacity | None:
    row = session.get(VmCapacityRow, (vcenter, vm))
    return None if row is None else _of(row)


def put_vm_capacity(session: Session, found: VmCapacity) -> VmCapacity:
    """Keep *found* as the VM's capacity, replacing the one kept before."""
    session.merge(
        VmCapacityRow(
            vcenter=found.vcenter, vm=found.vm, fraction=found.fraction, bound_ms=found.bound_ms,
            capacity_iops=found.capacity_iops, capacity_full_iops=found.capacity_full_iops,
            result=dict(found.result), uploaded_at=found.uploaded_at, uploaded_by=found.uploaded_by,
        )
    )  # fmt: skip
    session.flush()
    return found


def delete_vm_capacity(session: Session, vcenter: str, vm: str) -> bool:
    """Forget the VM's capacity; False when none was kept."""
    row = session.get(VmCapacityRow, (vcenter, vm))
    if row is None:
        return False
    session.delete(row)
    session.flush()
    return True
