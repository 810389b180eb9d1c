"""Each action against the lab: exactly the asked-for change, checked before and after; faults typed."""

from __future__ import annotations

import pytest

from basil.vcenter.actions import ConfigureSIOC, RelocateDisk, RelocateVM, SetDiskIOAllocation
from basil.vcenter.connection import VCenterConnection
from basil.vcenter.inventory import fetch_inventory
from basil.vcenter.types import Inventory, IOAllocation, IORMConfig

from .labvc import LabVC

pytestmark = pytest.mark.lab


def fresh(conn: VCenterConnection) -> Inventory:
    return fetch_inventory(conn, with_tags=False)


def placement(inv: Inventory) -> dict[str, str]:
    return {
        f"{vm.name}:{d.instance}": inv.datastores[d.datastore].name
        for vm in inv.vms.values()
        for d in vm.disks
    }


def test_relocation_moves_exactly_the_chosen_disk(lab_vc: LabVC, conn: VCenterConnection) -> None:
    inv = fresh(conn)
    vm = inv.vm_by_name("web-1")
    target = inv.datastore_by_name("ds-nfs")
    action = RelocateDisk(vm.moid, "scsi0:1", target.moid)
    assert action.precheck(inv) == []
    assert not action.whole_vm(inv)
    assert action.describe(inv) == "move disk scsi0:1 (30.0 GB) of VM web-1 from ds-slow to ds-nfs"
    seen: list[int] = []
    outcome = action.execute(conn, seen.append)
    assert outcome.state == "success"
    assert outcome.task.startswith("task-")
    assert action.postcheck(conn) == []
    assert seen
    assert seen[-1] == 100
    assert seen == sorted(seen)
    after = fresh(conn)
    expected = placement(inv) | {"web-1:scsi0:1": "ds-nfs"}
    assert placement(after) == expected
    assert after.vms[vm.moid].home_datastore == vm.home_datastore  # only the disk moved
    # Space moved with the disk.
    assert after.datastores[target.moid].free_bytes < target.free_bytes
    src = inv.datastore_by_name("ds-slow")
    assert after.datastores[src.moid].free_bytes > src.free_bytes


def test_moving_the_last_disk_off_moves_the_whole_vm(lab_vc: LabVC, conn: VCenterConnection) -> None:
    inv = fresh(conn)
    vm = inv.vm_by_name("local-3")  # one disk: once it moves, all the VM's disks are on the target
    target = inv.datastore_by_name("ds-slow")
    action = RelocateDisk(vm.moid, "scsi0:0", target.moid)
    assert action.whole_vm(inv)
    assert action.plan(inv)["spec"]["datastore"] == target.moid
    action.execute(conn)
    assert action.postcheck(conn) == []
    after = fresh(conn).vms[vm.moid]
    assert after.home_datastore == target.moid
    assert after.disk("scsi0:0").datastore == target.moid


def test_whole_vm_relocation_moves_home_and_disks(lab_vc: LabVC, conn: VCenterConnection) -> None:
    inv = fresh(conn)
    vm = inv.vm_by_name("off-1")
    target = inv.datastore_by_name("ds-fast")
    action = RelocateVM(vm.moid, target.moid)
    assert action.precheck(inv) == []
    action.execute(conn)
    assert action.postcheck(conn) == []
    after = fresh(conn).vms[vm.moid]
    assert after.home_datastore == target.moid
    assert {d.datastore for d in after.disks} == {target.moid}


