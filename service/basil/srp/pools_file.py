"""Reading POOLS.yaml and DEMAND.json into the SRP core types, every problem named by its field path.

POOLS.yaml::

    root: {reservation: 1200, limit: 2300, shares: 1000}     # all optional
    pools:
      - name: E
        shares: high                                         # a number, or low/normal/high
        children:
          - {vm: A, reservation: 400}                        # a whole VM
          - {vm: B, disk: "scsi0:1", limit: unlimited}       # one virtual disk of VM B
          - {tag: "qos/gold", limit: 2000}                   # every VM carrying vSphere tag qos/gold
          - {name: nested-pool, children: [...]}

A node with ``name`` is a pool, one with ``vm`` a leaf, one with ``tag`` (``category/name``) stands
for one whole-VM leaf per VM that carries the tag, each with the tag leaf's reservation, limit and
shares (to give the tagged VMs one reservation together, put the tag leaf in a pool of its own).
Reservation defaults to 0, limit to unlimited, shares to normal (1000). The ``pools`` list takes the
same nodes as ``children``.

Which VMs carry a tag is not in the file: the caller passes ``tags`` (``category/name`` -> VM
names), the service from vCenter's tags, ``basil srp compute`` from ``--tags``. A tag not in that
mapping is an unknown tag. A VM may be reached once: by name (whole or by disk) or by tags of one
pool; a VM reached both by name and by tag, or by tags in two pools, is a problem naming both places.

DEMAND.json, per VM either its own figures or per-disk ones::

    {"A": {"iops": 380, "latency_ms": 31.5, "host": "esx-01", "io_size_kb": 8},
     "B": {"host": "esx-02",
           "disks": {"scsi0:0": {"iops": 120, "latency_ms": 12, "datastore": "ds-1"}}}}

``host`` (for the host queue depth) and ``io_size_kb`` (for IO-size charging) are optional.
"""

from __future__ import annotations

import json
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from basil.errors import Problem, ValidationError, raise_if_problems
from basil.srp.demand import DemandSnapshot, DiskStats, VmStats
from basil.srp.tree import (
    UNLIMITED,
    Controls,
    LeafSpec,
    NodeKind,
    PoolSpec,
    PoolTree,
    build_tree,
    parse_shares,
)

_TOP_KEYS = {"root", "pools"}
_CONTROL_KEYS = {"reservation", "limit", "shares"}
_POOL_KEYS = {"name", "children"} | _CONTROL_KEYS
_LEAF_KEYS = {"vm", "disk"} | _CONTROL_KEYS
_TAG_KEYS = {"tag"} | _CONTROL_KEYS
_NODE_KINDS = ("name", "vm", "tag")
# Pools within pools, at most: real trees have a few levels; a bound keeps every walk of the tree shallow.
MAX_POOL_DEPTH = 32
_VM_DEMAND_KEYS = {"iops", "latency_ms", "io_size_kb", "host", "disks"}
_DISK_DEMAND_KEYS = {"iops", "latency_ms", "io_size_kb", "datastore"}


class _Problems:
    """Collects problems, each field prefixed with the file it came from."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.items: list[Problem] = []

    def add(self, path: str, message: str) -> None:
        self.items.append(Problem(f"{self.source}:{path}" if path else self.source, message))

    def extend(self, problems: list[Problem]) -> None:
        for p in problems:
            self.add(p.field, p.message)


# --- POOLS.yaml ---------------------------------------------------------------------------------


class _StrictLoader(yaml.SafeLoader):
    """PyYAML's safe loader, except that a key repeated in one mapping is an error, not a silent override."""


