"""The round's setup at vCenter scale (issue 11, third pass) gives what the plain per-disk passes
give: the units grouped by one lexsort and built from columns equal the units of the per-datastore
grouping they replace (kept here as the reference), field for field; every disk's model built at once
equals the per-disk loop's; the demands' means taken from the workload columns equal the per-disk
ones, bit for bit."""

from __future__ import annotations

import dataclasses
import math
import random
from collections import defaultdict
from collections.abc import Mapping
from operator import attrgetter

import numpy as np
import pytest

from basil.core.constraints import (
    PINNED_EXCLUDED,
    PINNED_MAINTENANCE,
    PINNED_PING_PONG,
    Unit,
    build_units,
    conflict_index,
)
from basil.core.normalized_load import DiskLoad, Models, resolve_models
from basil.core.params import BalancerParams
from basil.core.predictive import disk_demands
from basil.core.snapshot import Disk, Rules, Snapshot
from basil.core.workload_model import WorkloadParams
from basil.errors import Problem, ValidationError

from .builders import datastore, disk, snapshot
from .test_search_equivalence import random_snapshot

NOW = 1_700_000_000.0
HOUR = 3600.0


def reference_units(snap: Snapshot, models: Models, params: BalancerParams) -> list[Unit]:
    """build_units as it was before this pass: disks grouped per datastore and (VM, splittable id) in
    dicts, each datastore's keys sorted, a unit's fields worked out disk by disk."""
    rules = snap.rules
    window = params.ping_pong_hours * 3600.0
    conflicts_of = conflict_index(rules.anti_affinity)
    maintenance = {ds.name for ds in snap.datastores if ds.maintenance}
    groups: dict[str, dict[tuple[str, str], list[Disk]]] = defaultdict(dict)
    for d in snap.disks:
        key = (d.vm, d.id if d.vm in rules.splittable_vms else "")
        groups[d.datastore].setdefault(key, []).append(d)
    units: list[Unit] = []
    for name in sorted(groups):
        for key in sorted(groups[name]):
            members = sorted(groups[name][key], key=attrgetter("id"))
            vm = key[0]
            pinned: str | None = None
            why = ""
            recent = [
                d
                for d in members
                if snap.now is not None and d.last_moved is not None and snap.now - d.last_moved < window
            ]
            if vm in rules.excluded_vms:
                pinned, why = PINNED_EXCLUDED, f"VM {vm} is excluded from balancing"
            elif name in maintenance:
                pinned = PINNED_MAINTENANCE
                why = f"datastore {name} is in maintenance (evacuation is not balancing)"
            elif recent and snap.now is not None:
                hours = (snap.now - max(d.last_moved or 0.0 for d in recent)) / 3600.0
                pinned = PINNED_PING_PONG
                window_text = f"(< {params.ping_pong_hours:g} h ping-pong window)"
                why = f"disk {recent[0].id} moved {hours:.1f} h ago {window_text}"
            iops: float | None = 0
            for d in members:
                iops = None if iops is None or d.iops is None else iops + d.iops
            units.append(
                Unit(
                    len(units),
                    vm,
                    tuple(d.id for d in members),
                    name,
                    sum(models.disks[d.id].load for d in members),
                    sum(d.size_gb for d in members),
                    frozenset().union(*(d.hosts for d in members)),
                    iops,
                    conflicts_of.get(vm, frozenset()),
                    pinned,
                    why,
                )
            )
    return units


