"""``basil srp``: Storage Resource Pool settings computed offline from a pools file and a demand file."""

from __future__ import annotations

import json
import math
from pathlib import Path

import click

from basil.errors import Problem, raise_if_problems
from basil.srp.engine import Allocation, SrpResult, allocate
from basil.srp.params import SrpParams
from basil.srp.pools_file import read_demand, read_pools, read_tags
from basil.srp.tree import NodeKind, PoolTree, format_iops

_DEFAULT_LATENCY_THRESHOLD_MS = SrpParams().latency_threshold_ms


@click.group("srp")
def srp() -> None:
    """Storage Resource Pools: reservations, limits and shares for groups of VMs (Gulati et al. 2012)."""


@srp.command("compute")
@click.option(
    "--pools",
    "pools_path",
    required=True,
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="POOLS.yaml: the pool tree with static reservations, limits and shares.",
)
@click.option(
    "--demand",
    "demand_path",
    required=True,
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help='DEMAND.json: {"VM": {"iops": x, "latency_ms": y}} measured over the last interval.',
)
@click.option(
    "--capacity",
    required=True,
    type=float,
    metavar="IOPS",
    help="The array's IOPS to hand out as entitlements; also the reservable capacity for admission control.",
)
@click.option(
    "--latency-threshold-ms",
    "latency_threshold_ms",
    type=float,
    default=_DEFAULT_LATENCY_THRESHOLD_MS,
    show_default=True,
    metavar="L_c",
    help="Congestion threshold L_c in milliseconds (demand = latency × IOPS / L_c).",
)
@click.option(
    "--tags",
    "tags_path",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help='TAGS.json: {"category/name": ["VM", ...]}, the VMs carrying each tag, for {tag: ...} leaves.',
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a tree.")
def compute(
    *,
    pools_path: Path,
    demand_path: Path,
    capacity: float,
    latency_threshold_ms: float,
    tags_path: Path | None,
    as_json: bool,
) -> None:
    """Compute dynamic reservation, limit, shares and entitlement for every VM and pool.

    One SRP control step (§3 of the paper): demand by Little's law, R-, L- and S-divvy of the
    root's settings down the tree, and the entitlement of the array's IOPS. Every problem in the
    input is reported at once, and nothing is printed on standard output then.
    """
    params = SrpParams(latency_threshold_ms=latency_threshold_ms)
    problems: list[Problem] = [
        Problem(f"--latency-threshold-ms ({p.field})", p.message) for p in params.problems()
    ]
    if not math.isfinite(capacity) or capacity < 0:
        problems.append(Problem("--capacity", f"must be finite and non-negative IOPS, got {capacity:g}"))
        reservable = None
    else:
        reservable = capacity
    tags: dict[str, tuple[str, ...]] | None = None
    if tags_path is not None:
        tags, tag_problems = read_tags(tags_path, source=str(tags_path))
        problems.extend(tag_problems)
    tree, pool_problems = read_pools(pools_path, reservable, source=str(pools_path), tags=tags)
    problems.extend(pool_problems)
    snapshot, demand_problems = read_demand(demand_path, tree, source=str(demand_path))
    problems.extend(demand_problems)
    raise_if_problems(problems, "input")
    assert tree is not None
    assert snapshot is not None

    result = allocate(tree, snapshot, capacity, params)
    if as_json:
        click.echo(json.dumps(result_to_json(result), indent=2))
    else:
        click.echo(render_tree(tree, result))


def _number(value: float) -> float | str:
    """A JSON-friendly figure: ``unlimited`` for an absent limit, three decimals otherwise."""
    if math.isinf(value):
        return "unlimited"
    return round(value, 3)


def allocation_to_json(a: Allocation) -> dict[str, float | str]:
    return {
        "reservation": _number(a.reservation),
        "limit": _number(a.limit),
        "shares": _number(a.shares),
        "entitlement": _number(a.entitlement),
        "demand": _number(a.demand),
    }


def result_to_json(result: SrpResult) -> dict[str, object]:
    """``{"vms": {...}, "pools": {...}}`` as the issue specifies, plus the root, disks, hosts and array."""
    return {
        "vms": {vm: allocation_to_json(a) for vm, a in result.vms.items()},
        "pools": {name: allocation_to_json(a) for name, a in result.pools.items()},
        "root": allocation_to_json(result.root),
        "disks": {
            d.key: {
                "vm": d.vm,
                "disk": d.disk,
                "datastore": d.datastore,
                "host": d.host,
                **allocation_to_json(d.allocation),
            }
            for d in result.disks
        },
        "hosts": {host: {"queue_depth": round(q, 3)} for host, q in sorted(result.hosts.items())},
        "array": {
            "iops": _number(result.array_iops),
            "queue_depth": round(result.queue_depth, 3),
            "latency_threshold_ms": result.latency_threshold_ms,
        },
    }


_COLUMNS = ("reservation", "limit", "shares", "entitlement", "demand")


def render_tree(tree: PoolTree, result: SrpResult) -> str:
    """The pool tree with each node's dynamic settings in aligned columns, then the hosts."""
    rows: list[tuple[str, Allocation]] = []
    disk_leaves = {d.key: d.allocation for d in result.disks if d.leaf}

    def walk(index: int, prefix: str, last: bool, top: bool) -> None:
        node = tree.nodes[index]
        if node.kind is NodeKind.ROOT:
            label, allocation = "root", result.root
        elif node.kind is NodeKind.POOL:
            label, allocation = node.name, result.pools[node.name]
        else:
            label = f"{node.name} ({node.kind.value})"
            allocation = result.vms[node.name] if node.kind is NodeKind.VM else disk_leaves[node.name]
        branch = "" if top else ("`-- " if last else "|-- ")
        rows.append((prefix + branch + label, allocation))
        inner = prefix if top else prefix + ("    " if last else "|   ")
        for position, child in enumerate(node.children):
            walk(child, inner, position == len(node.children) - 1, False)

    walk(0, "", True, True)
    width = max(len("node"), *(len(label) for label, _ in rows))
    lines = [
        f"array {format_iops(result.array_iops)} IOPS, queue depth {result.queue_depth:.1f} "
        f"at L_c = {result.latency_threshold_ms:g} ms",
        "",
        "node".ljust(width) + "".join(f"  {c:>11}" for c in _COLUMNS),
    ]
    for label, a in rows:
        values = (a.reservation, a.limit, a.shares, a.entitlement, a.demand)
        lines.append(label.ljust(width) + "".join(f"  {format_iops(v):>11}" for v in values))
    if result.hosts:
        lines.append("")
        lines.append("host queue depths (eq. 6):")
        lines.extend(f"  {host}: {q:.1f}" for host, q in sorted(result.hosts.items()))
    return "\n".join(lines)