def _construct_mapping(loader: yaml.SafeLoader, node: yaml.MappingNode) -> dict[Hashable, Any]:
    seen: set[Hashable] = set()
    for key_node, _value in node.value:
        if key_node.tag == "tag:yaml.org,2002:merge":
            continue
        key = loader.construct_object(key_node, deep=True)
        if isinstance(key, Hashable):
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    "while reading a mapping", node.start_mark, f"duplicate key {key!r}", key_node.start_mark
                )
            seen.add(key)
    return loader.construct_mapping(node, deep=True)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def parse_pools_yaml(text: str, source: str = "POOLS.yaml") -> tuple[Any, list[Problem]]:
    """The YAML document, or the syntax problem with its line and column."""
    try:
        return yaml.load(text, Loader=_StrictLoader), []
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(err, "problem", None) or str(err)
        if "recursive" in problem:
            problem += " (an alias refers to a node that contains it: the pools would form a cycle)"
        return None, [Problem(f"{source}:{where}" if where else source, f"not valid YAML: {problem}")]


def read_pools(
    path: Path,
    reservable_capacity: float | None = None,
    source: str | None = None,
    tags: Mapping[str, Sequence[str]] | None = None,
) -> tuple[PoolTree | None, list[Problem]]:
    """Read and validate a pools file; the tree, or None and every problem found.

    *tags* maps ``category/name`` to the VMs carrying the tag, for tag leaves."""
    label = source or path.name
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        return None, [Problem(label, f"cannot read the file: {err}")]
    data, problems = parse_pools_yaml(text, label)
    if problems:
        return None, problems
    return pools_from_data(data, reservable_capacity, label, tags=tags)


def load_pools(
    path: Path, reservable_capacity: float | None = None, tags: Mapping[str, Sequence[str]] | None = None
) -> PoolTree:
    """:func:`read_pools`, raising one ValidationError with every problem."""
    tree, problems = read_pools(path, reservable_capacity, tags=tags)
    raise_if_problems(problems, f"pools file {path}")
    assert tree is not None
    return tree


def pools_from_data(
    data: Any,
    reservable_capacity: float | None = None,
    source: str = "POOLS.yaml",
    *,
    tags: Mapping[str, Sequence[str]] | None = None,
    labels: Mapping[str, str] | None = None,
) -> tuple[PoolTree | None, list[Problem]]:
    """Turn the parsed document into a validated tree: the shape problems and the tree's own, together.

    *tags* maps ``category/name`` to the VMs carrying it (None: no tags known, so a tag leaf is a
    problem); *labels* gives a VM's name for messages when the leaves are ids (the service's moids).
    """
    out = _Problems(source)
    root = Controls()
    if data is None:
        data = {}
    if not isinstance(data, dict):
        out.add("", "must be a mapping with root and pools")
        return None, out.items
    for key in data:
        if key not in _TOP_KEYS:
            out.add(str(key), "unknown key (expected root, pools)")
    if "root" in data:
        raw_root = data["root"]
        if isinstance(raw_root, dict):
            _unknown_keys(raw_root, _CONTROL_KEYS, "root", out)
            root = _controls(raw_root, "root", out)
        elif raw_root is not None:
            out.add("root", "must be a mapping with reservation, limit, shares")
    raw_pools = data.get("pools", [])
    if raw_pools is None:
        raw_pools = []
    if not isinstance(raw_pools, list):
        out.add("pools", "must be a list of pools")
        raw_pools = []
    walk = _Walk(out, tags)
    for i, item in enumerate(raw_pools):
        walk.node(item, f"pools[{i}]", None, frozenset())
    walk.expand_tags(labels or {})

    tree: PoolTree | None = None
    try:
        tree = build_tree(root, walk.pools, walk.leaves, reservable_capacity, root_where="root")
    except ValidationError as err:
        out.extend(list(err.problems))
    return (tree if not out.items else None), out.items


