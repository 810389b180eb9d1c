"""Mapping an SRP result onto vSphere's per-disk ``storageIOAllocation``; pure, it builds values only.

vSphere's ``StorageIOAllocationInfo`` (vSphere Web Services API, ``vim.StorageResourceManager.
IOAllocationInfo``, a property of each ``VirtualDisk``) holds three controls per virtual disk:

- ``reservation`` (xsd:int, IOPS; "large IO sizes are considered as multiple IOs using a chunk size
  of 32 KB", the same charging as SRP §4);
- ``limit`` (xsd:long, IOPS; "if set to -1, then there is no fixed limit on resource usage");
- ``shares`` (``SharesInfo``; "the value should be within a range of 200 to 4000", level
  ``custom`` for a value other than low/normal/high = 500/1000/2000).

Source: the vSphere API reference for StorageIOAllocationInfo, e.g.
https://vdc-download.vmware.com/vmwb-repository/dcr-public/65815ae0-8525-4524-b7f9-18467d0831ff/8a063568-1464-4b8b-8f40-9231bac8a6d9/doc/vim.StorageResourceManager.IOAllocationInfo.html
and https://developer.broadcom.com/xapis/vsphere-web-services-api/8.0U3/vim.StorageResourceManager.IOAllocationInfo.html
(which also marks it deprecated as of vSphere 8.0 U3; hence this module only reads the
backend-neutral :class:`basil.srp.engine.SrpResult`, and another backend can sit beside it).

The mapping, per virtual disk:

- reservation = the disk's dynamic reservation, rounded down (never promise more than was divvied);
- limit = the disk's dynamic limit, rounded up and at least ``limit_floor_iops``, or -1 when
  unlimited. The floor matters because the L-divvy caps a limit at the measured demand: an idle
  disk would otherwise get a limit of 0 and, unable to issue IOs, never show demand again;
- shares = a custom value proportional to the disk's entitlement among the disks on the same
  datastore, the largest entitlement mapped to 4000, clamped into [200, 4000] (ratios beyond
  20:1 are lost to the clamp). SIOC splits a datastore's array queue among hosts by the shares
  of the disks each host runs there, so shares in proportion to entitlements make SIOC's split of
  the queue match SRP's Q_h (eq. 6). A datastore whose disks all have no entitlement gets the
  normal 1000 everywhere.

:func:`changes` applies the hysteresis: a disk is re-issued only when one of its three values moved
by more than the configured fraction (and, for IOPS, more than a few IOPS) from what is set now.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import NamedTuple

from basil.errors import Problem, raise_if_problems
from basil.srp.engine import DiskAllocation

VSPHERE_SHARES_MIN = 200
VSPHERE_SHARES_MAX = 4000
VSPHERE_SHARES_NORMAL = 1000
VSPHERE_UNLIMITED = -1


@dataclass(frozen=True)
class VSphereAllocationParams:
    """How SRP results become vSphere settings, and how big a change must be to be re-issued.

    ``hysteresis`` is a fraction of the current value; ``hysteresis_iops`` an absolute floor under
    it for reservations and limits (a change of a few IOPS on a small value is not worth a
    ReconfigVM_Task). ``limit_floor_iops`` is the smallest finite limit ever set.
    """

    hysteresis: float = 0.10
    hysteresis_iops: float = 10.0
    limit_floor_iops: int = 16

    def problems(self) -> list[Problem]:
        found: list[Problem] = []
        if not math.isfinite(self.hysteresis) or not 0 <= self.hysteresis < 1:
            found.append(Problem("hysteresis", f"must be a fraction in [0, 1), got {self.hysteresis!r}"))
        if not math.isfinite(self.hysteresis_iops) or self.hysteresis_iops < 0:
            found.append(
                Problem("hysteresis_iops", f"must be a non-negative number, got {self.hysteresis_iops!r}")
            )
        if isinstance(self.limit_floor_iops, bool) or not isinstance(self.limit_floor_iops, int):
            found.append(Problem("limit_floor_iops", f"must be an integer, got {self.limit_floor_iops!r}"))
        elif self.limit_floor_iops < 1:
            found.append(Problem("limit_floor_iops", "must be at least 1 IOPS"))
        return found

    def validate(self) -> None:
        raise_if_problems(self.problems(), "vSphere allocation parameters")


class StorageIOAllocation(NamedTuple):
    """The values of one disk's ``StorageIOAllocationInfo`` (shares level ``custom``).

    NamedTuples here and for :class:`DiskKey`: one of each per disk, 80,000 in the benchmark.
    """

    reservation: int
    limit: int  # -1: unlimited
    shares: int


class DiskKey(NamedTuple):
    vm: str
    disk: str

    def __str__(self) -> str:  # a NamedTuple would print as a tuple
        return f"{self.vm}/{self.disk}"


@dataclass(frozen=True)
class DiskChange:
    """A disk whose allocation should be re-issued: what is set now (None if unknown) and what to set."""

    key: DiskKey
    datastore: str
    current: StorageIOAllocation | None
    desired: StorageIOAllocation

    def describe(self) -> str:
        def show(a: StorageIOAllocation) -> str:
            limit = "unlimited" if a.limit == VSPHERE_UNLIMITED else str(a.limit)
            return f"reservation {a.reservation}, limit {limit}, shares {a.shares}"

        before = show(self.current) if self.current is not None else "unknown"
        return f"{self.key} on {self.datastore or '?'}: {before} -> {show(self.desired)}"


def vsphere_allocations(
    disks: Iterable[DiskAllocation],
    params: VSphereAllocationParams | None = None,
) -> dict[DiskKey, StorageIOAllocation]:
    """The vSphere values for every disk of an SRP result (``SrpResult.disks``); see the module doc."""
    params = params or VSphereAllocationParams()
    params.validate()
    listed = list(disks)
    top: dict[str, float] = {}
    for disk in listed:
        top[disk.datastore] = max(top.get(disk.datastore, 0.0), disk.allocation.entitlement)

    out: dict[DiskKey, StorageIOAllocation] = {}
    for disk in listed:
        a = disk.allocation
        reservation = math.floor(a.reservation + 1e-9)
        if math.isinf(a.limit):
            limit = VSPHERE_UNLIMITED
        else:
            limit = max(math.ceil(a.limit - 1e-9), params.limit_floor_iops, reservation)
        out[DiskKey(disk.vm, disk.disk)] = StorageIOAllocation(
            reservation=reservation,
            limit=limit,
            shares=shares_for(a.entitlement, top[disk.datastore]),
        )
    return out


def shares_for(entitlement: float, largest_on_datastore: float) -> int:
    """Custom shares in proportion to the entitlement, the datastore's largest at 4000, within [200, 4000]."""
    if largest_on_datastore <= 0:
        return VSPHERE_SHARES_NORMAL
    value = round(VSPHERE_SHARES_MAX * entitlement / largest_on_datastore)
    return min(max(value, VSPHERE_SHARES_MIN), VSPHERE_SHARES_MAX)


