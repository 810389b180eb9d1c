"""Units that move together, and the hard constraints on where they may go."""

from __future__ import annotations

import random

import pytest

from basil.core.constraints import (
    ANTI_AFFINITY,
    HOSTS,
    MAINTENANCE,
    NEW_DATASTORE_LIMIT,
    PINNED_EXCLUDED,
    PINNED_MAINTENANCE,
    PINNED_PING_PONG,
    SPACE,
    PlacementState,
    Unit,
    build_units,
    conflict_index,
)
from basil.core.normalized_load import resolve_models
from basil.core.params import ORDER_LEAST_DISTURBANCE, ORDER_LOAD_PER_GB, BalancerParams
from basil.core.snapshot import Rules, Snapshot

from .builders import datastore, disk, snapshot

HOUR = 3600.0
NOW = 1_700_000_000.0


def units_of(snap: Snapshot, params: BalancerParams | None = None) -> list[Unit]:
    params = params or BalancerParams()
    return build_units(snap, resolve_models(snap, params), params)


def state_of(snap: Snapshot, params: BalancerParams | None = None) -> PlacementState:
    params = params or BalancerParams()
    return PlacementState(snap, resolve_models(snap, params), params)


def test_disks_of_one_vm_on_one_datastore_are_one_unit() -> None:
    snap = snapshot(
        [datastore("a"), datastore("b")],
        [
            disk("vm1/d0", "a", load=10, size_gb=5, iops=1),
            disk("vm1/d1", "a", load=20, size_gb=7, iops=2, hosts=("esx-2",)),
            disk("vm1/d2", "b", load=5),
            disk("vm2/d0", "a", load=1),
        ],
    )
    units = {(u.datastore, u.vm): u for u in units_of(snap)}
    u = units[("a", "vm1")]
    assert u.disks == ("vm1/d0", "vm1/d1")
    assert (u.load, u.size_gb, u.iops) == (30, 12, 3)
    assert u.hosts == frozenset({"esx-1", "esx-2"})
    assert units[("b", "vm1")].disks == ("vm1/d2",)
    assert len(units) == 3


def test_splittable_vm_disks_are_units_of_their_own() -> None:
    snap = snapshot(
        [datastore("a")],
        [disk("vm1/d0", "a"), disk("vm1/d1", "a")],
        rules=Rules(splittable_vms=frozenset({"vm1"})),
    )
    assert sorted(u.disks for u in units_of(snap)) == [("vm1/d0",), ("vm1/d1",)]


def test_unknown_iops_makes_the_unit_iops_unknown() -> None:
    snap = snapshot([datastore("a")], [disk("vm1/d0", "a", iops=5), disk("vm1/d1", "a")])
    assert units_of(snap)[0].iops is None


def test_pinned_units() -> None:
    now = 1000 * HOUR
    snap = snapshot(
        [datastore("a"), datastore("m", maintenance=True)],
        [
            disk("excluded/d0", "a"),
            disk("recent/d0", "a", last_moved=now - 2 * HOUR),
            disk("recent/d1", "a"),
            disk("old/d0", "a", last_moved=now - 30 * HOUR),
            disk("evacuee/d0", "m"),
        ],
        rules=Rules(excluded_vms=frozenset({"excluded"})),
        now=now,
    )
    pinned = {u.vm: u.pinned for u in units_of(snap)}
    assert pinned == {
        "excluded": PINNED_EXCLUDED,
        "recent": PINNED_PING_PONG,  # one recently moved disk pins the whole unit
        "old": None,
        "evacuee": PINNED_MAINTENANCE,
    }
    shorter = units_of(snap, BalancerParams(ping_pong_hours=1))
    assert {u.vm: u.pinned for u in shorter}["recent"] is None


def test_conflict_index_is_symmetric() -> None:
    index = conflict_index([frozenset({"a", "b", "c"}), frozenset({"c", "d"})])
    assert index == {
        "a": frozenset({"b", "c"}),
        "b": frozenset({"a", "c"}),
        "c": frozenset({"a", "b", "d"}),
        "d": frozenset({"c"}),
    }


@pytest.mark.parametrize(
    ("order", "expected"),
    [
        pytest.param(ORDER_LOAD_PER_GB, ["dense", "medium", "sparse"], id="load-per-gb"),
        pytest.param(ORDER_LEAST_DISTURBANCE, ["quiet", "busy", "unknown"], id="least-disturbance"),
    ],
)
def test_candidate_orders(order: str, expected: list[str]) -> None:
    snap = snapshot(
        [datastore("a")],
        [
            disk("dense/d", "a", load=100, size_gb=1, iops=500),
            disk("medium/d", "a", load=100, size_gb=10, iops=500),
            disk("sparse/d", "a", load=100, size_gb=100, iops=500),
            disk("quiet/d", "a", load=100, size_gb=1000, iops=1),
            disk("busy/d", "a", load=100, size_gb=1000, iops=5000),
            disk("unknown/d", "a", load=100, size_gb=1000),
        ],
    )
    ranked = [u.vm for u in sorted(units_of(snap), key=lambda u: u.preference(order))]
    positions = [ranked.index(vm) for vm in expected]
    assert positions == sorted(positions)