def test_io_settings_land_on_exactly_the_chosen_disk(lab_vc: LabVC, conn: VCenterConnection) -> None:
    inv = fresh(conn)
    vm = inv.vm_by_name("db-1")
    setting = IOAllocation(reservation=250, limit=1200, shares_level="custom", shares=3000)
    action = SetDiskIOAllocation(vm.moid, "scsi0:0", setting)
    assert action.precheck(inv) == []
    assert action.plan(inv)["deviceChange"][0]["device"] == vm.disk("scsi0:0").key
    action.execute(conn)
    assert action.postcheck(conn) == []
    after = fresh(conn).vms[vm.moid]
    assert after.disk("scsi0:0").io == setting
    for d in vm.disks[1:]:
        assert after.disk(d.instance).io == d.io
        assert after.disk(d.instance).datastore == d.datastore
    # Setting it again is a no-op: no task.
    again = SetDiskIOAllocation(vm.moid, "scsi0:0", setting).execute(conn)
    assert again.no_op
    assert again.task == ""


def test_bad_io_settings_are_refused_before_vcenter(lab_vc: LabVC, conn: VCenterConnection) -> None:
    inv = fresh(conn)
    vm = inv.vm_by_name("db-1")
    reasons = SetDiskIOAllocation(vm.moid, "scsi9:9", IOAllocation(reservation=900, limit=100)).precheck(inv)
    assert reasons == ["io.reservation: 900 is above the limit 100", "VM db-1 has no disk scsi9:9"]


def test_configure_sioc(lab_vc: LabVC, conn: VCenterConnection) -> None:
    inv = fresh(conn)
    ds = inv.datastore_by_name("ds-slow")
    action = ConfigureSIOC(ds.moid, IORMConfig(enabled=True, threshold_mode="manual", threshold_ms=25))
    assert action.precheck(inv) == []
    assert action.describe(inv) == "turn Storage I/O Control on on ds-slow, congestion threshold 25 ms"
    action.execute(conn)
    assert action.postcheck(conn) == []
    after = fresh(conn).datastores[ds.moid].iorm
    assert (after.enabled, after.threshold_mode, after.threshold_ms) == (True, "manual", 25)
    assert ConfigureSIOC(ds.moid, IORMConfig(True, "manual", 2)).precheck(inv) == [
        "threshold_ms must be between 5 and 100, got 2"
    ]


def test_relocation_prechecks(lab_vc: LabVC, conn: VCenterConnection) -> None:
    inv = fresh(conn)
    web = inv.vm_by_name("web-1")
    maint = inv.datastore_by_name("ds-maint")
    small = inv.datastore_by_name("ds-small")
    assert RelocateDisk(web.moid, "scsi0:1", maint.moid).precheck(inv) == [
        "datastore ds-maint is in maintenance mode (inMaintenance)"
    ]
    (reason,) = RelocateDisk(web.moid, "scsi0:1", small.moid).precheck(inv)
    assert reason.startswith("datastore ds-small has ")
    assert reason.endswith("GB needed")
    assert RelocateDisk("vm-404", "scsi0:0", small.moid).precheck(inv) == [
        "VM vm-404 is not in the inventory"
    ]


def test_a_task_is_followed_across_a_session_loss(lab_vc: LabVC, conn: VCenterConnection) -> None:
    """The follower's PropertyCollector dies with the session: it builds a new one on the renewed
    session and still sees the task end (issue 12, item 1)."""
    lab_vc.pause()
    try:
        inv = fetch_inventory(conn, with_tags=False)
        vm = inv.vm_by_name("web-1")
        disk = vm.disk("scsi0:1")
        target = next(ds for ds in inv.datastores.values() if ds.moid != disk.datastore and ds.accessible)
        seen: list[int] = []

        def progress(pct: int) -> None:
            if not seen:  # the collector exists and has reported once: now the session goes
                lab_vc.session_loss()
                lab_vc.step(30)  # the copy finishes meanwhile
            seen.append(pct)

        outcome = RelocateDisk(vm.moid, "scsi0:1", target.moid).execute(conn, progress)
        assert outcome.state == "success"
        assert conn.generation == 1
        assert seen[-1] == 100
        assert fetch_inventory(conn, with_tags=False).vms[vm.moid].disk("scsi0:1").datastore == target.moid
    finally:
        lab_vc.control("PUT", "time", {"speed": 60})
