"""The Storage Resource Pool tree: pools nest under one root, leaves are VMs or single virtual disks.

Each node carries the static (user-set) controls of SRP §2: a reservation and a limit in IOPS and a
number of shares. :func:`build_tree` turns flat specifications into a validated, index-based tree
and reports every problem at once (admission control of §4 included); the divvy and the demand
aggregation then walk the tree by index, parents before children.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from enum import Enum
from functools import cached_property

from basil.errors import Problem, raise_if_problems

#: An absent limit. vSphere writes it as -1; inside Basil it is ``math.inf`` so that comparisons and
#: sums need no special case.
UNLIMITED = math.inf

#: vSphere's named share levels (the same for CPU, memory and disk IO): low/normal/high = 500/1000/2000.
SHARE_LEVELS: dict[str, float] = {"low": 500.0, "normal": 1000.0, "high": 2000.0}
NORMAL_SHARES = SHARE_LEVELS["normal"]

ROOT_NAME = "root"
# Bounds far beyond any device or share setting, so that sums over a tree stay finite (1e308 overflows).
MAX_IOPS = 1e9
MAX_SHARES = 1e9


class NodeKind(Enum):
    ROOT = "root"
    POOL = "pool"
    VM = "vm"
    DISK = "disk"


@dataclass(frozen=True, slots=True)
class Controls:
    """Static reservation and limit (IOPS) and shares of one node, as the administrator set them."""

    reservation: float = 0.0
    limit: float = UNLIMITED
    shares: float = NORMAL_SHARES

    @property
    def valid(self) -> bool:
        """True when :meth:`problems` would find nothing (comparisons with NaN are false)."""
        r, lim, s = self.reservation, self.limit, self.shares
        return (
            0 <= r <= MAX_IOPS and r <= lim and (lim <= MAX_IOPS or lim == UNLIMITED) and 0 < s <= MAX_SHARES
        )

    def problems(self, where: str) -> list[Problem]:
        """Everything wrong with these controls, each named by ``where.<field>``."""
        if self.valid:
            return []
        found: list[Problem] = []
        prefix = f"{where}." if where else ""
        for name, value in (("reservation", self.reservation), ("limit", self.limit)):
            if math.isnan(value):
                found.append(Problem(prefix + name, "must be a number"))
            elif value < 0:
                found.append(Problem(prefix + name, f"must not be negative (got {value:g})"))
        if math.isinf(self.reservation):
            found.append(Problem(prefix + "reservation", "must be finite"))
        for name, value in (("reservation", self.reservation), ("limit", self.limit)):
            if MAX_IOPS < value < math.inf:
                found.append(Problem(prefix + name, f"must be at most {MAX_IOPS:,.0f} IOPS (got {value:g})"))
        if math.isnan(self.shares) or math.isinf(self.shares):
            found.append(Problem(prefix + "shares", "must be a finite number"))
        elif self.shares > MAX_SHARES:
            found.append(
                Problem(prefix + "shares", f"must be at most {MAX_SHARES:,.0f} (got {self.shares:g})")
            )
        elif self.shares < 0:
            found.append(Problem(prefix + "shares", f"must not be negative (got {self.shares:g})"))
        elif self.shares == 0:
            # Algorithm 2 divides by the share fraction w_i, so zero shares have no meaning there.
            found.append(Problem(prefix + "shares", "must be positive (got 0)"))
        if self.reservation >= 0 and self.limit >= 0 and self.reservation > self.limit:
            found.append(
                Problem(
                    prefix + "reservation",
                    f"reservation {self.reservation:g} is above the limit {format_iops(self.limit)}",
                )
            )
        return found


@dataclass(frozen=True, slots=True)
class PoolSpec:
    """A pool as the administrator declared it; ``parent`` None means a child of the root."""

    name: str
    parent: str | None = None
    controls: Controls = field(default_factory=Controls)
    where: str = ""  # where the spec came from (a field path such as ``pools[1]``), for messages


@dataclass(frozen=True, slots=True)
class LeafSpec:
    """A leaf: a whole VM (``disk`` None) or one of its virtual disks (``disk`` like ``scsi0:1``)."""

    vm: str
    disk: str | None = None
    parent: str | None = None
    controls: Controls = field(default_factory=Controls)
    where: str = ""

    @property
    def key(self) -> str:
        return leaf_key(self.vm, self.disk)


def leaf_key(vm: str, disk: str | None) -> str:
    """The name a leaf goes by in results: the VM's name, or ``VM/disk`` for a per-disk leaf."""
    return vm if disk is None else f"{vm}/{disk}"


