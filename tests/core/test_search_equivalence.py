"""The optimised round plans exactly what the round planned before it was optimised (issue 11).

Each case is a seeded random pod (multi-disk and splittable VMs, anti-affinity, excluded VMs, disks
that moved recently, disks known by L only, hosts that cannot see every datastore, a datastore in
maintenance). The digest of its decisions (every move's unit, source, target and kind, the imbalance
after it, and each pod's stop, moves and swaps) was recorded from the code before the performance
work (commit 9fc04a2); the plan of the code now must give the same digest.

The normalized_load cases (the objective named explicitly since ``auto`` became the default) still
give 9fc04a2's decisions. The throughput cases were re-recorded when the predictive model moved from
90th-percentile OIO to means anchored on each datastore's line (issue 11, "mean with mean"): its
predictions changed, so its decisions did, by intent. Predicted IOPS are left out of the digest.

The cases of more than 64 datastores (5 to 8) were re-recorded when a large pod's sources by
gradient were turned to the right end (issue 11, "srcfix": the highest w for normalized_load, the
lowest marginal IOPS for throughput; see docs/benchmarks.md): their candidate pairs changed, by intent.
"""

from __future__ import annotations

import gc
import hashlib
import random

import pytest

from basil.core.balancer import recommend
from basil.core.params import OBJECTIVE_NORMALIZED_LOAD, OBJECTIVE_THROUGHPUT, BalancerParams
from basil.core.plan import Plan
from basil.core.snapshot import Datastore, Disk, Rules, Snapshot
from basil.core.workload_model import WorkloadParams
from basil.errors import ValidationError

NOW = 1_700_000_000.0


def random_snapshot(seed: int, disks: int, datastores: int) -> Snapshot:
    rng = random.Random(seed)
    hosts = [f"esx-{h}" for h in range(4)]
    names = [f"ds-{i:03d}" for i in range(datastores)]
    weights = [rng.uniform(0.2, 2.0) for _ in names]
    placed = rng.choices(range(datastores), weights=weights, k=disks)
    used = [0.0] * datastores
    disk_list: list[Disk] = []
    vm = 0
    left = 0
    for d in range(disks):
        if left == 0:
            vm += 1
            left = rng.randint(1, 3)
        left -= 1
        size = rng.choice([5.0, 10.0, 20.0, 40.0, 80.0])
        used[placed[d]] += size
        known_by_load = rng.random() < 0.2
        disk_list.append(
            Disk(
                id=f"vm-{vm:04d}/scsi0:{d % 4}",
                vm=f"vm-{vm:04d}",
                datastore=names[placed[d]],
                size_gb=size,
                hosts=frozenset({hosts[vm % 3]}),
                load=rng.uniform(1.0, 300.0) if known_by_load else None,
                workload=None
                if known_by_load
                else WorkloadParams(
                    rng.lognormvariate(1.5, 0.7),
                    rng.choice([4.0, 8.0, 16.0, 64.0]),
                    rng.uniform(0.0, 100.0),
                    rng.choice([rng.uniform(0.0, 100.0), 100.0, 2.0]),
                ),
                iops=rng.uniform(10.0, 2000.0) if rng.random() < 0.9 else None,
                last_moved=NOW - 3_600.0 if rng.random() < 0.03 else None,
            )
        )
    stores = []
    for i, name in enumerate(names):
        capacity = max(2.0 * sum(used) / datastores, used[i] * 1.2)
        stores.append(
            Datastore(
                name=name,
                capacity_gb=capacity,
                free_gb=capacity - used[i],
                # Every seventh datastore is not visible from esx-2.
                hosts=frozenset(hosts) - {"esx-2"} if i % 7 == 6 else frozenset(hosts),
                performance=rng.uniform(0.4, 3.0),
                maintenance=i == datastores - 1 and datastores > 4,
            )
        )
    vms = sorted({d.vm for d in disk_list})
    rules = Rules(
        splittable_vms=frozenset(vms[::6]),
        anti_affinity=tuple(frozenset(vms[i : i + 3]) for i in range(0, len(vms) - 3, 23)),
        excluded_vms=frozenset(vms[4::40]),
    )
    return Snapshot(datastores=tuple(stores), disks=tuple(disk_list), rules=rules, now=NOW)


def plan_digest(plan: Plan) -> str:
    lines = [
        f"{m.number} {m.kind} {m.vm} {','.join(m.disks)} {m.source}>{m.target} {m.imbalance_after:.10g}"
        for m in plan.moves
    ]
    lines += [f"{p.pod} {p.stop} {p.moves} {p.swaps} {p.after.imbalance:.10g}" for p in plan.pods]
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()[:16]


CASES = [
    # (seed, disks, datastores, params)
    (1, 120, 5, BalancerParams(imbalance_threshold=0.0, objective=OBJECTIVE_NORMALIZED_LOAD)),
    (2, 120, 5, BalancerParams(objective=OBJECTIVE_THROUGHPUT)),
    (
        3,
        600,
        20,
        BalancerParams(imbalance_threshold=0.0, max_gb=3_000.0, objective=OBJECTIVE_NORMALIZED_LOAD),
    ),
    (4, 600, 20, BalancerParams(objective=OBJECTIVE_THROUGHPUT, candidate_order="least_disturbance")),
    (5, 3_000, 90, BalancerParams(imbalance_threshold=0.0, objective=OBJECTIVE_NORMALIZED_LOAD)),
    (6, 3_000, 90, BalancerParams(objective=OBJECTIVE_NORMALIZED_LOAD)),
    (7, 3_000, 90, BalancerParams(objective=OBJECTIVE_THROUGHPUT)),
    (
        8,
        2_000,
        70,
        BalancerParams(imbalance_threshold=0.0, max_moves=150, objective=OBJECTIVE_NORMALIZED_LOAD),
    ),
]

# normalized_load: the decisions of the code before the optimisation (commit 9fc04a2); throughput:
# re-recorded with the mean-statistics predictive model; 5 to 8 re-recorded with the sources of a
# large pod turned the right way round (see the module docstring).
EXPECTED = {
    1: "aaf09cf9edc30a3d",
    2: "ec01afa57fecb11d",
    3: "f419b83aa82c5b24",
    4: "eadb7fbc68725da2",
    5: "4ad11c40f60b9fb9",
    6: "b3e6e7f64558fce2",
    7: "4374ba2327d81046",
    8: "28355b30a78b16ac",
}


@pytest.mark.parametrize(("seed", "disks", "datastores", "params"), CASES)
def test_plan_is_the_one_planned_before_the_optimisation(
    seed: int, disks: int, datastores: int, params: BalancerParams
) -> None:
    plan = recommend(random_snapshot(seed, disks, datastores), params)
    assert plan.moves, "the case must plan moves to compare"
    assert plan_digest(plan) == EXPECTED[seed]


def test_a_round_leaves_the_garbage_collector_as_it_found_it() -> None:
    """The round pauses Python's cyclic collector; it is back on afterwards, also after bad input,
    and stays off when it was off."""
    snap = random_snapshot(9, 60, 4)
    assert gc.isenabled()
    recommend(snap, BalancerParams())
    assert gc.isenabled()
    with pytest.raises(ValidationError):
        recommend(snap, BalancerParams(imbalance_threshold=-1.0))
    assert gc.isenabled()
    gc.disable()
    try:
        recommend(snap, BalancerParams())
        assert not gc.isenabled()
    finally:
        gc.enable()