def changes(
    desired: Mapping[DiskKey, StorageIOAllocation],
    current: Mapping[DiskKey, StorageIOAllocation],
    params: VSphereAllocationParams | None = None,
    datastores: Mapping[DiskKey, str] | None = None,
) -> list[DiskChange]:
    """The disks to re-issue: those with no known setting, or one value beyond the hysteresis.

    A disk that is re-issued gets all three desired values, so settings never drift apart field by
    field. Going between unlimited and a finite limit always counts as a change.
    """
    params = params or VSphereAllocationParams()
    params.validate()
    found: list[DiskChange] = []
    for key in sorted(desired, key=lambda k: (k.vm, k.disk)):
        want = desired[key]
        have = current.get(key)
        if have is None or _moved(have, want, params):
            found.append(DiskChange(key, (datastores or {}).get(key, ""), have, want))
    return found


def _moved(have: StorageIOAllocation, want: StorageIOAllocation, params: VSphereAllocationParams) -> bool:
    if (have.limit == VSPHERE_UNLIMITED) != (want.limit == VSPHERE_UNLIMITED):
        return True
    iops_pairs = [(have.reservation, want.reservation)]
    if want.limit != VSPHERE_UNLIMITED:
        iops_pairs.append((have.limit, want.limit))
    for old, new in iops_pairs:
        if abs(new - old) > max(params.hysteresis * abs(old), params.hysteresis_iops):
            return True
    return abs(want.shares - have.shares) > params.hysteresis * abs(have.shares)
