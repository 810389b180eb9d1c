"""Hard constraints on where a virtual disk may go, shared by the balancer and initial placement.

The unit that moves is a :class:`Unit`: all disks of one VM on one datastore, unless the VM is
splittable, in which case every disk is its own unit. Those disks move together, to one target, in
one Storage vMotion; that is how "VMDKs of one VM kept together" holds across a move without forcing
disks that already live apart onto one datastore.

A target must (BASIL §5 "hard constraints", Storage DRS's rules): not be in maintenance; keep the
configured headroom of free space after the move; be visible to every host the unit is used from;
hold no disk of a VM that is anti-affine with the unit's VM; and, when it has no device model yet,
not have received a unit already this round (§6.3). A unit may not move at all when its VM is
excluded or one of its disks moved within the ping-pong window.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import repeat
from operator import attrgetter, is_, is_not, itemgetter
from typing import NamedTuple, TypeVar

import numpy as np
import numpy.typing as npt

from basil.core.normalized_load import DiskLoad, Models
from basil.core.params import ORDER_LOAD_PER_GB, BalancerParams
from basil.core.snapshot import Datastore, Disk, Snapshot

# Why a target is not allowed (codes are stable; messages are for people).
MAINTENANCE = "maintenance"
SPACE = "space"
HOSTS = "hosts"
ANTI_AFFINITY = "anti_affinity"
NEW_DATASTORE_LIMIT = "new_datastore_limit"
KEEP_TOGETHER = "keep_together"

# Why a unit may not move at all.
PINNED_EXCLUDED = "excluded_vm"
PINNED_PING_PONG = "ping_pong"
PINNED_MAINTENANCE = "source_in_maintenance"

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Violation:
    code: str
    message: str

    def __str__(self) -> str:
        return self.message


class Unit(NamedTuple):
    """Disks that move together: one VM's disks on one datastore (or one disk of a splittable VM).

    A named tuple rather than a frozen dataclass: a round builds one per VM and datastore (some
    40,000 in a large pod), and a frozen dataclass costs several times as much to construct."""

    index: int  # type: ignore[assignment]  # the unit's number; shadows tuple.index, which no caller needs
    vm: str
    disks: tuple[str, ...]
    datastore: str
    load: float  # ΣL of its disks
    size_gb: float
    hosts: frozenset[str]
    iops: float | None  # Σ current IOPS; None when a disk's IOPS is unknown
    conflicts: frozenset[str]  # VMs anti-affine with this unit's VM
    pinned: str | None = None  # PINNED_* code when the unit may not move at all
    pinned_reason: str = ""

    def preference(self, order: str) -> tuple[float, ...]:
        """Sort key of §5's candidate orders: smaller first."""
        if order == ORDER_LOAD_PER_GB:
            # (1) highest L per GB first: more load moved per GB copied.
            density = self.load / self.size_gb if self.size_gb > 0 else float("inf")
            return (-density, self.size_gb)
        # (2) least disturbance: smallest current IOPS / L first; unknown IOPS go last.
        if self.iops is None:
            return (1.0, 0.0, -self.load)
        ratio = self.iops / self.load if self.load > 0 else float("inf")
        return (0.0, ratio, -self.load)


def conflicting_vms(vm: str, anti_affinity: Iterable[frozenset[str]]) -> frozenset[str]:
    """The VMs that may not share a datastore with *vm*."""
    result: set[str] = set()
    for group in anti_affinity:
        if vm in group:
            result |= group
    result.discard(vm)
    return frozenset(result)


def conflict_index(anti_affinity: Iterable[frozenset[str]]) -> dict[str, frozenset[str]]:
    """For every VM named in an anti-affinity group, the VMs it may not share a datastore with."""
    found: dict[str, set[str]] = defaultdict(set)
    for group in anti_affinity:
        for vm in group:
            found[vm] |= group
    return {vm: frozenset(others - {vm}) for vm, others in found.items()}