def rule_snapshot(seed: int) -> Snapshot:
    """Disks of VMs with one to four disks, some VMs split over datastores, splittable, excluded and
    anti-affine VMs, a datastore in maintenance, recent and old moves, unknown IOPS, integer sizes."""
    rng = random.Random(seed)
    names = [f"ds-{i}" for i in range(rng.randint(1, 12))]
    hosts = ["esx-1", "esx-2", "esx-3"]
    disks = []
    for v in range(rng.randint(1, 150)):
        vm = f"vm-{rng.randint(0, 999):03d}-{v}"
        home = rng.choice(names)
        for k in range(rng.randint(1, 4)):
            disks.append(
                disk(
                    f"{vm}/d{rng.randint(0, 9)}{k}",
                    home if rng.random() < 0.8 else rng.choice(names),
                    vm=vm,
                    load=rng.choice([rng.uniform(0.0, 80.0), 5.0]),
                    size_gb=rng.choice([10.0, 20, 40.5]),
                    hosts=rng.sample(hosts, rng.randint(1, 2)),
                    iops=None if rng.random() < 0.1 else rng.choice([rng.uniform(0.0, 900.0), 7]),
                    last_moved=rng.choice([None, None, None, NOW - HOUR, NOW - 48 * HOUR]),
                )
            )
    vms = sorted({d.vm for d in disks})
    rules = Rules(
        splittable_vms=frozenset(rng.sample(vms, len(vms) // 5)),
        excluded_vms=frozenset(rng.sample(vms, len(vms) // 10)),
        anti_affinity=tuple(frozenset(rng.sample(vms, 2)) for _ in range(3)) if len(vms) >= 2 else (),
    )
    stores = [
        datastore(n, capacity_gb=1e5, maintenance=i == 0 and len(names) > 1) for i, n in enumerate(names)
    ]
    return snapshot(stores, disks, rules=rules, now=rng.choice([NOW, None]))


def assert_same_units(found: list[Unit], expected: list[Unit]) -> None:
    assert len(found) == len(expected)
    for a, b in zip(found, expected, strict=True):
        assert tuple(a) == tuple(b)
        assert [type(v) for v in a] == [type(v) for v in b]


@pytest.mark.parametrize("seed", range(12))
def test_units_equal_the_per_datastore_grouping(seed: int) -> None:
    snap = rule_snapshot(seed)
    params = BalancerParams()
    models = resolve_models(snap, params)
    assert_same_units(build_units(snap, models, params), reference_units(snap, models, params))


@pytest.mark.parametrize("seed", [3, 4])
def test_units_equal_the_per_datastore_grouping_on_random_pods(seed: int) -> None:
    snap = random_snapshot(seed, 900, 40)
    params = BalancerParams()
    models = resolve_models(snap, params)
    assert_same_units(build_units(snap, models, params), reference_units(snap, models, params))


def test_units_read_loads_by_id_when_the_models_are_not_in_disk_order() -> None:
    """Models built in another order than the disks' (not resolve_models'): each disk's own L."""
    snap = rule_snapshot(5)
    params = BalancerParams()
    models = resolve_models(snap, params)
    shuffled = dict(reversed(list(models.disks.items())))
    other = Models(datastores=models.datastores, disks=shuffled, stand_in=models.stand_in)
    assert list(other.disks) != [d.id for d in snap.disks]
    assert_same_units(build_units(snap, other, params), reference_units(snap, models, params))


def described_snapshot(seed: int, count: int) -> Snapshot:
    """Every disk known by its workload model alone (the fast path of resolve_models)."""
    rng = random.Random(seed)
    names = ["a", "b", "c"]
    disks = [
        disk(
            f"vm{i}/d0",
            rng.choice(names),
            load=None,
            workload=WorkloadParams(
                rng.choice([rng.uniform(0.5, 30.0), 4]),
                rng.choice([4.0, 8.0, 64.0, 256]),
                rng.choice([rng.uniform(0.0, 100.0), 0.0, 100.0, 40.0]),
                rng.choice([rng.uniform(0.0, 100.0), 0.0, 100, 2.0, 50.0]),
            ),
        )
        for i in range(count)
    ]
    return snapshot([datastore(n) for n in names], disks)


@pytest.mark.parametrize("seed", range(4))
def test_models_built_at_once_equal_the_per_disk_loop(seed: int) -> None:
    """One disk with a given L sends the same disks through resolve_models' per-disk loop."""
    snap = described_snapshot(seed, 400)
    params = BalancerParams()
    at_once = resolve_models(snap, params).disks
    extra = disk("given/d0", "a", load=12.5)
    looped = resolve_models(dataclasses.replace(snap, disks=(*snap.disks, extra)), params).disks
    assert list(at_once) == [d.id for d in snap.disks]
    assert list(looped) == [*at_once, extra.id]
    for name, model in at_once.items():
        assert type(model) is DiskLoad
        assert tuple(model) == tuple(looped[name])
        assert [type(v) for v in model] == [type(v) for v in looped[name]]


def test_a_workload_whose_load_is_not_a_load_is_named_as_by_the_loop() -> None:
    snap = described_snapshot(1, 20)
    bad = disk("huge/d0", "b", load=None, workload=WorkloadParams(1e300, 1e300, 50.0, 50.0))
    with pytest.raises(ValidationError) as raised:
        resolve_models(
            dataclasses.replace(snap, disks=(*snap.disks[:7], bad, *snap.disks[7:])), BalancerParams()
        )
    assert [p.field for p in raised.value.problems] == ["disks[7]"]
    assert "load metric L = inf" in raised.value.problems[0].message


def _with_means(models: Models, which: Mapping[str, tuple[float, float]]) -> Models:
    disks = {
        k: m._replace(mean_oio=which[k][0], mean_read_oio=which[k][1]) if k in which else m
        for k, m in models.disks.items()
    }
    return Models(datastores=models.datastores, disks=disks, stand_in=models.stand_in)


@pytest.mark.parametrize("seed", range(3))
def test_demands_means_from_the_workload_columns_equal_the_per_disk_ones(seed: int) -> None:
    """A disk given means equal to its own percentile parameters sends every disk through the per-disk
    means: the same table, bit for bit."""
    params = BalancerParams()
    models = resolve_models(described_snapshot(seed, 300), params)
    first = next(iter(models.disks.values()))
    assert first.workload is not None
    own = (first.workload.oio, first.workload.oio * first.workload.read_pct / 100.0)
    constants = params.workload_model.constants
    at_once = disk_demands(models, constants)
    per_disk = disk_demands(_with_means(models, {first.disk: own}), constants)
    assert at_once.table.tobytes() == per_disk.table.tobytes()
    assert np.array_equal(at_once.sequential, per_disk.sequential)
    # And means that differ do change the table (the per-disk path reads them).
    other = disk_demands(_with_means(models, {first.disk: (own[0] * 2.0, own[1])}), constants)
    assert other.table.tobytes() != at_once.table.tobytes()


def reference_problems(snap: Snapshot) -> list[str]:
    """Snapshot.validate as it was before this pass: every disk checked in one Python loop."""
    found: list[str] = []
    names: dict[str, int] = {}
    for i, ds in enumerate(snap.datastores):
        found += [str(p) for p in ds.problems(f"datastores[{i}]")]
        names.setdefault(ds.name, i)
    ids: dict[str, int] = {}
    for i, d in enumerate(snap.disks):
        if not d.plainly_valid():
            found += [str(p) for p in d.problems(f"disks[{i}]")]
        if d.id in ids:
            found.append(str(Problem(f"disks[{i}].id", f"duplicate disk {d.id!r} (also disks[{ids[d.id]}])")))
        else:
            ids[d.id] = i
        if d.datastore and d.datastore not in names:
            found.append(str(Problem(f"disks[{i}].datastore", f"unknown datastore {d.datastore!r}")))
    return found


def _faulty(snap: Snapshot, fault: str, at: int) -> Snapshot:
    disks = list(snap.disks)
    d = disks[at]
    changed = {
        "duplicate": dataclasses.replace(d, id=disks[0].id),
        "unknown datastore": dataclasses.replace(d, datastore="nowhere"),
        "negative size": dataclasses.replace(d, size_gb=-1.0),
        "nan load": dataclasses.replace(d, load=math.nan),
        "bool iops": dataclasses.replace(d, iops=True),
        "no load": dataclasses.replace(d, load=None, workload=None),
        "empty vm": dataclasses.replace(d, vm=""),
        "read share": dataclasses.replace(d, load=None, workload=WorkloadParams(1.0, 8.0, 101.0, 50.0)),
        "infinite move": dataclasses.replace(d, last_moved=math.inf),
        "huge integer": dataclasses.replace(d, size_gb=10**400),
    }[fault]
    disks[at] = changed
    return dataclasses.replace(snap, disks=tuple(disks))


FAULTS = [
    "duplicate",
    "unknown datastore",
    "negative size",
    "nan load",
    "bool iops",
    "no load",
    "empty vm",
    "read share",
    "infinite move",
    "huge integer",
]


@pytest.mark.parametrize("fault", FAULTS)
def test_validation_at_once_names_each_problem_as_the_per_disk_loop(fault: str) -> None:
    """A disk with a problem sends validation to the per-disk path: the same problems, in the same
    order, at the same field paths as checking every disk one by one."""
    snap = _faulty(rule_snapshot(2), fault, 5)
    expected = reference_problems(snap)
    problems = [str(p) for p in snap.validate()]
    assert problems[: len(expected)] == expected
    if fault != "huge integer":  # a finite integer of any size is a valid size
        assert expected


@pytest.mark.parametrize("seed", range(4))
def test_validation_at_once_finds_nothing_where_the_per_disk_loop_finds_nothing(seed: int) -> None:
    snap = rule_snapshot(seed)
    assert reference_problems(snap) == []
    assert snap.validate() == []
    for fault in FAULTS:
        faulty = _faulty(snap, fault, len(snap.disks) // 2)
        assert [str(p) for p in faulty.validate()][: len(reference_problems(faulty))] == reference_problems(
            faulty
        )