@dataclass(frozen=True, slots=True)
class Node:
    index: int
    kind: NodeKind
    name: str  # pool name, VM name, or VM/disk for a disk leaf
    controls: Controls
    parent: int  # -1 for the root
    children: tuple[int, ...]
    vm: str | None = None
    disk: str | None = None

    @property
    def is_leaf(self) -> bool:
        return self.kind in (NodeKind.VM, NodeKind.DISK)


@dataclass(frozen=True)
class PoolTree:
    """A validated pool tree. ``nodes[0]`` is the root; every parent comes before its children.

    ``reservation`` and ``user_limit`` hold, per node index, the effective static values the divvy
    uses (see :func:`build_tree`); ``shares`` the static shares.
    """

    nodes: tuple[Node, ...]
    reservation: tuple[float, ...]
    user_limit: tuple[float, ...]
    shares: tuple[float, ...]
    reservable_capacity: float | None = None

    @property
    def root(self) -> Node:
        return self.nodes[0]

    @cached_property
    def leaves(self) -> tuple[Node, ...]:
        """The VM and disk leaves, in tree order (computed once: every control step walks them)."""
        return tuple(n for n in self.nodes if n.is_leaf)

    @cached_property
    def pools(self) -> tuple[Node, ...]:
        """The pools below the root, in tree order."""
        return tuple(n for n in self.nodes if n.kind is NodeKind.POOL)

    def vm_names(self) -> set[str]:
        return {n.vm for n in self.nodes if n.vm is not None}


def format_iops(value: float) -> str:
    """An IOPS figure for people: ``unlimited`` for an absent limit, no trailing ``.0``."""
    if math.isinf(value):
        return "unlimited"
    return f"{value:.0f}" if abs(value - round(value)) < 0.05 else f"{value:.1f}"


def parse_shares(value: object) -> float:
    """Shares given as a number or as vSphere's level name ``low``, ``normal`` or ``high``."""
    if isinstance(value, str):
        level = value.strip().lower()
        if level in SHARE_LEVELS:
            return SHARE_LEVELS[level]
        raise ValueError(f"unknown share level {value!r} (use low, normal, high or a number)")
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"must be a number or low/normal/high, not {type(value).__name__}")
    return float(value)


def build_tree(
    root: Controls,
    pools: Sequence[PoolSpec],
    leaves: Sequence[LeafSpec],
    reservable_capacity: float | None = None,
    root_where: str = "root",
) -> PoolTree:
    """Validate the specifications and build the tree, or raise one ValidationError listing all problems.

    Checked: every node's controls (negative numbers, reservation above limit, shares), empty and
    duplicate pool names, a VM (or disk) in two pools, a VM both as a whole and by disk, unknown
    parents, cycles among pools, children's reservations above a pool's limit, and admission
    control (§4): the reservations under the root must fit in the root's reservation R, and R in
    the reservable capacity of the datastore.

    The effective reservation of a pool is the larger of its own and the sum of its children's, so
    that the R-divvy one level up hands the pool at least what its VMs are promised; the paper
    divvies with the user-set value, which is the same whenever the pool's reservation covers its
    children's, the normal configuration. The effective user limit of a pool is the smaller of its
    own limit and the sum of its children's (§3.3: "the limit for a non-leaf node is set to the
    smaller of its static limit and the sum of its children's limits"), never below its reservation.
    """
    problems: list[Problem] = []
    root = _checked_root(root, reservable_capacity, root_where, problems)
    by_name = _checked_pools(pools, problems)
    accepted = _checked_leaves(leaves, by_name, problems)
    tree = _assemble(root, list(by_name.values()), accepted, reservable_capacity)
    problems.extend(_reservation_problems(tree, root_where, by_name))
    raise_if_problems(problems, "pool tree")
    return tree


def _checked_root(
    root: Controls, reservable_capacity: float | None, root_where: str, problems: list[Problem]
) -> Controls:
    root_problems = root.problems(root_where)
    problems.extend(root_problems)
    if root_problems:
        # Bad controls are reported once; the checks that follow run on defaults instead, so they
        # add no echo of the same mistake.
        root = Controls()
    if reservable_capacity is None:
        return root
    if math.isnan(reservable_capacity) or reservable_capacity < 0:
        problems.append(Problem("reservable_capacity", "must be a non-negative number"))
    elif root.reservation > reservable_capacity:
        problems.append(
            Problem(
                f"{root_where}.reservation",
                f"the root reservation {root.reservation:g} IOPS is above the reservable capacity "
                f"of the datastore ({reservable_capacity:g} IOPS); admission control (§4) refuses it",
            )
        )
    return root


