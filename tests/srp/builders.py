"""Builders for SRP test scenarios: pools, leaves and demand in one line each."""

from __future__ import annotations

import math

from basil.srp.demand import DemandSnapshot, DiskStats, VmStats
from basil.srp.params import SrpParams
from basil.srp.tree import Controls, LeafSpec, PoolSpec

INF = math.inf

#: The congestion threshold the builders measure at: a VM seen at latency L_C demands exactly its IOPS
#: (eq. 1-2: demand = latency × IOPS / L_c).
L_C = 30.0
PARAMS = SrpParams(latency_threshold_ms=L_C, io_size_charging=False)


def controls(reservation: float = 0.0, limit: float = INF, shares: float = 1000.0) -> Controls:
    return Controls(reservation=reservation, limit=limit, shares=shares)


def pool(
    name: str,
    parent: str | None = None,
    reservation: float = 0.0,
    limit: float = INF,
    shares: float = 1000.0,
) -> PoolSpec:
    return PoolSpec(name, parent, controls(reservation, limit, shares), where=f"pools[{name}]")


def vm(
    name: str,
    parent: str | None = None,
    reservation: float = 0.0,
    limit: float = INF,
    shares: float = 1000.0,
    *,
    disk: str | None = None,
) -> LeafSpec:
    key = name if disk is None else f"{name}/{disk}"
    return LeafSpec(name, disk, parent, controls(reservation, limit, shares), where=f"leaves[{key}]")


def demanding(iops: float, host: str | None = None) -> VmStats:
    """A VM whose measured demand (at latency L_c) is exactly ``iops``."""
    return VmStats(iops=iops, latency_ms=L_C, host=host)


def with_disks(*disks: tuple[str, float], host: str | None = None, datastore: str = "ds1") -> VmStats:
    """A VM known by its disks, each demanding the given IOPS."""
    return VmStats(
        host=host, disks=tuple(DiskStats(name, iops, L_C, None, datastore) for name, iops in disks)
    )


def snapshot(**vms: VmStats) -> DemandSnapshot:
    return DemandSnapshot(dict(vms))
