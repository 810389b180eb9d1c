"""Demand of VMs, disks and pools (SRP eq. 1–3), aggregated bottom-up through the pool tree.

A VM's demand is its average number of outstanding IOs by Little's law, turned into the IOPS it
would get at the congestion threshold L_c, charged for IO size (§4) and clamped to its static
reservation and limit; a pool's demand is the sum of its children's, clamped the same way.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from basil.errors import Problem, raise_if_problems
from basil.srp.params import SrpParams, ms_to_s
from basil.srp.tree import NodeKind, PoolTree


@dataclass(frozen=True, slots=True)
class DiskStats:
    """One virtual disk over the last interval: average IOPS, latency and IO size."""

    name: str  # the vSphere disk instance, like scsi0:1
    iops: float
    latency_ms: float
    io_size_kb: float | None = None  # None: not measured, charged as one IO
    datastore: str = ""


@dataclass(frozen=True, slots=True)
class VmStats:
    """One VM over the last interval: either VM-wide figures or per-disk ones (then those count)."""

    iops: float = 0.0
    latency_ms: float = 0.0
    io_size_kb: float | None = None
    host: str | None = None  # the ESXi host the VM runs on, for the host queue depth (eq. 6)
    disks: tuple[DiskStats, ...] = ()


@dataclass(frozen=True)
class DemandSnapshot:
    vms: Mapping[str, VmStats] = field(default_factory=dict)

    def problems(self) -> list[Problem]:
        found: list[Problem] = []
        for vm, stats in self.vms.items():
            if (
                _stats_ok(stats.iops, stats.latency_ms, stats.io_size_kb)
                and all(_stats_ok(d.iops, d.latency_ms, d.io_size_kb) for d in stats.disks)
                and len({d.name for d in stats.disks}) == len(stats.disks)
            ):
                continue  # the common case, checked without building anything
            found.extend(_stats_problems(f"{vm}", stats.iops, stats.latency_ms, stats.io_size_kb))
            seen: set[str] = set()
            for disk in stats.disks:
                where = f"{vm}.disks.{disk.name}"
                if disk.name in seen:
                    found.append(Problem(where, "listed twice"))
                seen.add(disk.name)
                found.extend(_stats_problems(where, disk.iops, disk.latency_ms, disk.io_size_kb))
        return found

    def validate(self) -> None:
        raise_if_problems(self.problems(), "demand snapshot")


def _stats_ok(iops: float, latency_ms: float, io_size_kb: float | None) -> bool:
    # Comparisons with NaN are false, so NaN fails these as it should.
    return (
        0 <= iops < math.inf
        and 0 <= latency_ms < math.inf
        and (io_size_kb is None or 0 < io_size_kb < math.inf)
    )


def _stats_problems(where: str, iops: float, latency_ms: float, io_size_kb: float | None) -> list[Problem]:
    found: list[Problem] = []
    for name, value in (("iops", iops), ("latency_ms", latency_ms)):
        if not math.isfinite(value) or value < 0:
            found.append(Problem(f"{where}.{name}", f"must be a finite non-negative number, got {value!r}"))
    if io_size_kb is not None and (not math.isfinite(io_size_kb) or io_size_kb <= 0):
        found.append(Problem(f"{where}.io_size_kb", f"must be a positive number, got {io_size_kb!r}"))
    return found


def demand_oio(iops: float, latency_ms: float) -> float:
    """SRP eq. 1: demandOIO = avgLatency × avgIops, with the latency in seconds (Little's law)."""
    return ms_to_s(latency_ms) * iops


def demand_iops(oio: float, latency_threshold_ms: float) -> float:
    """SRP eq. 2: demandIops = demandOIO / L_c, the IOPS those OIOs would get at latency L_c."""
    return oio / ms_to_s(latency_threshold_ms)


def clamp_demand(demand: float, reservation: float, limit: float) -> float:
    """SRP eq. 3: demandIops = min(max(demandIops, R), L)."""
    return min(max(demand, reservation), limit)


def io_cost(io_size_kb: float | None, chunk_kb: float = 32.0) -> float:
    """How many IOs one IO of this size counts as (§4): one more for every full 32 KB chunk.

    §4 sizes the reservable capacity with 16 KB IOs and charges "one extra IO for every 32 KB of
    IO size"; read as a step function of the IO size, IOs up to 31 KB (the 16 KB base included)
    cost 1, 32–63 KB cost 2, 64–95 KB cost 3. vSphere's IO reservation counts large IOs the same
    way ("multiple IOs using a chunk size of 32 KB").
    """
    if io_size_kb is None:
        return 1.0
    return 1.0 + math.floor(io_size_kb / chunk_kb)


def charged_demand_iops(iops: float, latency_ms: float, io_size_kb: float | None, params: SrpParams) -> float:
    """Eq. 1 and 2 for one VM or disk, charged for IO size when the parameters say so.

    Written out rather than through :func:`demand_oio` and :func:`demand_iops` because it runs
    once per disk per step: (latency_ms / 1000 × IOPS) / (L_c / 1000), the milliseconds cancel.
    """
    demand = iops * latency_ms / params.latency_threshold_ms
    if params.io_size_charging and io_size_kb is not None:
        demand *= 1.0 + math.floor(io_size_kb / params.charge_chunk_kb)  # io_cost()
    return demand


@dataclass(frozen=True)
class TreeDemand:
    """Per node index: the unclamped demand of a leaf (0 for pools) and the clamped demand (eq. 3)."""

    raw: tuple[float, ...]
    clamped: tuple[float, ...]
    # Per whole-VM leaf with per-disk figures: each disk's part of the VM, in the order of
    # VmStats.disks (plain floats: one small tuple per VM, not one object per disk).
    disk_weights: Mapping[int, tuple[float, ...]]


def tree_demand(tree: PoolTree, snapshot: DemandSnapshot, params: SrpParams) -> TreeDemand:
    """Leaf demands from the snapshot, then the bottom-up aggregation with the clamp at each node.

    A VM absent from the snapshot is idle (demand 0, so eq. 3 lifts it to its reservation). A
    whole-VM leaf with per-disk figures demands the sum of its disks' demands, and its allocation
    is later split among the disks in proportion to these (equally when none demands anything).
    """
    count = len(tree.nodes)
    raw = [0.0] * count
    disk_weights: dict[int, tuple[float, ...]] = {}
    vms = snapshot.vms
    for node in tree.leaves:
        stats = vms.get(node.vm) if node.vm is not None else None
        if stats is None:
            continue
        if node.kind is NodeKind.DISK:
            for disk in stats.disks:
                if disk.name == node.disk:
                    raw[node.index] = charged_demand_iops(disk.iops, disk.latency_ms, disk.io_size_kb, params)
                    break
        elif stats.disks:
            disks = stats.disks
            per_disk = [charged_demand_iops(d.iops, d.latency_ms, d.io_size_kb, params) for d in disks]
            total = math.fsum(per_disk)
            raw[node.index] = total
            # Split in proportion to demand; equally among disks that all stand idle.
            equal = (1.0 / len(disks),) * len(disks)
            disk_weights[node.index] = tuple([part / total for part in per_disk]) if total > 0 else equal
        else:
            raw[node.index] = charged_demand_iops(stats.iops, stats.latency_ms, stats.io_size_kb, params)
    return TreeDemand(tuple(raw), tuple(aggregate_demand(tree, raw)), disk_weights)


def aggregate_demand(tree: PoolTree, leaf_demand: Sequence[float]) -> list[float]:
    """Eq. 3 at every node, children first: a pool demands the sum of its children's clamped demands.

    The clamp uses the node's effective reservation (see :func:`basil.srp.tree.build_tree`), so a
    node's demand is never below what the R-divvy must give it and can serve as its temporary limit.
    """
    demand = list(leaf_demand)
    reservation = tree.reservation
    leaf_kinds = (NodeKind.VM, NodeKind.DISK)
    for node in reversed(tree.nodes):
        index = node.index
        kids = node.children
        if kids:
            total = math.fsum([demand[k] for k in kids])
        elif node.kind in leaf_kinds:
            total = demand[index]
        else:
            total = 0.0  # an empty pool: only its reservation, by the clamp
        demand[index] = min(max(total, reservation[index]), node.controls.limit)  # eq. 3
    return demand
