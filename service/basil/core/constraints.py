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
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from operator import attrgetter
from typing import NamedTuple

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


def build_units(snapshot: Snapshot, models: Models, params: BalancerParams) -> list[Unit]:
    """Group the snapshot's disks into units, in a stable order (datastore, VM, first disk id)."""
    rules = snapshot.rules
    window = params.ping_pong_hours * 3600.0
    conflicts_of = conflict_index(rules.anti_affinity)
    maintenance = {ds.name for ds in snapshot.datastores if ds.maintenance}
    by_datastore, moved = _disk_groups(snapshot)
    units: list[Unit] = []
    disk_models = models.disks
    no_conflicts: frozenset[str] = frozenset()
    now = snapshot.now
    excluded = rules.excluded_vms
    no_keys: set[tuple[str, str]] = set()
    for datastore in sorted(by_datastore):
        on = by_datastore[datastore]
        in_maintenance = datastore in maintenance
        moved_here = moved.get(datastore, no_keys) if now is not None else no_keys
        for key in sorted(on):
            group = on[key]
            members = group if len(group) == 1 else sorted(group, key=_disk_id)
            vm = key[0]
            pinned: str | None = None
            why = ""
            if vm in excluded:
                pinned, why = PINNED_EXCLUDED, f"VM {vm} is excluded from balancing"
            elif in_maintenance:
                pinned, why = (
                    PINNED_MAINTENANCE,
                    f"datastore {datastore} is in maintenance (evacuation is not balancing)",
                )
            elif key in moved_here:
                assert now is not None  # moved_here is empty without a clock
                recent = [d for d in members if d.last_moved is not None and now - d.last_moved < window]
                if recent:
                    hours = (now - max(d.last_moved or 0.0 for d in recent)) / 3600.0
                    pinned = PINNED_PING_PONG
                    why = (
                        f"disk {recent[0].id} moved {hours:.1f} h ago "
                        f"(< {params.ping_pong_hours:g} h ping-pong window)"
                    )
            if len(members) == 1:
                only = members[0]
                ids: tuple[str, ...] = (only.id,)
                load = disk_models[only.id].load
                size = only.size_gb
                hosts = only.hosts
                iops = only.iops
            else:
                ids, load, size, hosts, iops = _group_sums(members, disk_models)
            conflicts = conflicts_of.get(vm, no_conflicts)
            # tuple.__new__ is what Unit(...) calls, without its Python-level wrapper (40,000 times).
            units.append(
                _new_tuple(
                    Unit, (len(units), vm, ids, datastore, load, size, hosts, iops, conflicts, pinned, why)
                )
            )
    return units


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


_Groups = dict[str, dict[tuple[str, str], list[Disk]]]
_new_tuple = tuple.__new__
_disk_id = attrgetter("id")


def _disk_groups(snapshot: Snapshot) -> tuple[_Groups, dict[str, set[tuple[str, str]]]]:
    """The disks of each unit, per datastore and (VM, disk id for a splittable VM's disk, else ""):
    a splittable VM's disks are each their own unit; and per datastore the (VM, id) keys of the groups
    that hold a disk with ``last_moved``. Sorting each datastore's keys gives the order of sorting
    every (datastore, VM, id) key at once, in shorter sorts."""
    by_datastore: _Groups = defaultdict(dict)
    moved: dict[str, set[tuple[str, str]]] = defaultdict(set)
    splittable = snapshot.rules.splittable_vms
    for disk in snapshot.disks:
        key = (disk.vm, disk.id if disk.vm in splittable else "")
        on = by_datastore[disk.datastore]
        group = on.get(key)
        if group is None:
            on[key] = [disk]
        else:
            group.append(disk)
        if disk.last_moved is not None:
            moved[disk.datastore].add(key)
    return by_datastore, moved


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

    def __init__(self, snapshot: Snapshot, models: Models, params: BalancerParams) -> None:
        self.datastores: dict[str, Datastore] = {ds.name: ds for ds in snapshot.datastores}
        self.free: dict[str, float] = {ds.name: ds.free_gb for ds in snapshot.datastores}
        self.reserve: dict[str, float] = {
            ds.name: ds.capacity_gb * params.space_headroom_pct / 100.0 for ds in snapshot.datastores
        }
        self.new: set[str] = {name for name, m in models.datastores.items() if m.new}
        self.received: Counter[str] = Counter()
        vms_on: dict[str, list[str]] = {ds.name: [] for ds in snapshot.datastores}
        for disk in snapshot.disks:
            vms_on[disk.datastore].append(disk.vm)
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
