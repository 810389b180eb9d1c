"""vSphere faults (real pyVmomi fault objects) become typed Basil errors carrying vCenter's message."""

from __future__ import annotations

import pytest
from pyVmomi import vim, vmodl

from basil.errors import VCenterError
from basil.vcenter.errors import (
    VCenterAuthenticationError,
    VCenterBusyError,
    VCenterFileLockedError,
    VCenterInsufficientSpaceError,
    VCenterInvalidRequestError,
    VCenterNotFoundError,
    VCenterTaskFailedError,
    error_from_fault,
    fault_names,
)


@pytest.mark.parametrize(
    ("fault", "cls", "name"),
    [
        pytest.param(
            vim.fault.NoDiskSpace(msg="no room on ds2", datastore="ds2"),
            VCenterInsufficientSpaceError,
            "NoDiskSpace",
            id="no-disk-space",
        ),
        pytest.param(
            vim.fault.FileLocked(msg="locked"), VCenterFileLockedError, "FileLocked", id="file-locked"
        ),
        pytest.param(vim.fault.TaskInProgress(msg="busy"), VCenterBusyError, "TaskInProgress", id="busy"),
        pytest.param(
            vim.fault.InvalidLogin(msg="bad login"), VCenterAuthenticationError, "InvalidLogin", id="login"
        ),
        pytest.param(
            vmodl.fault.ManagedObjectNotFound(msg="gone"),
            VCenterNotFoundError,
            "ManagedObjectNotFound",
            id="not-found",
        ),
        pytest.param(
            vmodl.fault.InvalidArgument(msg="bad", invalidProperty="spec"),
            VCenterInvalidRequestError,
            "InvalidArgument",
            id="invalid-argument",
        ),
        pytest.param(
            vim.fault.VmConfigFault(msg="odd"), VCenterTaskFailedError, "VmConfigFault", id="unlisted-fault"
        ),
    ],
)
def test_fault_maps_to_typed_error(fault: BaseException, cls: type[VCenterError], name: str) -> None:
    err = error_from_fault(fault, "relocating vm-1 scsi0:1")
    assert type(err) is cls
    assert isinstance(err, VCenterError)
    assert err.fault == name
    assert err.message.startswith("relocating vm-1 scsi0:1: vCenter fault " + name)
    assert fault.msg in err.message  # type: ignore[attr-defined]
    assert err.to_dict()["fault"] == name


def test_subclass_fault_found_through_its_bases() -> None:
    # InsufficientStorageSpace's base InsufficientResourcesFault decides the class; the error keeps
    # the specific name.
    assert fault_names(vim.fault.InsufficientStorageSpace())[:2] == [
        "InsufficientStorageSpace",
        "InsufficientResourcesFault",
    ]
    err = error_from_fault(vim.fault.InsufficientStorageSpace(msg="full"), "x")
    assert isinstance(err, VCenterInsufficientSpaceError)
    assert err.fault == "InsufficientStorageSpace"


def test_message_without_msg_falls_back_to_fault_name() -> None:
    err = error_from_fault(vim.fault.FileLocked(), "x")
    assert err.message == "x: vCenter fault FileLocked: FileLocked"