@dataclass(frozen=True, slots=True)
class UnitColumns:
    """:func:`build_units`' units with the columns they were built from, so a round reads their
    fields for all units without a pass over 40,000 named tuples: each column holds the very values
    of the units' fields, in unit order. Read-only: nothing may change the units or the columns."""

    units: list[Unit]
    datastore: list[str]
    disks: list[tuple[str, ...]]
    load: list[float]
    size_gb: list[float]
    iops: list[float | None]
    pinned: list[str | None]
    disk_counts: npt.NDArray[np.int64]  # len(disks) of each unit
    disk_ids: list[str]  # the snapshot's disk ids, in snapshot order
    disk_datastores: list[str]  # and their datastores and VMs
    disk_vms: list[str]
    # Where each of the units' disks (in unit order, each unit's in its order) is in the snapshot.
    disk_positions: npt.NDArray[np.int64]


def build_units(snapshot: Snapshot, models: Models, params: BalancerParams) -> list[Unit]:
    """Group the snapshot's disks into units, in a stable order (datastore, VM, first disk id)."""
    return build_unit_columns(snapshot, models, params).units


def build_unit_columns(snapshot: Snapshot, models: Models, params: BalancerParams) -> UnitColumns:
    """:func:`build_units` with the units' columns.

    The grouping is one sort of every disk's (datastore, VM, disk id of a splittable VM's disk or "")
    key, made as a lexsort of their ranks (numpy; no Python step per comparison); a unit of one disk
    (most of them) takes its disk's fields as they are, the fields of all of them gathered at once;
    only units of several disks and pinned units are worked out one by one."""
    disks = snapshot.disks
    if not disks:
        none = np.empty(0, dtype=np.int64)
        return UnitColumns([], [], [], [], [], [], [], none, [], [], [], none)
    rules = snapshot.rules
    ds_col = list(map(_datastore_of, disks))
    vm_col = list(map(_vm_of, disks))
    (vm_rank, vm_codes), (ds_rank, ds_codes) = _ranks(vm_col, grouped=True), _ranks(ds_col)
    order, starts, sizes = _group(disks, vm_codes, ds_codes, _codes_of(vm_rank, rules.splittable_vms))
    head = _items(order[starts].tolist())  # each group's first disk in input order
    ds_g = head(ds_col)
    vm_g = head(vm_col)
    count = len(ds_g)
    disk_ids = list(map(_disk_id, disks))
    ids_g: list[tuple[str, ...]] = list(zip(head(disk_ids), strict=True))
    disk_models = models.disks
    if len(disk_models) == len(disks) and all(map(is_, disk_models, disk_ids)):
        # The models in disk order (as resolve_models makes them): each group's first disk's by position.
        load_g = head(list(map(_load_of, disk_models.values())))
    else:
        load_g = list(map(_load_of, map(disk_models.__getitem__, (ids[0] for ids in ids_g))))
    # Fields read in disk order (memory order) and then picked, rather than read in group order.
    size_g = head(list(map(_size_of, disks)))
    hosts_g = head(list(map(_hosts_of, disks)))
    iops_g = head(list(map(_iops_of, disks)))
    # Groups of several disks, and those holding a disk with last_moved (for the ping-pong window).
    members_of: dict[int, list[Disk]] = {}
    positions = order.copy()  # the units' disks in unit order: a group's in id order
    for g in np.flatnonzero(sizes > 1).tolist():
        start, end = int(starts[g]), int(starts[g] + sizes[g])
        at = sorted(order[start:end].tolist(), key=disk_ids.__getitem__)  # stable: as sorting the disks
        positions[start:end] = at
        members = [disks[i] for i in at]
        members_of[g] = members
        ids_g[g], load_g[g], size_g[g], hosts_g[g], iops_g[g] = _group_sums(members, disk_models)
    moved: list[int] = []
    if snapshot.now is not None:
        carries = np.fromiter(
            map(is_not, map(_moved_of, disks), repeat(None)), dtype=np.bool_, count=len(disks)
        )
        if carries.any():
            group_of = np.repeat(np.arange(count), sizes)
            moved = np.unique(group_of[carries[order]]).tolist()
    for g in moved:
        if g not in members_of:
            members_of[g] = [disks[int(order[starts[g]])]]
    no_conflicts: frozenset[str] = frozenset()
    conflicts_g = list(map(conflict_index(rules.anti_affinity).get, vm_g, repeat(no_conflicts, count)))
    pinned_g: list[str | None] = [None] * count
    why_g = [""] * count
    heads = order[starts]
    keys = (vm_g, ds_g, vm_rank, ds_rank, vm_codes[heads], ds_codes[heads])
    _pin(snapshot, params, (pinned_g, why_g), keys, moved=moved, members_of=members_of)
    fields = zip(
        range(count),
        vm_g,
        ids_g,
        ds_g,
        load_g,
        size_g,
        hosts_g,
        iops_g,
        conflicts_g,
        pinned_g,
        why_g,
        strict=True,
    )
    # tuple.__new__ is what Unit(...) calls, without its Python-level wrapper (40,000 times).
    units = list(map(_new_tuple, repeat(Unit, count), fields))
    return UnitColumns(
        units,
        ds_g,
        ids_g,
        load_g,
        size_g,
        iops_g,
        pinned_g,
        sizes.astype(np.int64),
        disk_ids,
        ds_col,
        vm_col,
        positions,
    )


