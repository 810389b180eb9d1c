"""Faults injected by the lab surface as typed errors carrying vCenter's message; transient ones heal."""

from __future__ import annotations

import pytest

from basil.errors import VCenterError
from basil.vcenter import perf
from basil.vcenter.actions import ConfigureSIOC, RelocateDisk, SetDiskIOAllocation
from basil.vcenter.actuator import Actuator
from basil.vcenter.connection import VCenterConnection
from basil.vcenter.errors import (
    VCenterBusyError,
    VCenterConnectionError,
    VCenterFileLockedError,
    VCenterInsufficientSpaceError,
    VCenterNotFoundError,
)
from basil.vcenter.inventory import fetch_inventory
from basil.vcenter.perf import PerfCollector
from basil.vcenter.tags import read_tags
from basil.vcenter.types import Inventory, IOAllocation, IORMConfig

from .labvc import LabVC

pytestmark = pytest.mark.lab


def fresh(conn: VCenterConnection) -> Inventory:
    return fetch_inventory(conn, with_tags=False)


@pytest.mark.parametrize(
    ("method", "fault", "error"),
    [
        pytest.param("RelocateVM_Task", "NoDiskSpace", VCenterInsufficientSpaceError, id="relocate-no-space"),
        pytest.param("RelocateVM_Task", "FileLocked", VCenterFileLockedError, id="relocate-locked"),
        pytest.param("ReconfigVM_Task", "TaskInProgress", VCenterBusyError, id="reconfig-busy"),
        pytest.param("ConfigureDatastoreIORM_Task", "TaskInProgress", VCenterBusyError, id="sioc-busy"),
    ],
)
def test_task_faults_become_typed_errors(
    lab_vc: LabVC, conn: VCenterConnection, method: str, fault: str, error: type[VCenterError]
) -> None:
    inv = fresh(conn)
    web = inv.vm_by_name("web-1")
    message = f"lab says no to {method}"
    lab_vc.add_fault(method=method, fault=fault, message=message, count=1)
    action = {
        "RelocateVM_Task": RelocateDisk(web.moid, "scsi0:1", inv.datastore_by_name("ds-nfs").moid),
        "ReconfigVM_Task": SetDiskIOAllocation(web.moid, "scsi0:1", IOAllocation(1, 10, "low", 500)),
        "ConfigureDatastoreIORM_Task": ConfigureSIOC(
            inv.datastore_by_name("ds-fast").moid, IORMConfig(True, "manual", 20)
        ),
    }[method]
    with pytest.raises(error) as info:
        action.execute(conn)
    assert info.value.fault == fault
    assert message in info.value.message
    # Nothing changed in vCenter.
    assert fresh(conn).vms[web.moid] == web


def test_the_actuator_reports_a_failed_move_and_goes_on(lab_vc: LabVC, conn: VCenterConnection) -> None:
    inv = fresh(conn)
    web, db = inv.vm_by_name("web-1"), inv.vm_by_name("db-1")
    nfs = inv.datastore_by_name("ds-nfs").moid
    lab_vc.add_fault(method="RelocateVM_Task", object=web.moid, fault="NoDiskSpace", message="full", count=1)
    report = Actuator(conn).run(
        [RelocateDisk(web.moid, "scsi0:1", nfs), RelocateDisk(db.moid, "scsi1:0", nfs)], inv
    )
    failed, ok = report.results
    assert (failed.state, failed.fault) == ("failed", "NoDiskSpace")
    assert "full" in failed.message
    assert ok.state == "succeeded"
    after = fresh(conn)
    assert after.vms[web.moid].disk("scsi0:1").datastore == web.disk("scsi0:1").datastore
    assert after.vms[db.moid].disk("scsi1:0").datastore == nfs


def test_a_call_fault_is_typed_too(lab_vc: LabVC, conn: VCenterConnection) -> None:
    inv = fresh(conn)
    lab_vc.add_fault(method="RetrievePropertiesEx", fault="ManagedObjectNotFound", message="gone", count=1)
    with pytest.raises(VCenterNotFoundError, match="gone"):
        RelocateDisk(inv.vm_by_name("web-1").moid, "scsi0:1", inv.datastore_by_name("ds-nfs").moid).execute(
            conn
        )


def test_transient_faults_are_retried_with_backoff(lab_vc: LabVC, conn: VCenterConnection) -> None:
    lab_vc.add_fault(method="RetrievePropertiesEx", fault="HostCommunication", count=2)
    before = conn.requests_made
    inv = fresh(conn)  # the retrieval fails twice, then succeeds
    assert inv.vms
    assert conn.requests_made - before == 3 + 2  # view, retrieve x3, destroy view


def test_retries_are_bounded(lab_vc: LabVC, conn: VCenterConnection) -> None:
    lab_vc.add_fault(method="RetrievePropertiesEx", fault="HostCommunication", message="link down", count=10)
    with pytest.raises(VCenterConnectionError, match="link down"):
        fresh(conn)


def test_lost_sessions_recover_soap_and_tags(lab_vc: LabVC, conn: VCenterConnection) -> None:
    fresh(conn)
    lab_vc.session_loss()
    assert fresh(conn).vms  # SOAP logs in again by itself
    lab_vc.session_loss()
    _, tags, _ = read_tags(conn)  # the Automation API opens a new session per read
    assert tags


def test_a_slow_vcenter_times_out_as_a_connection_error(lab_vc: LabVC) -> None:
    with VCenterConnection(lab_vc.connection_params(timeout_s=0.5, retries=1)) as c:
        lab_vc.set_latency_ms(1500)
        try:
            # A read (here the counter list, forgotten first: it is read once per vCenter build and
            # process) is retried once, then given up on.
            perf._counter_lists.clear()
            with pytest.raises(VCenterConnectionError, match=r"Fetch on .* failed after 2 attempt"):
                PerfCollector(c).counter_ids()
            # A call that creates something on the server is not repeated blindly.
            with pytest.raises(VCenterConnectionError, match=r"CreateContainerView on .* after 1 attempt"):
                fresh(c)
        finally:
            lab_vc.clear_faults()
        assert fresh(c).vms  # and works again once vCenter is fast


def test_an_inaccessible_datastore_is_seen_and_refused_as_target(
    lab_vc: LabVC, conn: VCenterConnection
) -> None:
    lab_vc.set_accessible("ds-nfs", False)
    inv = fresh(conn)
    nfs = inv.datastore_by_name("ds-nfs")
    assert not nfs.accessible
    reasons = RelocateDisk(inv.vm_by_name("web-1").moid, "scsi0:1", nfs.moid).precheck(inv)
    assert "datastore ds-nfs is not accessible" in reasons