def _checked_pools(pools: Sequence[PoolSpec], problems: list[Problem]) -> dict[str, PoolSpec]:
    """The pools by name, first of each name only; bad controls replaced by defaults once reported."""
    by_name: dict[str, PoolSpec] = {}
    for given in pools:
        where = _pool_where(given)
        bad = given.controls.problems(where)
        problems.extend(bad)
        spec = replace(given, controls=Controls()) if bad else given
        if not spec.name:
            problems.append(Problem(f"{where}.name", "must not be empty"))
        elif spec.name in by_name:
            first = by_name[spec.name].where or "another pool"
            problems.append(Problem(f"{where}.name", f"duplicate pool name {spec.name!r} (also at {first})"))
        else:
            by_name[spec.name] = spec
    for spec in by_name.values():
        if spec.parent is not None and spec.parent not in by_name:
            problems.append(Problem(f"{_pool_where(spec)}.parent", f"unknown parent pool {spec.parent!r}"))
    problems.extend(_cycle_problems(by_name))
    return by_name


def _checked_leaves(
    leaves: Sequence[LeafSpec], by_name: dict[str, PoolSpec], problems: list[Problem]
) -> list[LeafSpec]:
    """The leaves that can go into the tree: each VM once, whole or by distinct disks."""
    whole_vm: dict[str, LeafSpec] = {}
    by_disk: dict[tuple[str, str], LeafSpec] = {}
    disks_of_vm: dict[str, LeafSpec] = {}
    accepted: list[LeafSpec] = []
    for given in leaves:
        spec = given
        if not given.controls.valid:
            problems.extend(given.controls.problems(_leaf_where(given)))
            spec = replace(given, controls=Controls())
        if not spec.vm or (spec.disk is not None and not spec.disk):
            problems.append(
                Problem(_leaf_where(spec), "a leaf needs a non-empty VM name (and disk name, if given)")
            )
            continue
        if spec.parent is not None and spec.parent not in by_name:
            problems.append(Problem(f"{_leaf_where(spec)}.parent", f"unknown parent pool {spec.parent!r}"))
            continue
        if spec.disk is None:
            earlier = whole_vm.get(spec.vm) or disks_of_vm.get(spec.vm)
        else:
            earlier = by_disk.get((spec.vm, spec.disk)) or whole_vm.get(spec.vm)
        if earlier is not None:
            problems.append(_two_pools_problem(_leaf_where(spec), spec, earlier))
            continue
        if spec.disk is None:
            whole_vm[spec.vm] = spec
        else:
            by_disk[(spec.vm, spec.disk)] = spec
            disks_of_vm.setdefault(spec.vm, spec)
        accepted.append(spec)
    return accepted


def _pool_where(spec: PoolSpec) -> str:
    return spec.where or f"pools[{spec.name!r}]"


def _leaf_where(spec: LeafSpec) -> str:
    return spec.where or f"leaves[{spec.key!r}]"


def _two_pools_problem(where: str, spec: LeafSpec, earlier: LeafSpec) -> Problem:
    def place(s: LeafSpec) -> str:
        return f"pool {s.parent!r}" if s.parent is not None else "the root"

    if earlier.disk is None and spec.disk is None:
        what = f"VM {spec.vm!r} is in two pools: {place(earlier)} and {place(spec)}"
    elif earlier.disk is not None and spec.disk is not None:
        what = f"disk {spec.key!r} is in two pools: {place(earlier)} and {place(spec)}"
    else:
        what = (
            f"VM {spec.vm!r} is in two pools: as a whole VM and by its disk(s) "
            f"({place(earlier)} and {place(spec)})"
        )
    return Problem(where, what + (f" (also at {earlier.where})" if earlier.where else ""))