@dataclass
class _Walk:
    """The specifications found so far while walking the nested pools of the document."""

    out: _Problems
    tags: Mapping[str, Sequence[str]] | None = None
    pools: list[PoolSpec] = field(default_factory=list)
    leaves: list[LeafSpec] = field(default_factory=list)
    tag_leaves: list[_TagLeaf] = field(default_factory=list)

    def node(self, item: Any, path: str, parent: str | None, on_path: frozenset[int]) -> None:
        kinds = [k for k in _NODE_KINDS if isinstance(item, dict) and k in item]
        if not isinstance(item, dict):
            self.out.add(path, "must be a mapping: a pool (with name) or a leaf (with vm or tag)")
        elif id(item) in on_path:
            self.out.add(path, "this pool contains itself: the pools would form a cycle")
        elif len(on_path) >= MAX_POOL_DEPTH:
            self.out.add(path, f"pools nest deeper than {MAX_POOL_DEPTH} levels")
        elif len(kinds) > 1:
            self.out.add(
                path,
                f"has both {' and '.join(kinds)}; give one (name: a pool, vm: a VM or disk, tag: tagged VMs)",
            )
        elif "vm" in item:
            self.leaf(item, path, parent)
        elif "tag" in item:
            self.tag_leaf(item, path, parent)
        elif "name" in item:
            self.pool(item, path, parent, on_path)
        else:
            self.out.add(path, "needs name (a pool), vm (a VM or disk leaf) or tag (the VMs carrying a tag)")

    def tag_leaf(self, item: dict[Any, Any], path: str, parent: str | None) -> None:
        _unknown_keys(item, _TAG_KEYS, path, self.out)
        tag = _string(item, "tag", path, self.out)
        controls = _controls(item, path, self.out)
        if tag is None:
            return
        category, _, name = tag.partition("/")
        if not category.strip() or not name.strip():
            self.out.add(f"{path}.tag", f"must be category/name, got {tag!r}")
            return
        if self.tags is None:
            self.out.add(
                f"{path}.tag",
                "a tag leaf needs to know which VMs carry the tag (the service reads vCenter's tags; "
                "basil srp compute takes --tags)",
            )
            return
        if tag not in self.tags:
            self.out.add(f"{path}.tag", f"unknown tag {tag!r} (no tag of that category and name)")
            return
        bad = controls.problems(path)
        if bad:  # reported once here, not once per tagged VM
            self.out.extend(bad)
            return
        self.tag_leaves.append(_TagLeaf(tag, parent, controls, path, tuple(self.tags[tag])))

    def expand_tags(self, labels: Mapping[str, str]) -> None:
        """One whole-VM leaf per tagged VM, unless the VM is reached otherwise (each conflict reported)."""
        by_name: dict[str, LeafSpec] = {}
        for spec in self.leaves:
            by_name.setdefault(spec.vm, spec)
        reached: dict[str, list[_TagLeaf]] = {}
        for t in self.tag_leaves:
            for vm in dict.fromkeys(t.vms):
                reached.setdefault(vm, []).append(t)
        for vm, via in reached.items():
            label = labels.get(vm, vm)
            named = by_name.get(vm)
            first = via[0]
            if named is not None:
                what = "by its disk " + repr(named.disk) if named.disk is not None else "by name"
                self.out.add(
                    f"{first.where}.tag",
                    f"VM {label!r} carries tag {first.tag!r} and is also in the tree {what} at "
                    f"{named.where}; give it one place (remove the named leaf or the tag)",
                )
                continue
            other_pool = next((t for t in via if t.parent != first.parent), None)
            if other_pool is not None:
                self.out.add(
                    f"{other_pool.where}.tag",
                    f"VM {label!r} carries tags {first.tag!r} ({_in_pool(first.parent)}, at {first.where}) "
                    f"and {other_pool.tag!r} ({_in_pool(other_pool.parent)}); a VM can be in one pool only",
                )
                continue
            other_controls = next((t for t in via if t.controls != first.controls), None)
            if other_controls is not None:
                self.out.add(
                    f"{other_controls.where}.tag",
                    f"VM {label!r} carries tags {first.tag!r} (at {first.where}) and {other_controls.tag!r} "
                    "of the same pool with different reservation, limit or shares; give them the same "
                    "settings or keep one tag leaf",
                )
                continue
            self.leaves.append(
                LeafSpec(vm=vm, parent=first.parent, controls=first.controls, where=first.where)
            )

    def leaf(self, item: dict[Any, Any], path: str, parent: str | None) -> None:
        _unknown_keys(item, _LEAF_KEYS, path, self.out)
        vm = _string(item, "vm", path, self.out)
        disk = _string(item, "disk", path, self.out) if "disk" in item else None
        controls = _controls(item, path, self.out)
        if vm is not None and ("disk" not in item or disk is not None):
            self.leaves.append(LeafSpec(vm=vm, disk=disk, parent=parent, controls=controls, where=path))

    def pool(self, item: dict[Any, Any], path: str, parent: str | None, on_path: frozenset[int]) -> None:
        _unknown_keys(item, _POOL_KEYS, path, self.out)
        name = _string(item, "name", path, self.out)
        controls = _controls(item, path, self.out)
        children = item.get("children")
        if children is None:
            children = []
        elif not isinstance(children, list):
            self.out.add(f"{path}.children", "must be a list")
            children = []
        inner = on_path | {id(item)}
        if name is None:
            # Still report what is wrong below it, but keep its children out of the tree: they
            # would only show up again as orphans of a pool without a name.
            aside = _Walk(self.out, self.tags)
            for i, child in enumerate(children):
                aside.node(child, f"{path}.children[{i}]", None, inner)
            specs: list[PoolSpec | LeafSpec] = [*aside.pools, *aside.leaves]
            for spec in specs:
                self.out.extend(spec.controls.problems(spec.where))
            return
        self.pools.append(PoolSpec(name=name, parent=parent, controls=controls, where=path))
        for i, child in enumerate(children):
            self.node(child, f"{path}.children[{i}]", name, inner)