def _group(
    disks: Sequence[Disk],
    vm_codes: npt.NDArray[np.int64],
    ds_codes: npt.NDArray[np.int64],
    splittable: list[int],
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """The disks' positions in the order of their (datastore, VM, disk id of a splittable VM's disk or
    "") keys, ties in disk order, and where each group of equal keys starts in it and its size; from
    the ranks of the VMs and datastores and the codes of the splittable VMs."""
    columns = [vm_codes, ds_codes]
    if splittable:
        # A splittable VM's disk: its id's rank among those disks' ids (from 1); others "" (0).
        id_codes = np.zeros(len(disks), dtype=np.int64)
        at = np.flatnonzero(np.isin(vm_codes, splittable)).tolist()
        if at:
            id_codes[at] = _ranks(list(map(_disk_id, _items(at)(disks))))[1] + 1
        columns.insert(0, id_codes)
    # One stable sort of every key: lexsort's last column is the primary one.
    order = lexsort_codes(columns)
    # Groups start where any part of the key changes along that order.
    change = np.zeros(max(len(order) - 1, 0), dtype=np.bool_)
    for codes in columns:
        ranked = codes[order]
        change |= ranked[1:] != ranked[:-1]
    starts = np.concatenate(([0], np.flatnonzero(change) + 1))
    return order, starts, np.diff(starts, append=len(order))


def lexsort_codes(columns: Sequence[npt.NDArray[np.int64]]) -> npt.NDArray[np.int64]:
    """``np.lexsort(columns)`` for columns of codes from 0 (ranks): the same stable sort by the last
    column, then the one before, and so on, made as one stable sort per column from the first, each
    of 16-bit codes when they fit (numpy sorts those by radix, in linear time)."""
    order = np.arange(len(columns[0]) if columns else 0, dtype=np.int64)
    for codes in columns:
        picked = codes[order]
        small = picked.size == 0 or (int(picked.min()) >= 0 and int(picked.max()) < 2**15)
        order = order[np.argsort(picked.astype(np.int16) if small else picked, kind="stable")]
    return order


def _ranks(values: list[str], *, grouped: bool = False) -> tuple[dict[str, int], npt.NDArray[np.int64]]:
    """Each distinct value's rank among them in Python's string order, and each value's rank.
    *grouped*: the values likely come in runs, in order (a VM's disks listed together): their
    distinct values in first-seen order are then (nearly) sorted, which a sort goes through in one pass."""
    distinct = sorted(dict.fromkeys(values) if grouped else set(values))
    rank = dict(zip(distinct, range(len(distinct)), strict=True))
    return rank, np.fromiter(map(rank.__getitem__, values), dtype=np.int64, count=len(values))


def _codes_of(rank: Mapping[str, int], chosen: Iterable[str]) -> list[int]:
    """The ranks of the *chosen* values that occur (by the smaller side: few are chosen)."""
    return [code for name in chosen if (code := rank.get(name)) is not None]


def _pin(
    snapshot: Snapshot,
    params: BalancerParams,
    out: tuple[list[str | None], list[str]],
    keys: tuple[
        Sequence[str],
        Sequence[str],
        dict[str, int],
        dict[str, int],
        npt.NDArray[np.int64],
        npt.NDArray[np.int64],
    ],
    *,
    moved: list[int],
    members_of: Mapping[int, list[Disk]],
) -> None:
    """Mark the units that may not move in *out* (codes, reasons) by *keys* (VMs, datastores):
    excluded VM, source in maintenance, a disk moved within the ping-pong window (*moved*: the groups
    holding a disk with last_moved), in that order of precedence; *members_of* holds those groups'
    disks sorted by id."""
    pinned_g, why_g = out
    vm_g, ds_g, vm_rank, ds_rank, vm_codes, ds_codes = keys
    excluded = snapshot.rules.excluded_vms
    maintenance = {ds.name for ds in snapshot.datastores if ds.maintenance}
    candidates = set(moved)
    for rank, codes, chosen in ((vm_rank, vm_codes, excluded), (ds_rank, ds_codes, maintenance)):
        if chosen:
            candidates.update(np.flatnonzero(np.isin(codes, _codes_of(rank, chosen))).tolist())
    window = params.ping_pong_hours * 3600.0
    now = snapshot.now
    recently = set(moved)
    for g in sorted(candidates):
        vm, datastore = vm_g[g], ds_g[g]
        if vm in excluded:
            pinned_g[g], why_g[g] = PINNED_EXCLUDED, f"VM {vm} is excluded from balancing"
        elif datastore in maintenance:
            pinned_g[g], why_g[g] = (
                PINNED_MAINTENANCE,
                f"datastore {datastore} is in maintenance (evacuation is not balancing)",
            )
        elif g in recently:
            assert now is not None  # moved is empty without a clock
            members = members_of[g]
            recent = [d for d in members if d.last_moved is not None and now - d.last_moved < window]
            if recent:
                hours = (now - max(d.last_moved or 0.0 for d in recent)) / 3600.0
                pinned_g[g] = PINNED_PING_PONG
                why_g[g] = (
                    f"disk {recent[0].id} moved {hours:.1f} h ago "
                    f"(< {params.ping_pong_hours:g} h ping-pong window)"
                )


def _items(positions: list[int]) -> Callable[[Sequence[T]], list[T]]:
    """A function picking *positions* from a sequence, in that order (in one C call)."""
    if len(positions) == 1:
        only = positions[0]
        return lambda values: [values[only]]
    pick = itemgetter(*positions)
    return lambda values: list(pick(values))


def _group_sums(
    members: list[Disk], disk_models: Mapping[str, DiskLoad]
) -> tuple[tuple[str, ...], float, float, frozenset[str], float | None]:
    """A group's disk ids, ΣL, Σ size, hosts seeing all of it, Σ IOPS (None if one is unknown): each
    sum from 0 in disk order, as sum() adds, in one loop (no generator per sum)."""
    ids: list[str] = []
    host_sets: list[frozenset[str]] = []
    load: float = 0
    size: float = 0
    iops: float | None = 0
    for d in members:
        ids.append(d.id)
        host_sets.append(d.hosts)
        load += disk_models[d.id].load
        size += d.size_gb
        if iops is not None:
            iops = None if d.iops is None else iops + (d.iops or 0.0)
    return tuple(ids), load, size, frozenset().union(*host_sets), iops


_new_tuple = tuple.__new__
_disk_id = attrgetter("id")
_vm_of = attrgetter("vm")
_datastore_of = attrgetter("datastore")
_load_of = attrgetter("load")
_size_of = attrgetter("size_gb")
_hosts_of = attrgetter("hosts")
_iops_of = attrgetter("iops")
_moved_of = attrgetter("last_moved")


class Budget:
    """Moves and GB left in this round, over all pods (None: unlimited)."""

    def __init__(self, moves: int | None, gb: float | None) -> None:
        self.moves = moves
        self.gb = gb

    def allows(self, unit: Unit) -> bool:
        return (self.moves is None or self.moves >= 1) and (self.gb is None or unit.size_gb <= self.gb + 1e-9)

    def allows_pair(self, first: Unit, second: Unit) -> bool:
        """Whether both units may still move (a swap)."""
        size = first.size_gb + second.size_gb
        return (self.moves is None or self.moves >= 2) and (self.gb is None or size <= self.gb + 1e-9)

    def spend(self, unit: Unit) -> None:
        if self.moves is not None:
            self.moves -= 1
        if self.gb is not None:
            self.gb -= unit.size_gb

    @property
    def out_of_moves(self) -> bool:
        return self.moves is not None and self.moves <= 0


class PlacementState:
    """Free space and VMs per datastore as moves are planned, and the hard-constraint checks on them."""

    def __init__(
        self,
        snapshot: Snapshot,
        models: Models,
        params: BalancerParams,
        *,
        disk_columns: tuple[Sequence[str], Sequence[str]] | None = None,
    ) -> None:
        """*disk_columns*: the datastore and the VM of every disk of *snapshot*, in its order, when
        already read (``UnitColumns.disk_datastores`` and ``disk_vms``)."""
        self.datastores: dict[str, Datastore] = {ds.name: ds for ds in snapshot.datastores}
        self.free: dict[str, float] = {ds.name: ds.free_gb for ds in snapshot.datastores}
        self.reserve: dict[str, float] = {
            ds.name: ds.capacity_gb * params.space_headroom_pct / 100.0 for ds in snapshot.datastores
        }
        self.new: set[str] = {name for name, m in models.datastores.items() if m.new}
        self.received: Counter[str] = Counter()
        vms_on: dict[str, list[str]] = {ds.name: [] for ds in snapshot.datastores}
        if disk_columns is None:
            for disk in snapshot.disks:
                vms_on[disk.datastore].append(disk.vm)
        else:
            for datastore, vm in zip(*disk_columns, strict=True):
                vms_on[datastore].append(vm)
        # Counted by Counter's own loop (C), in disk order as increments one by one would.
        self.vms: dict[str, Counter[str]] = {name: Counter(vms) for name, vms in vms_on.items()}
        self.headroom_pct = params.space_headroom_pct

    def room(self, target: str) -> float:
        """GB that may still be placed on *target* without eating into its headroom."""
        return self.free[target] - self.reserve[target]

    def allows(self, unit: Unit, target: str, *, new_limit: bool = True) -> bool:
        """Fast check of every hard constraint for *unit* on *target* (the balancer's hot path)."""
        ds = self.datastores[target]
        if ds.maintenance or unit.size_gb > self.room(target) or not unit.hosts <= ds.hosts:
            return False
        if new_limit and target in self.new and self.received[target] >= 1:
            return False
        if unit.conflicts:
            present = self.vms[target]
            if any(present[vm] > 0 for vm in unit.conflicts):
                return False
        return True

    def violations(self, unit: Unit, target: str, *, new_limit: bool = True) -> list[Violation]:
        """Every hard constraint *unit* would break on *target*, in words and numbers."""
        ds = self.datastores[target]
        found: list[Violation] = []
        if ds.maintenance:
            found.append(Violation(MAINTENANCE, f"{target} is in maintenance mode"))
        if unit.size_gb > self.room(target):
            left = self.free[target] - unit.size_gb
            found.append(
                Violation(
                    SPACE,
                    f"{target} has {self.free[target]:.1f} GB free; {unit.size_gb:.1f} GB would leave "
                    f"{left:.1f} GB, "
                    f"under the {self.reserve[target]:.1f} GB headroom ({self.headroom_pct:g} % of capacity)",
                )
            )
        missing = sorted(unit.hosts - ds.hosts)
        if missing:
            found.append(Violation(HOSTS, f"{target} is not visible from host(s) {', '.join(missing)}"))
        if new_limit and target in self.new and self.received[target] >= 1:
            found.append(
                Violation(
                    NEW_DATASTORE_LIMIT,
                    f"{target} has no device model yet and already receives a unit this round",
                )
            )
        clash = sorted(vm for vm in unit.conflicts if self.vms[target][vm] > 0)
        if clash:
            found.append(
                Violation(
                    ANTI_AFFINITY, f"{target} holds VM(s) {', '.join(clash)}, anti-affine with {unit.vm}"
                )
            )
        return found

    def apply(self, unit: Unit, source: str, target: str) -> None:
        """Record *unit* moving from *source* to *target*."""
        self.free[source] += unit.size_gb
        self.free[target] -= unit.size_gb
        count = len(unit.disks)
        self.vms[source][unit.vm] -= count
        if self.vms[source][unit.vm] <= 0:
            del self.vms[source][unit.vm]
        self.vms[target][unit.vm] += count
        if target in self.new:
            self.received[target] += 1
