"""InventoryWatcher follows vCenter's change feed: deltas applied, no full refetch."""

from __future__ import annotations

import pytest

from basil.vcenter.actions import RelocateDisk, SetDiskIOAllocation
from basil.vcenter.connection import VCenterConnection
from basil.vcenter.inventory import InventoryWatcher
from basil.vcenter.types import IOAllocation

from .labvc import LabVC

pytestmark = pytest.mark.lab


def poll_until(watcher: InventoryWatcher, moid: str, tries: int = 10) -> frozenset[str]:
    for _ in range(tries):
        watcher.poll(wait_s=2)
        if moid in watcher.last_changed:
            return watcher.last_changed
    raise AssertionError(f"{moid} never reported changed")


def test_watcher_reflects_an_io_setting_change_without_refetching(lab_vc: LabVC) -> None:
    with (
        VCenterConnection(lab_vc.connection_params()) as c,
        VCenterConnection(lab_vc.connection_params()) as other,
    ):
        watcher = InventoryWatcher(c, with_tags=False)
        inv = watcher.start()
        assert watcher.poll(wait_s=0) is inv  # nothing pending: same object, same version
        vm = inv.vm_by_name("web-1")
        setting = IOAllocation(reservation=50, limit=400, shares_level="low", shares=500)
        action = SetDiskIOAllocation(vm.moid, "scsi0:1", setting)
        action.execute(other)
        before = c.requests_made
        changed = poll_until(watcher, vm.moid)
        new = watcher.inventory
        assert changed == {vm.moid}
        assert c.requests_made - before <= 3  # WaitForUpdatesEx calls, not a refetch
        assert new.version > inv.version
        assert new.vms[vm.moid].disk("scsi0:1").io == setting
        assert new.vms[vm.moid].disk("scsi0:0").io == vm.disk("scsi0:0").io
        # Untouched objects are the very same objects as before.
        db = inv.vm_by_name("db-1").moid
        assert new.vms[db] is inv.vms[db]
        watcher.close()


def test_watcher_reflects_a_relocation(lab_vc: LabVC) -> None:
    with (
        VCenterConnection(lab_vc.connection_params()) as c,
        VCenterConnection(lab_vc.connection_params()) as other,
    ):
        watcher = InventoryWatcher(c, with_tags=False)
        inv = watcher.start()
        vm = inv.vm_by_name("db-1")
        target = inv.datastore_by_name("ds-fast").moid
        assert vm.disk("scsi0:1").datastore != target
        RelocateDisk(vm.moid, "scsi0:1", target).execute(other)
        for _ in range(10):
            new = watcher.poll(wait_s=2)
            if new.vms[vm.moid].disk("scsi0:1").datastore == target:
                break
        assert new.vms[vm.moid].disk("scsi0:1").datastore == target
        assert new.vms[vm.moid].disk("scsi0:0").datastore == vm.disk("scsi0:0").datastore
        watcher.close()


def test_watcher_sees_a_change_made_inside_vcenter_and_rereads_tags(lab_vc: LabVC) -> None:
    lab_vc.reset()
    with VCenterConnection(lab_vc.connection_params()) as c:
        watcher = InventoryWatcher(c, with_tags=True)
        inv = watcher.start()
        nfs = inv.datastore_by_name("ds-nfs")
        assert nfs.accessible
        assert inv.tagged("tier/gold") == (inv.datastore_by_name("ds-fast").moid,)
        lab_vc.set_accessible("ds-nfs", False)  # an outage, not a Basil action
        changed = poll_until(watcher, nfs.moid)
        assert nfs.moid in changed
        assert not watcher.inventory.datastores[nfs.moid].accessible
        refreshed = watcher.refresh_tags()
        assert refreshed.version == watcher.inventory.version
        assert refreshed.tagged("tier/gold") == inv.tagged("tier/gold")
        watcher.close()
        lab_vc.clear_faults()


def test_watcher_is_rebuilt_after_a_session_loss(lab_vc: LabVC) -> None:
    """The private PropertyCollector and view die with the session; the watcher builds new ones on
    the new session and reads the inventory in full (issue 12, item 1)."""
    lab_vc.reset()
    with (
        VCenterConnection(lab_vc.connection_params()) as c,
        VCenterConnection(lab_vc.connection_params()) as other,
    ):
        watcher = InventoryWatcher(c, with_tags=False)
        inv = watcher.start()
        generation = c.generation
        lab_vc.session_loss()
        vm = inv.vm_by_name("web-1")
        setting = IOAllocation(reservation=60, limit=500, shares_level="high", shares=2000)
        SetDiskIOAllocation(vm.moid, "scsi0:1", setting).execute(other)  # changed while we were out
        new = watcher.poll(wait_s=0)
        assert c.generation == generation + 1
        assert watcher.rebuilds == 1
        assert new.version > inv.version
        assert new.vms[vm.moid].disk("scsi0:1").io == setting
        # And the new collector follows changes again.
        SetDiskIOAllocation(vm.moid, "scsi0:1", IOAllocation(shares_level="low", shares=500)).execute(other)
        poll_until(watcher, vm.moid)
        assert watcher.inventory.vms[vm.moid].disk("scsi0:1").io.shares == 500
        watcher.close()