@dataclass(frozen=True)
class _TagLeaf:
    """A ``{tag: category/name}`` leaf and the VMs it stands for."""

    tag: str
    parent: str | None
    controls: Controls
    where: str
    vms: tuple[str, ...]


def _in_pool(parent: str | None) -> str:
    return "under the root" if parent is None else f"in pool {parent!r}"


def _unknown_keys(item: dict[Any, Any], allowed: set[str], path: str, out: _Problems) -> None:
    for key in item:
        if key not in allowed:
            out.add(f"{path}.{key}", f"unknown key (expected one of {', '.join(sorted(allowed))})")


def _string(item: dict[Any, Any], key: str, path: str, out: _Problems) -> str | None:
    value = item.get(key)
    if not isinstance(value, str):
        out.add(f"{path}.{key}", f"must be a string, got {value!r} (quote it in YAML)")
        return None
    if not value.strip():
        out.add(f"{path}.{key}", "must not be empty")
        return None
    return value


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _controls(item: dict[Any, Any], path: str, out: _Problems) -> Controls:
    """Controls with a default for each field that is absent or of the wrong type (reported)."""
    reservation, limit, shares = 0.0, UNLIMITED, Controls().shares
    if item.get("reservation") is not None:
        number = _number(item["reservation"])
        if number is None:
            out.add(f"{path}.reservation", f"must be a number of IOPS, got {item['reservation']!r}")
        else:
            reservation = number
    if item.get("limit") is not None:
        raw = item["limit"]
        if isinstance(raw, str) and raw.strip().lower() == "unlimited":
            limit = UNLIMITED
        else:
            number = _number(raw)
            if number is None:
                out.add(f"{path}.limit", f"must be a number of IOPS or 'unlimited', got {raw!r}")
            elif number == -1:
                out.add(f"{path}.limit", "-1 is vSphere's spelling; write 'unlimited' (or leave it out)")
            else:
                limit = number
    if item.get("shares") is not None:
        try:
            shares = parse_shares(item["shares"])
        except ValueError as err:
            out.add(f"{path}.shares", str(err))
    return Controls(reservation, limit, shares)


# --- TAGS.json ---------------------------------------------------------------------------------


