"""Benchmark one full BASIL recommendation round on synthetic pods and print wall time and peak memory.

Pods: 8 disks on 3 datastores (the paper's testbed size), 2,000 disks on 50, and 40,000 on 1,000
(vCenter scale). Each disk gets a workload model, each datastore a P; VMs have 1-3 disks, placement
is skewed so there is imbalance to remove, a few VMs are anti-affine or excluded, a few disks moved
recently. Target: the largest round under 5 s and 1 GiB on the project's 2-core machine.

Wall time is the best of ``--repeat`` rounds, CPU time (``time.process_time``) the lowest: on a
shared, loaded machine the CPU time is the steadier figure. The CPU time of the setup's parts
(validation, models, units, demands; :func:`setup_parts`, each timed on its own) is printed under it.

Run: ``.venv/bin/python benchmarks/bench_balancer.py`` (or ``make bench``).
"""

from __future__ import annotations

import argparse
import gc
import json
import resource
import sys
import time
import tracemalloc

import numpy as np

from basil.core.balancer import recommend
from basil.core.constraints import build_units
from basil.core.normalized_load import resolve_models
from basil.core.params import BalancerParams
from basil.core.predictive import disk_demands
from basil.core.snapshot import Datastore, Disk, Rules, Snapshot, parse_snapshot, snapshot_to_document
from basil.core.workload_model import WorkloadParams
from basil.errors import raise_if_problems

NOW = 1_700_000_000.0
SIZES = [(8, 3), (2_000, 50), (40_000, 1_000)]