def _cycle_problems(by_name: dict[str, PoolSpec]) -> list[Problem]:
    """One problem per cycle of parent references among pools (such pools never reach the root)."""
    problems: list[Problem] = []
    state: dict[str, int] = {}  # 1 = on the current chain, 2 = finished
    for start in by_name:
        chain: list[str] = []
        name: str | None = start
        while name is not None and name in by_name and state.get(name, 0) == 0:
            state[name] = 1
            chain.append(name)
            name = by_name[name].parent
        if name is not None and state.get(name) == 1:
            cycle = chain[chain.index(name) :]
            spec = by_name[cycle[0]]
            where = _pool_where(spec)
            loop = " -> ".join([*cycle, cycle[0]])
            problems.append(Problem(f"{where}.parent", f"pools form a cycle: {loop}"))
        for member in chain:
            state[member] = 2
    return problems


def _assemble(
    root: Controls,
    pools: Sequence[PoolSpec],
    leaves: Sequence[LeafSpec],
    reservable_capacity: float | None,
) -> PoolTree:
    """Lay the reachable part of the tree out breadth first, then compute the effective values."""
    children_of: dict[str | None, list[PoolSpec | LeafSpec]] = {}
    specs: list[PoolSpec | LeafSpec] = [*pools, *leaves]
    for spec in specs:
        children_of.setdefault(spec.parent, []).append(spec)

    kinds: list[NodeKind] = [NodeKind.ROOT]
    names: list[str] = [ROOT_NAME]
    controls: list[Controls] = [root]
    parents: list[int] = [-1]
    vms: list[str | None] = [None]
    disks: list[str | None] = [None]
    children: list[list[int]] = [[]]
    queue: list[tuple[int, str | None]] = [(0, None)]
    head = 0
    while head < len(queue):
        index, pool_name = queue[head]
        head += 1
        for spec in children_of.get(pool_name, []):
            child = len(kinds)
            children[index].append(child)
            parents.append(index)
            controls.append(spec.controls)
            children.append([])
            if isinstance(spec, PoolSpec):
                kinds.append(NodeKind.POOL)
                names.append(spec.name)
                vms.append(None)
                disks.append(None)
                queue.append((child, spec.name))
            else:
                kinds.append(NodeKind.VM if spec.disk is None else NodeKind.DISK)
                names.append(spec.key)
                vms.append(spec.vm)
                disks.append(spec.disk)

    count = len(kinds)
    reservation = [c.reservation for c in controls]
    user_limit = [c.limit for c in controls]
    for index in range(count - 1, -1, -1):  # children before parents
        kids = children[index]
        if kinds[index] in (NodeKind.POOL, NodeKind.ROOT) and kids:
            promised = math.fsum(reservation[k] for k in kids)
            # Never above the pool's own limit, even by the rounding of the sum (validation allows
            # no more than that): the divvy needs r <= l at every node.
            reservation[index] = min(
                max(reservation[index], promised), max(controls[index].limit, reservation[index])
            )
            kid_limit = sum(user_limit[k] for k in kids)
            user_limit[index] = max(reservation[index], min(user_limit[index], kid_limit))
        elif kinds[index] in (NodeKind.POOL, NodeKind.ROOT):
            user_limit[index] = max(reservation[index], user_limit[index])
    nodes = tuple(
        Node(i, kinds[i], names[i], controls[i], parents[i], tuple(children[i]), vms[i], disks[i])
        for i in range(count)
    )
    return PoolTree(
        nodes=nodes,
        reservation=tuple(reservation),
        user_limit=tuple(user_limit),
        shares=tuple(c.shares for c in controls),
        reservable_capacity=reservable_capacity,
    )


def _reservation_problems(tree: PoolTree, root_where: str, by_name: dict[str, PoolSpec]) -> list[Problem]:
    problems: list[Problem] = []
    for node in tree.nodes:
        if node.is_leaf or not node.children:
            continue
        promised = math.fsum(tree.reservation[k] for k in node.children)
        if node.kind is NodeKind.ROOT:
            if promised > node.controls.reservation + 1e-9:
                problems.append(
                    Problem(
                        f"{root_where}.reservation",
                        f"the reservations below the root add up to {promised:g} IOPS, more than the "
                        f"root reservation R = {node.controls.reservation:g} that admission control "
                        "allows on this datastore (§4)",
                    )
                )
        elif promised > node.controls.limit + 1e-9:
            where = _pool_where(by_name[node.name])
            problems.append(
                Problem(
                    f"{where}.limit",
                    f"the children's reservations add up to {promised:g} IOPS, above the pool's "
                    f"limit {format_iops(node.controls.limit)}",
                )
            )
    return problems
