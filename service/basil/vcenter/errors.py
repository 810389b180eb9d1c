"""Typed errors for what vCenter refuses or fails, and the one function that maps a vSphere fault to them.

The mapping reads the fault's vSphere type names (pyVmomi's ``_wsdlName`` along the class hierarchy),
so this module needs no pyVmomi import and the rest of Basil can catch these errors without it.
"""

from __future__ import annotations

from basil.errors import ConflictError, VCenterError

__all__ = [
    "PostcheckFailedError",
    "PrecheckFailedError",
    "VCenterAuthenticationError",
    "VCenterBusyError",
    "VCenterConnectionError",
    "VCenterError",
    "VCenterFileLockedError",
    "VCenterInsufficientSpaceError",
    "VCenterInvalidRequestError",
    "VCenterInvalidStateError",
    "VCenterNotFoundError",
    "VCenterPermissionError",
    "VCenterTLSError",
    "VCenterTaskFailedError",
    "VCenterTimeoutError",
    "error_from_fault",
    "fault_message",
    "fault_names",
]


class VCenterConnectionError(VCenterError):
    """vCenter could not be reached, or the connection broke and retries ran out."""

    code = "vcenter_unreachable"
    http_status = 503


class VCenterTLSError(VCenterConnectionError):
    """The server's certificate was not trusted (CA verification failed or the pinned thumbprint differs)."""

    code = "vcenter_tls"


class VCenterAuthenticationError(VCenterError):
    """Login refused, or the session expired and cannot be renewed (no password to log in again)."""

    code = "vcenter_auth"


class VCenterPermissionError(VCenterError):
    code = "vcenter_permission"


class VCenterNotFoundError(VCenterError):
    """A managed object named in the request no longer exists in vCenter."""

    code = "vcenter_not_found"
    http_status = 404


class VCenterInsufficientSpaceError(VCenterError):
    code = "vcenter_insufficient_space"
    http_status = 409


class VCenterFileLockedError(VCenterError):
    code = "vcenter_file_locked"
    http_status = 409


class VCenterBusyError(VCenterError):
    """Another task holds the object (TaskInProgress, ConcurrentAccess) or vCenter is overloaded."""

    code = "vcenter_busy"
    http_status = 409


class VCenterInvalidStateError(VCenterError):
    code = "vcenter_invalid_state"
    http_status = 409


class VCenterInvalidRequestError(VCenterError):
    """vCenter rejected the request's content (InvalidArgument, InvalidDeviceSpec, NotSupported, ...)."""

    code = "vcenter_invalid_request"
    http_status = 400


class VCenterTaskFailedError(VCenterError):
    """A vCenter task ended in error with a fault not covered by a more specific class."""

    code = "vcenter_task_failed"


class VCenterTimeoutError(VCenterError):
    code = "vcenter_timeout"
    http_status = 504


class PrecheckFailedError(ConflictError):
    """An action's pre-check found that the change cannot or should not be made; nothing was sent.

    It is Basil's refusal, not vCenter's, hence a conflict with the current state.
    """

    code = "precheck_failed"

    def __init__(self, message: str, reasons: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.reasons = reasons


class PostcheckFailedError(VCenterError):
    """vCenter reported success but the object is not in the state the action asked for."""

    code = "postcheck_failed"


# vSphere fault type name -> Basil error class. A fault whose own name is not listed is looked up by
# the names of its base faults, so e.g. InsufficientStorageSpace finds InsufficientResourcesFault.
_BY_FAULT: dict[str, type[VCenterError]] = {
    "InvalidLogin": VCenterAuthenticationError,
    "NotAuthenticated": VCenterAuthenticationError,
    "InvalidCertificate": VCenterTLSError,
    "NoPermission": VCenterPermissionError,
    "RestrictedVersion": VCenterPermissionError,
    "RestrictedByAdministrator": VCenterPermissionError,
    "ManagedObjectNotFound": VCenterNotFoundError,
    "NotFound": VCenterNotFoundError,
    "FileNotFound": VCenterNotFoundError,
    "NoDiskSpace": VCenterInsufficientSpaceError,
    "InsufficientStorageSpace": VCenterInsufficientSpaceError,
    "FileLocked": VCenterFileLockedError,
    "TaskInProgress": VCenterBusyError,
    "ConcurrentAccess": VCenterBusyError,
    "TooManyConcurrentNativeClones": VCenterBusyError,
    "RequestCanceled": VCenterTaskFailedError,
    "InvalidState": VCenterInvalidStateError,
    "InvalidPowerState": VCenterInvalidStateError,
    "InvalidDatastoreState": VCenterInvalidStateError,
    "InaccessibleDatastore": VCenterInvalidStateError,
    "DatastoreNotWritableOnHost": VCenterInvalidStateError,
    "HostCommunication": VCenterConnectionError,
    "InvalidDatastore": VCenterInvalidRequestError,
    "Timedout": VCenterTimeoutError,
    "InvalidArgument": VCenterInvalidRequestError,
    "InvalidRequest": VCenterInvalidRequestError,
    "InvalidDeviceSpec": VCenterInvalidRequestError,
    "InvalidName": VCenterInvalidRequestError,
    "InvalidProperty": VCenterInvalidRequestError,
    "InvalidType": VCenterInvalidRequestError,
    "NotSupported": VCenterInvalidRequestError,
    "NotImplemented": VCenterInvalidRequestError,
    "IORMNotSupportedHostOnDatastore": VCenterInvalidRequestError,
    "InsufficientResourcesFault": VCenterInsufficientSpaceError,
}


def fault_names(fault: BaseException) -> list[str]:
    """The vSphere type names of *fault* and its base faults, most specific first."""
    names: list[str] = []
    for cls in type(fault).__mro__:
        name = cls.__dict__.get("_wsdlName")
        if isinstance(name, str) and name not in names:
            names.append(name)
    return names


def fault_message(fault: BaseException) -> str:
    """vCenter's own message for *fault* (``msg``, else the first localized fault message)."""
    msg = getattr(fault, "msg", None)
    if isinstance(msg, str) and msg:
        return msg
    for lm in getattr(fault, "faultMessage", None) or ():
        text = getattr(lm, "message", None)
        if isinstance(text, str) and text:
            return text
    names = fault_names(fault)
    return names[0] if names else type(fault).__name__


def error_from_fault(fault: BaseException, doing: str) -> VCenterError:
    """A typed Basil error for a vSphere fault, carrying the fault's name and vCenter's message.

    *doing* says what Basil was doing ("relocating vm-17 scsi0:1 to datastore-3"); it comes first in
    the message so a log line reads as a sentence.
    """
    names = fault_names(fault)
    name = names[0] if names else type(fault).__name__
    cls: type[VCenterError] = VCenterTaskFailedError
    for n in names:
        if n in _BY_FAULT:
            cls = _BY_FAULT[n]
            break
    return cls(f"{doing}: vCenter fault {name}: {fault_message(fault)}", fault=name)
