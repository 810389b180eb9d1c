"""Builders for BASIL core tests: datastores, disks and snapshots with sensible defaults.

Only what a test cares about needs naming; free space is derived from the disks unless given.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np

from basil.core.calibration import GridPoint
from basil.core.plan import Plan
from basil.core.snapshot import (
    DEFAULT_POD,
    Datastore,
    Disk,
    Rules,
    Snapshot,
    SnapshotDocument,
    parse_snapshot,
)
from basil.core.workload_model import WorkloadConstants, WorkloadParams

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
HOSTS = frozenset({"esx-1", "esx-2"})


def datastore(
    name: str,
    *,
    performance: float | None = 1.0,
    capacity_gb: float = 1000.0,
    free_gb: float | None = None,
    hosts: Iterable[str] = HOSTS,
    maintenance: bool = False,
    pod: str = DEFAULT_POD,
) -> Datastore:
    """A datastore; ``free_gb=None`` means "capacity minus the disks on it" (see :func:`snapshot`)."""
    return Datastore(
        name=name,
        capacity_gb=capacity_gb,
        free_gb=-1.0 if free_gb is None else free_gb,
        hosts=frozenset(hosts),
        maintenance=maintenance,
        performance=performance,
        pod=pod,
    )


def disk(
    disk_id: str,
    on: str,
    *,
    vm: str | None = None,
    load: float | None = 100.0,
    size_gb: float = 10.0,
    hosts: Iterable[str] = ("esx-1",),
    workload: WorkloadParams | None = None,
    iops: float | None = None,
    last_moved: float | None = None,
) -> Disk:
    """A disk of VM *vm* (default: the disk id before its first '/') on datastore *on*."""
    return Disk(
        id=disk_id,
        vm=vm if vm is not None else disk_id.split("/", maxsplit=1)[0],
        datastore=on,
        size_gb=size_gb,
        hosts=frozenset(hosts),
        load=load if workload is None else None,
        workload=workload,
        iops=iops,
        last_moved=last_moved,
    )


def snapshot(
    datastores: Sequence[Datastore],
    disks: Sequence[Disk],
    *,
    rules: Rules | None = None,
    now: float | None = None,
) -> Snapshot:
    """A snapshot whose datastores built with ``free_gb=None`` get capacity minus their disks' sizes."""
    used: dict[str, float] = {}
    for d in disks:
        used[d.datastore] = used.get(d.datastore, 0.0) + d.size_gb
    fixed = tuple(
        dataclasses.replace(ds, free_gb=ds.capacity_gb - used.get(ds.name, 0.0)) if ds.free_gb == -1.0 else ds
        for ds in datastores
    )
    return Snapshot(datastores=fixed, disks=tuple(disks), rules=rules or Rules(), now=now)


def example(name: str) -> SnapshotDocument:
    """One of the bundled example snapshots, parsed."""
    return parse_snapshot(json.loads((EXAMPLES / name).read_text(encoding="utf-8")))


def product_form_grid(
    constants: WorkloadConstants,
    k5: float,
    *,
    noise: float = 0.0,
    sequential_factor: float = 1.0,
    seed: int = 0,
) -> list[GridPoint]:
    """The paper's 750-configuration grid (§3) with latencies from eq. 1 itself.

    *noise* is a relative standard deviation (multiplicative, seeded); *sequential_factor* scales the
    latency of 100 % sequential points, mimicking the over-prediction the paper found for them.
    """
    rng = np.random.default_rng(seed)
    points = []
    for oio in (4, 8, 16, 32, 64):
        for size in (8, 16, 32, 128, 256, 512):
            for read in (0, 25, 50, 75, 100):
                for rnd in (0, 25, 50, 75, 100):
                    latency = (
                        (constants.k1 + oio)
                        * (constants.k2 + size)
                        * (constants.k3 + read / 100)
                        * (constants.k4 + rnd / 100)
                        / k5
                    )
                    if rnd == 0:
                        latency *= sequential_factor
                    if noise:
                        latency *= float(np.exp(rng.normal(0.0, noise)))
                    points.append(GridPoint(oio, size, read, rnd, latency))
    return points


def applied_placement(snap: Snapshot, plan: Plan) -> dict[str, str]:
    """Where each disk is after applying the plan's moves in order (independently of the balancer)."""
    where = {d.id: d.datastore for d in snap.disks}
    for move in plan.moves:
        for disk_id in move.disks:
            assert where[disk_id] == move.source, (
                f"move {move.number} takes {disk_id} from the wrong datastore"
            )
            where[disk_id] = move.target
    return where


def normalized_loads(
    snap: Snapshot, where: dict[str, str], loads: dict[str, float], performance: dict[str, float]
) -> dict[str, float]:
    """N_j = ΣL_i / P_j (BASIL eq. 5), recomputed by the test from a placement."""
    totals = dict.fromkeys(performance, 0.0)
    for d in snap.disks:
        if where[d.id] in totals:
            totals[where[d.id]] += loads[d.id]
    return {name: totals[name] / performance[name] for name in performance}


def sigma_over_mu(values: Iterable[float]) -> float:
    v = np.array(list(values), dtype=float)
    return float(v.std() / v.mean()) if v.size and v.mean() > 0 else 0.0


def workload(oio: float, io_size_kb: float, read_pct: float, random_pct: float) -> WorkloadParams:
    return WorkloadParams(oio, io_size_kb, read_pct, random_pct)


def after_plan(snap: Snapshot, plan: Plan, performance: dict[str, float] | None = None) -> Snapshot:
    """The snapshot once the plan's moves are done (free space follows), with new P values if given."""
    where = applied_placement(snap, plan)
    disks = tuple(dataclasses.replace(d, datastore=where[d.id]) for d in snap.disks)
    sizes = {d.id: d.size_gb for d in snap.disks}
    free = {ds.name: ds.free_gb for ds in snap.datastores}
    for d in snap.disks:
        if where[d.id] != d.datastore:
            free[d.datastore] += sizes[d.id]
            free[where[d.id]] -= sizes[d.id]
    performance = performance or {}
    stores = tuple(
        dataclasses.replace(ds, free_gb=free[ds.name], performance=performance.get(ds.name, ds.performance))
        for ds in snap.datastores
    )
    return dataclasses.replace(snap, datastores=stores, disks=disks)