def read_tags(
    path: Path, source: str | None = None
) -> tuple[dict[str, tuple[str, ...]] | None, list[Problem]]:
    """TAGS.json, ``{"category/name": ["VM", ...]}``: which VMs carry each tag, for tag leaves offline.

    The tags and every problem; None only when the file cannot be read as a JSON object."""
    label = source or path.name
    out = _Problems(label)
    try:
        data = json.loads(
            path.read_text(encoding="utf-8"),
            object_pairs_hook=_no_duplicate_keys,
            parse_constant=_no_constant,
        )
    except (OSError, UnicodeDecodeError) as err:
        return None, [Problem(label, f"cannot read the file: {err}")]
    except json.JSONDecodeError as err:
        out.add(f"line {err.lineno}, column {err.colno}", f"not valid JSON: {err.msg}")
        return None, out.items
    except ValueError as err:
        out.add("", f"not valid JSON: {err}")
        return None, out.items
    if not isinstance(data, dict):
        out.add("", 'must be an object {"category/name": ["VM", ...]}')
        return None, out.items
    tags: dict[str, tuple[str, ...]] = {}
    for tag, vms in data.items():
        category, _, name = tag.partition("/")
        if not category.strip() or not name.strip():
            out.add(tag, "a tag is named category/name")
        elif not isinstance(vms, list) or not all(isinstance(v, str) and v for v in vms):
            out.add(tag, "must be a list of VM names")
        else:
            tags[tag] = tuple(vms)
    # The well-formed entries are kept beside the problems, so that a pools file read with them
    # reports its own problems, not an unknown tag for every tag of a file with one bad entry.
    return tags, out.items


# --- DEMAND.json --------------------------------------------------------------------------------


def read_demand(
    path: Path, tree: PoolTree | None = None, source: str | None = None
) -> tuple[DemandSnapshot | None, list[Problem]]:
    """Read and check a demand file (against the tree when one is given)."""
    label = source or path.name
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        return None, [Problem(label, f"cannot read the file: {err}")]
    out = _Problems(label)
    try:
        data = json.loads(text, object_pairs_hook=_no_duplicate_keys, parse_constant=_no_constant)
    except json.JSONDecodeError as err:
        out.add(f"line {err.lineno}, column {err.colno}", f"not valid JSON: {err.msg}")
        return None, out.items
    except ValueError as err:
        out.add("", f"not valid JSON: {err}")
        return None, out.items
    return demand_from_data(data, tree, label)


def load_demand(path: Path, tree: PoolTree | None = None) -> DemandSnapshot:
    snapshot, problems = read_demand(path, tree)
    raise_if_problems(problems, f"demand file {path}")
    assert snapshot is not None
    return snapshot


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise ValueError(f"duplicate key {key!r}")
        result[key] = value
    return result


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number JSON allows")


def demand_from_data(
    data: Any, tree: PoolTree | None = None, source: str = "DEMAND.json"
) -> tuple[DemandSnapshot | None, list[Problem]]:
    out = _Problems(source)
    if not isinstance(data, dict):
        out.add("", 'must be an object {"VM": {"iops": ..., "latency_ms": ...}}')
        return None, out.items
    vms: dict[str, VmStats] = {}
    for vm, entry in data.items():
        stats = _vm_demand(vm, entry, out)
        if stats is not None:
            vms[vm] = stats
    if tree is not None:
        _check_against_tree(data, vms, tree, out)
    snapshot = DemandSnapshot(vms)
    out.extend(snapshot.problems())
    return (snapshot if not out.items else None), out.items