def synthetic_snapshot(disks: int, datastores: int, seed: int = 7) -> Snapshot:
    """A pod of *datastores* datastores holding *disks* disks of VMs with 1-3 disks each."""
    rng = np.random.default_rng(seed)
    hosts = [f"esx-{h:02d}" for h in range(max(2, min(32, datastores // 8)))]
    all_hosts = frozenset(hosts)
    # Devices from slow SATA groups to fast flash (P = 1/slope, BASIL §4), placed without regard to
    # it and a little unevenly: the imbalance an administrator who balanced space would leave.
    performance = rng.uniform(0.5, 3.0, datastores)
    weights = rng.uniform(0.5, 1.5, datastores)
    weights /= weights.sum()
    names = [f"ds-{i:04d}" for i in range(datastores)]
    placed = rng.choice(datastores, size=disks, p=weights)
    sizes = rng.choice([10.0, 20.0, 40.0, 60.0, 100.0, 200.0], size=disks)
    used = np.bincount(placed, weights=sizes, minlength=datastores)
    # Datastores of one size, about half full on average, none fuller than 87 %.
    capacity = np.maximum(2.0 * used.mean(), used * 1.15)
    store_list = []
    for i, name in enumerate(names):
        # One datastore in twenty is not visible from the last host (a host outside its cluster).
        visible = all_hosts - {hosts[-1]} if i % 20 == 19 else all_hosts
        store_list.append(
            Datastore(
                name=name,
                capacity_gb=float(capacity[i]),
                free_gb=float(capacity[i] - used[i]),
                hosts=visible,
                performance=float(performance[i]),
            )
        )
    oio = rng.lognormal(1.5, 0.7, disks)
    io_size = rng.choice([4.0, 8.0, 16.0, 32.0, 64.0], size=disks)
    read = rng.uniform(20, 100, disks)
    random_pct = rng.uniform(40, 100, disks)
    iops = rng.uniform(10, 2_000, disks)
    disk_list = []
    vm = 0
    left_in_vm = 0
    for d in range(disks):
        if left_in_vm == 0:
            vm += 1
            left_in_vm = int(rng.integers(1, 4))
        left_in_vm -= 1
        host = hosts[vm % (len(hosts) - 1)]  # never the last host, so every VM can go somewhere
        disk_list.append(
            Disk(
                id=f"vm-{vm:05d}/scsi0:{d % 4}",
                vm=f"vm-{vm:05d}",
                datastore=names[int(placed[d])],
                size_gb=float(sizes[d]),
                hosts=frozenset({host}),
                workload=WorkloadParams(
                    float(oio[d]), float(io_size[d]), float(read[d]), float(random_pct[d])
                ),
                iops=float(iops[d]),
                last_moved=NOW - 3_600.0 if d % 50 == 0 else None,
            )
        )
    vms = sorted({d.vm for d in disk_list})
    rules = Rules(
        splittable_vms=frozenset(vms[::10]),
        anti_affinity=tuple(frozenset(vms[i : i + 3]) for i in range(0, len(vms) - 3, 97)),
        excluded_vms=frozenset(vms[5::100]),
    )
    return Snapshot(datastores=tuple(store_list), disks=tuple(disk_list), rules=rules, now=NOW)


def setup_parts(snap: Snapshot, params: BalancerParams) -> dict[str, float]:
    """CPU seconds of the parts of a round's setup, each timed on its own as the round runs it
    (with the cyclic collector paused, as the round pauses it)."""
    parts: dict[str, float] = {}
    gc.disable()
    try:
        c = time.process_time()
        raise_if_problems([*params.validate(), *snap.validate()], "snapshot")
        parts["validation"] = time.process_time() - c
        c = time.process_time()
        models = resolve_models(snap, params)
        parts["models"] = time.process_time() - c
        c = time.process_time()
        build_units(snap, models, params)
        parts["units"] = time.process_time() - c
        c = time.process_time()
        disk_demands(models, params.workload_model.constants)
        parts["demands"] = time.process_time() - c
    finally:
        gc.enable()
    return parts


def _rss_mib() -> float:
    # ru_maxrss is in KiB on Linux.
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def bench(disks: int, datastores: int, params: BalancerParams, repeat: int) -> None:
    t0 = time.perf_counter()
    snapshot = synthetic_snapshot(disks, datastores)
    build_s = time.perf_counter() - t0

    times = []
    cpu = []
    plan = None
    for _ in range(repeat):
        gc.collect()
        t0, c0 = time.perf_counter(), time.process_time()
        plan = recommend(snapshot, params)
        times.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    assert plan is not None
    outcome = plan.pods[0]

    gc.collect()
    tracemalloc.start()
    recommend(snapshot, params)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()

    text = json.dumps(snapshot_to_document(snapshot, params))
    t0 = time.perf_counter()
    parse_snapshot(json.loads(text))
    parse_s = time.perf_counter() - t0

    parts = setup_parts(snapshot, params)
    print(
        f"{disks:>6} disks / {datastores:>4} datastores: round {min(times):7.3f} s (best of {repeat}; "
        f"median {sorted(times)[len(times) // 2]:.3f} s; CPU {min(cpu):.3f} s), "
        f"peak traced memory {peak / 2**20:7.1f} MiB | "
        f"{len(plan.moves):>5} moves, {plan.total_gb:9.0f} GB, f {outcome.before.imbalance:.3f} → "
        f"{outcome.after.imbalance:.3f} ({outcome.objective}: {outcome.stop}) | build {build_s:.2f} s, "
        f"JSON parse {parse_s:.2f} s ({len(text) / 2**20:.1f} MiB)\n"
        f"       setup CPU: {', '.join(f'{name} {seconds:.3f} s' for name, seconds in parts.items())}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="rounds timed per size (best and median shown)")
    parser.add_argument(
        "--threshold",
        type=float,
        action="append",
        help="imbalance threshold (repeatable); default: the product's default, then 0 (until no move helps)",
    )
    args = parser.parse_args()
    thresholds = args.threshold or [BalancerParams().imbalance_threshold, 0.0]
    print(f"Python {sys.version.split()[0]}, numpy {np.__version__}; one pod per size")
    for threshold in thresholds:
        print(f"imbalance threshold {threshold:g}:")
        params = BalancerParams(imbalance_threshold=threshold, seed=1)
        for disks, datastores in SIZES:
            bench(disks, datastores, params, args.repeat)
    print(f"process peak RSS {_rss_mib():.0f} MiB")


if __name__ == "__main__":
    main()
