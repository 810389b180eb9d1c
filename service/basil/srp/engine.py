"""One SRP control step (Algorithm 1 of the paper): demand, R/L/S divvy, entitlements, host queue depths.

The result is backend-neutral: per VM and per virtual disk the dynamic reservation, limit, shares,
entitlement and demand, and per host its queue depth Q_h. Mapping it onto a QoS actuator (vSphere's
per-disk ``storageIOAllocation`` in :mod:`basil.srp.vsphere_allocation`, or storage-policy IOPS
limits) is the business of modules that only read this result.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple, overload

from basil.errors import Problem, raise_if_problems
from basil.srp.capacity import (
    ArrayState,
    array_iops,
    host_queue_depths,
    next_queue_depth,
    queue_depth_for_iops,
)
from basil.srp.demand import DemandSnapshot, DiskStats, tree_demand
from basil.srp.divvy import divvy_shares, divvy_with_demand
from basil.srp.params import SrpParams
from basil.srp.tree import NodeKind, PoolTree


class Allocation(NamedTuple):
    """Dynamic settings of one node for the next interval (IOPS; shares in the root's share units).

    ``limit`` is ``math.inf`` when unlimited. Shares come from the S-divvy, so they add up: a
    pool's shares equal the sum of its children's.
    """

    reservation: float
    limit: float
    shares: float
    entitlement: float
    demand: float


class DiskAllocation(NamedTuple):
    """One virtual disk's settings: its own leaf's, or its part of its VM's (see :func:`allocate`)."""

    vm: str
    disk: str
    datastore: str
    host: str | None
    leaf: bool  # True when the disk is a leaf of the tree itself
    reservation: float
    limit: float
    shares: float
    entitlement: float
    demand: float

    @property
    def key(self) -> str:
        return f"{self.vm}/{self.disk}"

    @property
    def allocation(self) -> Allocation:
        return Allocation(self.reservation, self.limit, self.shares, self.entitlement, self.demand)


# A step at vCenter scale has one result per VM and per disk: 120,000 objects for 40,000 VMs. Kept
# alive as objects, they made Python's cyclic collector rescan the whole heap once per step, a
# third of the step's time; so results are stored as columns of floats, and the per-VM and
# per-disk values are built when read.


@dataclass
class _Columns:
    """Five float columns, one row per node (or disk): R, L, S, entitlement, demand."""

    reservation: list[float] = field(default_factory=list)
    limit: list[float] = field(default_factory=list)
    shares: list[float] = field(default_factory=list)
    entitlement: list[float] = field(default_factory=list)
    demand: list[float] = field(default_factory=list)

    def row(self, i: int) -> Allocation:
        return Allocation(
            self.reservation[i], self.limit[i], self.shares[i], self.entitlement[i], self.demand[i]
        )

    def append(self, a: Allocation) -> int:
        self.reservation.append(a.reservation)
        self.limit.append(a.limit)
        self.shares.append(a.shares)
        self.entitlement.append(a.entitlement)
        self.demand.append(a.demand)
        return len(self.reservation) - 1


class AllocationTable(Mapping[str, Allocation]):
    """Allocations by name (read-only), stored as columns; an :class:`Allocation` is built per lookup."""

    __slots__ = ("_columns", "_rows")

    def __init__(self, rows: dict[str, int], columns: _Columns) -> None:
        self._rows = rows
        self._columns = columns

    def __getitem__(self, name: str) -> Allocation:
        return self._columns.row(self._rows[name])

    def __iter__(self) -> Iterator[str]:
        return iter(self._rows)

    def __len__(self) -> int:
        return len(self._rows)


class DiskTable(Sequence[DiskAllocation]):
    """The disks of a result (read-only), stored as columns; a :class:`DiskAllocation` is built per read."""

    __slots__ = ("_columns", "_datastore", "_disk", "_host", "_leaf", "_vm")

    def __init__(self) -> None:
        self._vm: list[str] = []
        self._disk: list[str] = []
        self._datastore: list[str] = []
        self._host: list[str | None] = []
        self._leaf: list[bool] = []
        self._columns = _Columns()

    def add(self, vm: str, disk: str, datastore: str, host: str | None, *, leaf: bool, a: Allocation) -> None:
        self._vm.append(vm)
        self._disk.append(disk)
        self._datastore.append(datastore)
        self._host.append(host)
        self._leaf.append(leaf)
        self._columns.append(a)

    def add_split(
        self,
        vm: str,
        host: str | None,
        disks: Sequence[DiskStats],
        weights: Sequence[float],
        whole: Allocation,
    ) -> None:
        """A whole VM's allocation split among its disks by ``weights`` (an unlimited limit stays so)."""
        r, lim, s, e, d = whole
        count = len(disks)
        self._vm.extend([vm] * count)
        self._disk.extend([x.name for x in disks])
        self._datastore.extend([x.datastore for x in disks])
        self._host.extend([host] * count)
        self._leaf.extend([False] * count)
        c = self._columns
        c.reservation.extend([r * w for w in weights])
        c.limit.extend([lim] * count if lim == math.inf else [lim * w for w in weights])
        c.shares.extend([s * w for w in weights])
        c.entitlement.extend([e * w for w in weights])
        c.demand.extend([d * w for w in weights])

    def _row(self, i: int) -> DiskAllocation:
        c = self._columns
        return DiskAllocation(
            self._vm[i],
            self._disk[i],
            self._datastore[i],
            self._host[i],
            self._leaf[i],
            c.reservation[i],
            c.limit[i],
            c.shares[i],
            c.entitlement[i],
            c.demand[i],
        )

    @overload
    def __getitem__(self, i: int) -> DiskAllocation: ...

    @overload
    def __getitem__(self, i: slice) -> list[DiskAllocation]: ...

    def __getitem__(self, i: int | slice) -> DiskAllocation | list[DiskAllocation]:
        if isinstance(i, slice):
            return [self._row(k) for k in range(*i.indices(len(self)))]
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError(i)
        return self._row(i)

    def __iter__(self) -> Iterator[DiskAllocation]:
        return (self._row(i) for i in range(len(self._vm)))

    def __len__(self) -> int:
        return len(self._vm)


@dataclass(frozen=True)
class SrpResult:
    root: Allocation
    pools: Mapping[str, Allocation]
    vms: Mapping[str, Allocation]  # every VM of the tree; a VM placed by disks gets their sum
    disks: Sequence[DiskAllocation]
    hosts: Mapping[str, float]  # host queue depth Q_h (eq. 6), outstanding IOs
    array_iops: float  # eq. 5
    queue_depth: float  # Q(t+1)
    latency_threshold_ms: float


def control_step(tree: PoolTree, snapshot: DemandSnapshot, array: ArrayState, params: SrpParams) -> SrpResult:
    """Algorithm 1: update Q by eq. 4, convert it to array IOPS by eq. 5, then :func:`allocate`."""
    params.validate()
    q_next = next_queue_depth(array, params)
    return allocate(tree, snapshot, array_iops(q_next, params.latency_threshold_ms), params, q_next)


def allocate(
    tree: PoolTree,
    snapshot: DemandSnapshot,
    capacity_iops: float,
    params: SrpParams,
    queue_depth: float | None = None,
) -> SrpResult:
    """Divide the root's R and L and ``capacity_iops`` (the array's IOPS) down the tree.

    - Demand: eq. 1–3 at the leaves, summed and clamped at every pool (:mod:`basil.srp.demand`).
    - R-divvy of the root reservation, L-divvy of the root limit, and the entitlement divvy of the
      array IOPS (capped at the root limit, which bounds the whole tree), each by Algorithm 2 with
      the temporary limits of §3.2 (:func:`basil.srp.divvy.divvy_with_demand`); S-divvy of the
      root's shares by the static share ratios.
    - Disks: a whole-VM leaf's reservation, limit, shares, entitlement and demand are split among
      its disks in proportion to each disk's (charged) demand, equally when none has demand; a
      disk that is a leaf itself keeps its own settings, and its VM's entry is the sum of its disk
      leaves'. A VM with no per-disk figures has no disk entries.
    - Hosts: eq. 6 over the entitlements of the VMs whose host is known. ``queue_depth`` is the
      array queue depth behind ``capacity_iops``; when not given it is derived by Little's law.
    """
    params.validate()
    problems: list[Problem] = []
    if not math.isfinite(capacity_iops) or capacity_iops < 0:
        problems.append(Problem("capacity", f"must be finite and non-negative IOPS, got {capacity_iops!r}"))
    if queue_depth is not None and (not math.isfinite(queue_depth) or queue_depth < 0):
        problems.append(Problem("queue_depth", f"must be finite and non-negative, got {queue_depth!r}"))
    problems.extend(snapshot.problems())
    raise_if_problems(problems, "SRP input")
    if queue_depth is None:
        queue_depth = queue_depth_for_iops(capacity_iops, params.latency_threshold_ms)

    demand = tree_demand(tree, snapshot, params)
    divvied = _divvy_down(tree, demand.clamped, capacity_iops)
    pools, vms, disks, host_entitlement = _collect(tree, snapshot, demand.disk_weights, divvied)
    return SrpResult(
        root=divvied.row(0),
        pools=pools,
        vms=vms,
        disks=disks,
        hosts=host_queue_depths(queue_depth, host_entitlement),
        array_iops=capacity_iops,
        queue_depth=queue_depth,
        latency_threshold_ms=params.latency_threshold_ms,
    )


def _divvy_down(tree: PoolTree, demand: Sequence[float], capacity_iops: float) -> _Columns:
    """R-, L- and entitlement divvy with the temporary limits, and the S-divvy, parents first."""
    count = len(tree.nodes)
    root = tree.root.controls
    dyn_r = [0.0] * count
    dyn_l = [0.0] * count
    dyn_s = [0.0] * count
    ent = [0.0] * count
    dyn_r[0], dyn_l[0], dyn_s[0] = root.reservation, root.limit, root.shares
    ent[0] = min(capacity_iops, root.limit)

    reservation, user_limit, shares = tree.reservation, tree.user_limit, tree.shares
    for node in tree.nodes:  # parents before children
        kids = node.children
        if not kids:
            continue
        r = [reservation[k] for k in kids]
        u = [user_limit[k] for k in kids]
        dk = [demand[k] for k in kids]
        s = [shares[k] for k in kids]
        i = node.index
        for out, capacity in ((dyn_r, dyn_r[i]), (dyn_l, dyn_l[i]), (ent, ent[i])):
            for k, value in zip(kids, divvy_with_demand(capacity, r, u, dk, s), strict=True):
                out[k] = value
        for k, value in zip(kids, divvy_shares(dyn_s[i], s), strict=True):
            dyn_s[k] = value
    return _Columns(dyn_r, dyn_l, dyn_s, ent, list(demand))


def _collect(
    tree: PoolTree,
    snapshot: DemandSnapshot,
    disk_weights: Mapping[int, tuple[float, ...]],
    divvied: _Columns,
) -> tuple[dict[str, Allocation], AllocationTable, DiskTable, dict[str, float]]:
    """Per pool, VM and disk results, and the entitlement on each known host."""
    pools = {node.name: divvied.row(node.index) for node in tree.pools}
    vm_rows: dict[str, int] = {}
    disks = DiskTable()
    host_entitlement: dict[str, float] = {}
    disk_leaf_sums: dict[str, list[Allocation]] = {}
    entitlement = divvied.entitlement
    for node in tree.leaves:
        vm = node.vm
        if vm is None:
            continue
        index = node.index
        stats = snapshot.vms.get(vm)
        host = stats.host if stats is not None else None
        if host is not None:
            host_entitlement[host] = host_entitlement.get(host, 0.0) + entitlement[index]
        if node.kind is NodeKind.DISK and node.disk is not None:
            datastore = ""
            if stats is not None:
                datastore = next((x.datastore for x in stats.disks if x.name == node.disk), "")
            mine = divvied.row(index)
            disks.add(vm, node.disk, datastore, host, leaf=True, a=mine)
            disk_leaf_sums.setdefault(vm, []).append(mine)
            continue
        vm_rows[vm] = index
        weights = disk_weights.get(index)
        if stats is None or not weights:
            continue
        # The VM's part for each disk, in proportion to the disks' demands.
        disks.add_split(vm, host, stats.disks, weights, divvied.row(index))
    for vm_name, leaf_parts in disk_leaf_sums.items():
        vm_rows[vm_name] = divvied.append(
            Allocation(
                reservation=math.fsum(a.reservation for a in leaf_parts),
                limit=sum(a.limit for a in leaf_parts),
                shares=math.fsum(a.shares for a in leaf_parts),
                entitlement=math.fsum(a.entitlement for a in leaf_parts),
                demand=math.fsum(a.demand for a in leaf_parts),
            )
        )
    return pools, AllocationTable(vm_rows, divvied), disks, host_entitlement