def _vm_demand(vm: str, entry: Any, out: _Problems) -> VmStats | None:
    if not isinstance(entry, dict):
        out.add(vm, 'must be an object like {"iops": 250, "latency_ms": 20}')
        return None
    _unknown_keys(entry, _VM_DEMAND_KEYS, vm, out)
    has_own = "iops" in entry or "latency_ms" in entry
    has_disks = "disks" in entry
    if has_own == has_disks:
        out.add(
            vm,
            "give either iops and latency_ms for the VM or per-disk figures under disks, not both"
            if has_own
            else "needs iops and latency_ms (or per-disk figures under disks)",
        )
        return None
    host: str | None = None
    if entry.get("host") is not None:
        if isinstance(entry["host"], str) and entry["host"]:
            host = entry["host"]
        else:
            out.add(f"{vm}.host", f"must be a non-empty string, got {entry['host']!r}")
    io_size = _optional_number(entry, "io_size_kb", vm, out)
    if has_disks:
        if "io_size_kb" in entry:
            out.add(f"{vm}.io_size_kb", "with per-disk figures, give io_size_kb per disk")
        disks = _disk_demands(vm, entry["disks"], out)
        return VmStats(host=host, disks=disks) if disks is not None else None
    iops = _required_number(entry, "iops", vm, out)
    latency = _required_number(entry, "latency_ms", vm, out)
    if iops is None or latency is None:
        return None
    return VmStats(iops=iops, latency_ms=latency, io_size_kb=io_size, host=host)


def _disk_demands(vm: str, raw_disks: Any, out: _Problems) -> tuple[DiskStats, ...] | None:
    if not isinstance(raw_disks, dict) or not raw_disks:
        out.add(f"{vm}.disks", 'must be a non-empty object {"scsi0:0": {"iops": ..., "latency_ms": ...}}')
        return None
    disks: list[DiskStats] = []
    for name, raw in raw_disks.items():
        where = f"{vm}.disks.{name}"
        if not isinstance(raw, dict):
            out.add(where, 'must be an object like {"iops": 120, "latency_ms": 12}')
            continue
        _unknown_keys(raw, _DISK_DEMAND_KEYS, where, out)
        iops = _required_number(raw, "iops", where, out)
        latency = _required_number(raw, "latency_ms", where, out)
        size = _optional_number(raw, "io_size_kb", where, out)
        datastore = raw.get("datastore", "")
        if not isinstance(datastore, str):
            out.add(f"{where}.datastore", f"must be a string, got {datastore!r}")
            datastore = ""
        if iops is not None and latency is not None:
            disks.append(DiskStats(name, iops, latency, size, datastore))
    return tuple(disks)


def _required_number(entry: dict[str, Any], key: str, where: str, out: _Problems) -> float | None:
    if key not in entry:
        out.add(f"{where}.{key}", "is required")
        return None
    value = _number(entry[key])
    if value is None:
        out.add(f"{where}.{key}", f"must be a number, got {entry[key]!r}")
    return value


def _optional_number(entry: dict[str, Any], key: str, where: str, out: _Problems) -> float | None:
    if entry.get(key) is None:
        return None
    value = _number(entry[key])
    if value is None:
        out.add(f"{where}.{key}", f"must be a number, got {entry[key]!r}")
    return value


def _check_against_tree(
    data: dict[str, Any], vms: dict[str, VmStats], tree: PoolTree, out: _Problems
) -> None:
    """Every VM (and disk) with figures must be a leaf; a VM placed by disks needs per-disk figures."""
    whole: set[str] = set()
    disk_leaves: dict[str, set[str]] = {}
    for node in tree.nodes:
        if node.kind is NodeKind.VM and node.vm is not None:
            whole.add(node.vm)
        elif node.kind is NodeKind.DISK and node.vm is not None and node.disk is not None:
            disk_leaves.setdefault(node.vm, set()).add(node.disk)
    for vm in data:
        if vm not in whole and vm not in disk_leaves:
            out.add(vm, "is not in any pool of the pools file")
            continue
        stats = vms.get(vm)
        if vm in disk_leaves and stats is not None:
            if not stats.disks:
                out.add(vm, "its disks are pool leaves, so its figures must be given per disk under disks")
            for disk in stats.disks:
                if disk.name not in disk_leaves[vm]:
                    out.add(f"{vm}.disks.{disk.name}", "this disk is not in any pool of the pools file")
