"""Benchmark of one SRP control step: 100 VMs, and 40,000 VMs in a 4-level pool tree.

Prints, per size, the time to validate and build the tree, the time of one control step (demand,
R/L/S divvy, entitlements, per-disk split, host queue depths) and of the vSphere mapping, each the
best of a few runs, then the peak memory of build + step measured in a separate traced run
(tracemalloc slows Python down, so it never overlaps the timed runs).

    .venv/bin/python benchmarks/bench_srp.py [--repeat N]

Target: the 40,000-VM control step under 1 s on the project's 2-core machine.
"""

from __future__ import annotations

import argparse
import gc
import random
import time
import tracemalloc
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from basil.srp.capacity import ArrayState
from basil.srp.demand import DemandSnapshot, DiskStats, VmStats
from basil.srp.engine import SrpResult, control_step
from basil.srp.params import SrpParams
from basil.srp.tree import Controls, LeafSpec, PoolSpec, PoolTree, build_tree
from basil.srp.vsphere_allocation import vsphere_allocations

T = TypeVar("T")
INF = float("inf")


@dataclass(frozen=True)
class Workload:
    label: str
    root: Controls
    pools: list[PoolSpec]
    leaves: list[LeafSpec]
    demand: DemandSnapshot
    disks: int


def make_workload(label: str, fanout: list[int], vms_per_pool: int, hosts: int, seed: int = 7) -> Workload:
    """Pools nested by ``fanout`` (one entry per level), VMs under the deepest pools.

    Every VM has one to three disks with their own figures; one VM in five reserves IOPS, one
    pool in four has a limit, shares are drawn from low/normal/high.
    """
    rng = random.Random(seed)
    pools: list[PoolSpec] = []
    level: list[str | None] = [None]
    for depth, width in enumerate(fanout):
        nxt: list[str | None] = []
        for parent in level:
            for i in range(width):
                name = f"{parent or 'p'}.{i}" if depth else f"p{i}"
                pools.append(PoolSpec(name, parent, Controls(shares=rng.choice([500.0, 1000.0, 2000.0]))))
                nxt.append(name)
        level = nxt

    leaves: list[LeafSpec] = []
    vms: dict[str, VmStats] = {}
    promised: dict[str | None, float] = {}
    disk_count = 0
    for parent in level:
        for j in range(vms_per_pool):
            name = f"vm-{parent}-{j}"
            reservation = rng.choice([50.0, 100.0]) if rng.random() < 0.2 else 0.0
            promised[parent] = promised.get(parent, 0.0) + reservation
            limit = INF if rng.random() < 0.7 else 500.0 + rng.random() * 2000
            leaves.append(
                LeafSpec(
                    name, None, parent, Controls(reservation, limit, rng.choice([500.0, 1000.0, 2000.0]))
                )
            )
            disks = tuple(
                DiskStats(
                    f"scsi0:{k}",
                    rng.random() * 300,
                    2 + rng.random() * 40,
                    rng.choice([4.0, 8.0, 64.0]),
                    "ds1",
                )
                for k in range(rng.randint(1, 3))
            )
            disk_count += len(disks)
            vms[name] = VmStats(host=f"esx-{rng.randrange(hosts):03d}", disks=disks)

    # Limits on one pool in four, high enough for what the VMs below it reserve.
    children_reserved: dict[str, float] = {}
    for spec in reversed(pools):
        below = promised.get(spec.name, 0.0) + children_reserved.get(spec.name, 0.0)
        if spec.parent is not None:
            children_reserved[spec.parent] = children_reserved.get(spec.parent, 0.0) + below
        else:
            promised[None] = promised.get(None, 0.0) + below
    limited = [
        PoolSpec(
            s.name,
            s.parent,
            Controls(
                0.0,
                (promised.get(s.name, 0.0) + children_reserved.get(s.name, 0.0)) * 1.5 + 1000
                if rng.random() < 0.25
                else INF,
                s.controls.shares,
            ),
        )
        for s in pools
    ]
    total_reserved = promised.get(None, 0.0)
    root = Controls(total_reserved, INF, 1000.0)
    return Workload(label, root, limited, leaves, DemandSnapshot(vms), disk_count)


def best_of(repeat: int, fn: Callable[[], T]) -> tuple[float, T]:
    best = float("inf")
    result: T | None = None
    for _ in range(repeat):
        gc.collect()
        start = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - start)
    assert result is not None
    return best, result


def bench(workload: Workload, repeat: int) -> None:
    params = SrpParams(latency_threshold_ms=30.0)
    reservable = workload.root.reservation * 1.25 + 1000
    array = ArrayState(queue_depth=reservable * 0.030, latency_ms=32.0)

    def build() -> PoolTree:
        return build_tree(workload.root, workload.pools, workload.leaves, reservable)

    t_build, tree = best_of(repeat, build)

    def step() -> SrpResult:
        return control_step(tree, workload.demand, array, params)

    t_step, result = best_of(repeat, step)
    t_map, mapped = best_of(repeat, lambda: vsphere_allocations(result.disks))

    gc.collect()
    tracemalloc.start()
    traced_tree = build()
    control_step(traced_tree, workload.demand, array, params)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()

    print(
        f"{workload.label}: {len(workload.leaves)} VMs, {workload.disks} disks, {len(workload.pools)} pools, "
        f"{len(result.hosts)} hosts"
    )
    print(f"  build + validate tree   {t_build * 1000:9.1f} ms")
    print(
        f"  control step            {t_step * 1000:9.1f} ms   (demand, R/L/S divvy, entitlements, disks, Q_h)"
    )
    print(f"  vSphere mapping         {t_map * 1000:9.1f} ms   ({len(mapped)} disks)")
    print(f"  build + step            {(t_build + t_step) * 1000:9.1f} ms")
    print(f"  peak memory (build + step, tracemalloc) {peak / 2**20:.1f} MiB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--repeat", type=int, default=3, help="runs per timing; the best is printed")
    args = parser.parse_args()
    bench(make_workload("small", [5], 20, hosts=4), args.repeat)
    # root -> 10 -> 10 -> 10 pools (4 levels with the VMs), 40 VMs under each of the 1000 deepest pools.
    bench(make_workload("large", [10, 10, 10], 40, hosts=64), args.repeat)


if __name__ == "__main__":
    main()