def test_each_hard_constraint_is_explained() -> None:
    snap = snapshot(
        [
            datastore("src"),
            datastore("maint", maintenance=True),
            datastore("full", capacity_gb=100, free_gb=15),
            datastore("blind", hosts=("esx-2",)),
            datastore("foe"),
            datastore("new", performance=None),
            datastore("ok"),
        ],
        [disk("vm1/d0", "src", size_gb=10, hosts=("esx-1",)), disk("vm2/d0", "foe")],
        rules=Rules(anti_affinity=(frozenset({"vm1", "vm2"}),)),
    )
    state = state_of(snap)
    unit = next(u for u in units_of(snap) if u.vm == "vm1")
    codes = {
        name: [v.code for v in state.violations(unit, name)]
        for name in ("maint", "full", "blind", "foe", "ok")
    }
    assert codes == {
        "maint": [MAINTENANCE],
        "full": [SPACE],
        "blind": [HOSTS],
        "foe": [ANTI_AFFINITY],
        "ok": [],
    }
    assert "headroom" in str(state.violations(unit, "full")[0])
    assert state.allows(unit, "new")
    state.apply(unit, "src", "new")
    other = Unit(99, "vm3", ("vm3/d0",), "src", 1.0, 1.0, frozenset(), None, frozenset())
    assert [v.code for v in state.violations(other, "new")] == [NEW_DATASTORE_LIMIT]
    assert not state.allows(other, "new")
    assert state.allows(other, "new", new_limit=False)


def test_space_headroom_boundary() -> None:
    # 100 GB capacity, 10 % headroom: 30 GB free takes exactly 20 GB, not 20.5.
    snap = snapshot([datastore("t", capacity_gb=100, free_gb=30)], [])
    state = state_of(snap)
    fits = Unit(0, "vm", ("d",), "s", 1.0, 20.0, frozenset(), None, frozenset())
    too_big = Unit(1, "vm", ("d",), "s", 1.0, 20.5, frozenset(), None, frozenset())
    assert state.allows(fits, "t")
    assert not state.allows(too_big, "t")
    assert state_of(snap, BalancerParams(space_headroom_pct=0)).allows(too_big, "t")


def test_apply_moves_space_and_vm_presence() -> None:
    snap = snapshot(
        [datastore("a", capacity_gb=100), datastore("b", capacity_gb=100)],
        [disk("vm1/d0", "a", size_gb=10), disk("vm1/d1", "a", size_gb=5), disk("vm2/d0", "b", size_gb=1)],
        rules=Rules(anti_affinity=(frozenset({"vm1", "vm3"}),)),
    )
    state = state_of(snap)
    unit = next(u for u in units_of(snap) if u.vm == "vm1")
    state.apply(unit, "a", "b")
    assert state.free == {"a": 100.0, "b": 84.0}
    assert state.vms["a"]["vm1"] == 0
    assert state.vms["b"]["vm1"] == 2
    vm3 = Unit(5, "vm3", ("vm3/d0",), "a", 1.0, 1.0, frozenset(), None, frozenset({"vm1"}))
    assert state.allows(vm3, "a")
    assert not state.allows(vm3, "b")


def test_allows_agrees_with_violations() -> None:
    snap = snapshot(
        [
            datastore("src"),
            datastore("maint", maintenance=True),
            datastore("full", capacity_gb=100, free_gb=15),
            datastore("blind", hosts=("esx-2",)),
            datastore("ok"),
        ],
        [
            disk(f"vm{i}/d0", "src", size_gb=s, hosts=h)
            for i, (s, h) in enumerate([(1, ()), (10, ("esx-1",)), (500, ())])
        ],
    )
    state = state_of(snap)
    for unit in units_of(snap):
        for name in ("maint", "full", "blind", "ok"):
            assert state.allows(unit, name) == (not state.violations(unit, name))


def _reference_units(snap: Snapshot) -> list[tuple[str, str, tuple[str, ...]]]:
    """(datastore, VM, disks) of every unit, grouped and ordered the plain way: one sort of every
    (datastore, VM, disk id of a splittable VM's disk or "") key."""
    groups: dict[tuple[str, str, str], list[str]] = {}
    for d in snap.disks:
        key = (d.datastore, d.vm, d.id if d.vm in snap.rules.splittable_vms else "")
        groups.setdefault(key, []).append(d.id)
    return [(key[0], key[1], tuple(sorted(groups[key]))) for key in sorted(groups)]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_units_are_grouped_and_ordered_as_one_sort_of_all_keys_would(seed: int) -> None:
    """build_units groups per datastore and sorts each datastore's keys (issue 11, speed): the same
    units in the same order as the plain grouping, and pinned exactly where a rule says so."""
    rng = random.Random(seed)
    names = [f"ds-{i}" for i in range(rng.randint(2, 9))]
    vms = [f"vm-{rng.randint(0, 60):02d}" for _ in range(120)]
    disks = [
        disk(
            f"{vm}/d{i}",
            rng.choice(names),
            load=rng.uniform(1.0, 50.0),
            last_moved=NOW - rng.choice([1.0, 30.0]) * HOUR if rng.random() < 0.2 else None,
        )
        for i, vm in enumerate(vms)
    ]
    rules = Rules(
        splittable_vms=frozenset(sorted(set(vms))[::4]), excluded_vms=frozenset(sorted(set(vms))[1::9])
    )
    stores = [datastore(n, maintenance=n == names[-1]) for n in names]
    snap = snapshot(stores, disks, rules=rules, now=NOW)
    units = units_of(snap)
    assert [(u.datastore, u.vm, u.disks) for u in units] == _reference_units(snap)
    assert [u.index for u in units] == list(range(len(units)))
    by_id = {d.id: d for d in snap.disks}
    for u in units:
        recent = any((moved := by_id[d].last_moved) is not None and NOW - moved < 24 * HOUR for d in u.disks)
        expected = (
            PINNED_EXCLUDED
            if u.vm in rules.excluded_vms
            else PINNED_MAINTENANCE
            if u.datastore == names[-1]
            else PINNED_PING_PONG
            if recent
            else None
        )
        assert u.pinned == expected
