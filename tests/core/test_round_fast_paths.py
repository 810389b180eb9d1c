"""The fourth pass over the 40,000-disk round (issue 11) gives what the code it replaces gives: the
units' columns handed from ``build_unit_columns`` to the search hold the units' own fields, and a
search built from them has the very sums, pools and moves of one that reads the units; the demands
from the models' columns, the placement state from the disks' columns, the lowest N from a ranking,
the pools' order and the units' grouping by stable sorts equal what they replace."""

from __future__ import annotations

import dataclasses
from itertools import chain

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from basil.core.constraints import (
    PlacementState,
    UnitColumns,
    _ranks,
    build_unit_columns,
    build_units,
    lexsort_codes,
)
from basil.core.normalized_load import mix_columns, resolve_models
from basil.core.params import OBJECTIVE_AUTO, OBJECTIVE_NORMALIZED_LOAD, OBJECTIVE_THROUGHPUT, BalancerParams
from basil.core.predictive import disk_demands
from basil.core.search import BestMoveSearch, Ranking, pool_order
from basil.core.snapshot import Snapshot
from basil.core.workload_model import WorkloadParams

from .test_search_equivalence import random_snapshot
from .test_search_fast_paths import pod_search
from .test_setup_fast_paths import assert_same_units, rule_snapshot

WORKLOAD = WorkloadParams(oio=6.0, io_size_kb=16.0, read_pct=70.0, random_pct=30.0)
COLUMNS = ("datastore", "disks", "load", "size_gb", "iops", "pinned")


def _open(snap: Snapshot) -> Snapshot:
    """*snap* with no datastore in maintenance (every unit on a datastore of the pod's balance)."""
    return dataclasses.replace(
        snap, datastores=tuple(dataclasses.replace(ds, maintenance=False) for ds in snap.datastores)
    )


def _snapshots() -> list[tuple[str, Snapshot]]:
    rules = [(f"rules-{seed}", rule_snapshot(seed)) for seed in range(6)]
    randoms = [(f"random-{seed}", random_snapshot(seed, 900, 40)) for seed in (3, 4)]
    return rules + randoms + [(f"{name}-open", _open(snap)) for name, snap in rules + randoms]


@pytest.mark.parametrize(("name", "snap"), _snapshots(), ids=[n for n, _ in _snapshots()])
def test_unit_columns_hold_the_units_own_fields(name: str, snap: Snapshot) -> None:
    params = BalancerParams()
    models = resolve_models(snap, params)
    table = build_unit_columns(snap, models, params)
    assert_same_units(table.units, build_units(snap, models, params))
    for field in COLUMNS:
        column = getattr(table, field)
        expected = [getattr(unit, field) for unit in table.units]
        assert column == expected, field
        assert [type(v) for v in column] == [type(v) for v in expected], field
    assert table.disk_counts.tolist() == [len(unit.disks) for unit in table.units]
    assert table.disk_ids == [d.id for d in snap.disks]
    # Each of the units' disks, in unit order, is the snapshot's disk at its position.
    assert [snap.disks[p].id for p in table.disk_positions.tolist()] == list(
        chain.from_iterable(unit.disks for unit in table.units)
    )
    assert any(len(unit.disks) > 1 for unit in table.units) or name.startswith("random")


def _search(snap: Snapshot, params: BalancerParams, *, columns: bool) -> tuple[BestMoveSearch, UnitColumns]:
    models = resolve_models(snap, params)
    table = build_unit_columns(snap, models, params)
    return pod_search(snap, models, params, table.units, table if columns else None), table


@pytest.mark.parametrize("objective", [OBJECTIVE_AUTO, OBJECTIVE_THROUGHPUT])
@pytest.mark.parametrize(("name", "snap"), _snapshots(), ids=[n for n, _ in _snapshots()])
def test_a_search_from_the_unit_columns_equals_one_reading_the_units(
    name: str, snap: Snapshot, objective: str
) -> None:
    params = BalancerParams(objective=objective, imbalance_threshold=0.02, seed=2)
    (fast, table), (plain, _) = _search(snap, params, columns=True), _search(snap, params, columns=False)
    # The columns serve when every unit is on a datastore of the balance (none in maintenance).
    assert (fast.unit_columns["load"] is table.load) == (len(fast.units) == len(table.units))
    assert fast.unit_columns["load"] is table.load or not name.endswith("open")
    assert fast.units == plain.units
    assert fast.unit_columns == plain.unit_columns
    sums = ("ua", "ub", "uo", "ul", "uwa", "uwb", "src", "rank", "movable")
    for field in sums:
        assert getattr(fast, field) == getattr(plain, field), field
    assert np.array_equal(fast.S, plain.S)
    assert (fast.pred.A, fast.pred.B, fast.pred.O, fast.pred.count) == (
        plain.pred.A,
        plain.pred.B,
        plain.pred.O,
        plain.pred.count,
    )
    number = 1
    for _ in range(40):
        if fast.done or plain.done:
            break
        moves = fast.step(number)
        assert moves == plain.step(number)
        number += len(moves)
    assert (fast.done, fast.stop, fast.stop_reason) == (plain.done, plain.stop, plain.stop_reason)


def test_the_columns_are_not_used_for_units_they_were_not_built_with() -> None:
    snap = random_snapshot(5, 300, 12)
    params = BalancerParams()
    models = resolve_models(snap, params)
    table = build_unit_columns(snap, models, params)
    reversed_units = list(reversed(table.units))
    search = pod_search(snap, models, params, reversed_units, table)
    assert search.units == [u for u in reversed_units if u.datastore in search.position]
    assert search.unit_columns["load"] == [unit.load for unit in search.units]
    assert search.uo == [sum((search.demands[d].oio for d in unit.disks), 0.0) for unit in search.units]


def _with_empty_datastores(snap: Snapshot, count: int) -> Snapshot:
    """*snap* with *count* more datastores holding nothing (N = 0: ties among the lowest N)."""
    model = snap.datastores[0]
    extra = tuple(
        dataclasses.replace(model, name=f"ds-empty-{i:03d}", maintenance=False, free_gb=model.capacity_gb)
        for i in range(count)
    )
    return dataclasses.replace(snap, datastores=snap.datastores + extra)


@pytest.mark.parametrize("empty", [0, 3, 60])
def test_large_pod_targets_by_n_from_the_ranking_equal_the_partition(empty: int) -> None:
    """The lowest N read from the ranking of all datastores when no tie crosses the cut, else the
    partition's own choice: the same sets as the full partitions, with and without ties at N = 0."""
    snap = _with_empty_datastores(_open(random_snapshot(21, 2_000, 100)), empty)
    params = BalancerParams(objective=OBJECTIVE_NORMALIZED_LOAD, imbalance_threshold=0.0, seed=3)
    search, _ = _search(snap, params, columns=True)
    assert search.by_n is not None
    ties = 0
    number = 1
    for _ in range(40):
        for width in (1, 4):
            search.width = width
            j = min(24 * width, search.d - 1)
            rows = search.by_n.rows
            ties += rows[j][0] == rows[j + 1][0]
            w = (search.N * search.total - search.squares) / search.P
            assert search._sources_targets_n(w) == search._sources_targets(w, low_is_target=True)
        search.width = 1
        if search.done:
            break
        number += len(search.step(number))
    assert number > 20
    assert search.by_n.rows == sorted((float(v), j) for j, v in enumerate(search.N))
    assert (ties > 0) == (empty == 60)  # 60 empty datastores tie across both cuts
    # Datastores without movable units (the empty ones) are no sources: the masked −w is in use.
    assert search.has_units == [bool(pool) for pool in search.movable]
    assert (search.with_units < search.d) == (empty > 0)


@pytest.mark.parametrize("seed", range(3))
def test_demands_from_the_models_columns_equal_those_read_from_the_models(seed: int) -> None:
    """A snapshot whose disks are all known by their workload model: the models carry their eq. 1
    inputs as columns, and the demands computed from them equal, bit for bit, those read model by
    model; with a given L somewhere the models carry none."""
    params = BalancerParams()
    constants = params.workload_model.constants
    snap = random_snapshot(30 + seed, 400, 12)
    described = dataclasses.replace(
        snap,
        disks=tuple(
            d if d.workload is not None else dataclasses.replace(d, load=None, workload=WORKLOAD)
            for d in snap.disks
        ),
    )
    models = resolve_models(described, params)
    assert models.columns is not None
    assert models.columns.disks is models.disks
    plain = dataclasses.replace(models, columns=None)
    assert plain == models  # the columns take no part in a comparison
    fast, slow = disk_demands(models, constants), disk_demands(plain, constants)
    assert fast.ids == slow.ids == [d.id for d in snap.disks]
    assert fast.table.tobytes() == slow.table.tobytes()
    assert np.array_equal(fast.sequential, slow.sequential)
    assert resolve_models(snap, params).columns is None  # some disks have a given L


@pytest.mark.parametrize(("name", "snap"), _snapshots(), ids=[n for n, _ in _snapshots()])
def test_placement_state_from_the_disk_columns_equals_the_one_read_from_the_disks(
    name: str, snap: Snapshot
) -> None:
    params = BalancerParams()
    models = resolve_models(snap, params)
    table = build_unit_columns(snap, models, params)
    assert table.disk_datastores == [d.datastore for d in snap.disks]
    assert table.disk_vms == [d.vm for d in snap.disks]
    fast = PlacementState(snap, models, params, disk_columns=(table.disk_datastores, table.disk_vms))
    plain = PlacementState(snap, models, params)
    assert fast.vms == plain.vms
    # The same counters in the same order (the order of first appearance, in disk order).
    assert [list(c.items()) for c in fast.vms.values()] == [list(c.items()) for c in plain.vms.values()]
    assert (fast.free, fast.reserve, fast.new) == (plain.free, plain.reserve, plain.new)


def test_ranks_of_grouped_values_equal_those_of_any_order() -> None:
    values = [f"vm-{i // 3:04d}" for i in range(300)] + ["vm-0002", "a", "vm-9"]
    for grouped in (False, True):
        rank, codes = _ranks(values, grouped=grouped)
        assert list(rank) == sorted(set(values))
        assert codes.tolist() == [sorted(set(values)).index(v) for v in values]


@pytest.mark.parametrize("d", [1, 7, 1_000, 40_000])
def test_pool_order_equals_one_lexsort_by_datastore_key_and_rank(d: int) -> None:
    rng = np.random.default_rng(d)
    n = 3_000
    keys = rng.choice([0.0, 1.5, 2.0, 7.25], n) if d < 1_000 else rng.lognormal(2.0, 1.0, n)  # ties
    src = rng.integers(0, d, n)
    rank = rng.permutation(n)
    by_rank = np.argsort(rank)
    movable = rng.random(n) < 0.9
    ids = np.flatnonzero(movable)
    expected = ids[np.lexsort((rank[ids], keys[ids], src[ids]))]
    assert pool_order(by_rank, movable, keys, src, d).tolist() == expected.tolist()


@pytest.mark.parametrize("top", [1, 5, 30_000, 70_000])
@pytest.mark.parametrize("keys", [1, 2, 3])
def test_lexsort_of_codes_equals_numpys(top: int, keys: int) -> None:
    rng = np.random.default_rng(top + keys)
    columns = [rng.integers(0, top, 5_000) for _ in range(keys)]
    assert lexsort_codes(columns).tolist() == np.lexsort(columns).tolist()
    assert lexsort_codes([c[:0] for c in columns]).tolist() == []


@settings(max_examples=200, deadline=None)
@given(
    values=st.lists(st.sampled_from([0.0, 0.5, 1.0, 2.5, 7.0]), min_size=1, max_size=30),
    data=st.data(),
)
def test_largest_among_members_equals_a_ranking_of_the_members_alone(
    values: list[float], data: st.DataObject
) -> None:
    member = data.draw(st.lists(st.booleans(), min_size=len(values), max_size=len(values)))
    everyone = Ranking(values, range(len(values)))
    alone = Ranking(values, [i for i, m in enumerate(member) if m])
    for k in range(len(values) + 2):
        assert everyone.largest_among(k, member) == alone.largest(k)


def test_rows_read_from_the_pair_table_equal_each_pairs_own_fields() -> None:
    snap = _open(random_snapshot(22, 2_400, 150))
    params = BalancerParams(objective=OBJECTIVE_NORMALIZED_LOAD, imbalance_threshold=0.0, seed=4)
    search, _ = _search(snap, params, columns=True)
    for _ in range(5):
        bounds = search._pair_bounds_n()
        assert bounds is not None
        gain, pairs = bounds
        sources, targets, table = pairs
        width = len(targets)
        order = np.argsort(-gain.ravel(), kind="stable")[:60]
        expected = [
            (
                float(gain[k // width, k % width]),
                int(sources[k // width]),
                int(targets[k % width]),
                float(table[0, k // width, k % width]),  # the ideal amount
                float(table[3, k // width, k % width]),  # the highest key
            )
            for k in order.tolist()
        ]
        assert search._rows(order, pairs) == expected
        search.step(1)


def test_mix_columns_equal_the_array_of_each_workloads_parameters() -> None:
    rng = np.random.default_rng(9)
    workloads = [
        WorkloadParams(oio=float(rng.lognormal(1.0, 1.0)), io_size_kb=8, read_pct=70.5, random_pct=100),
        WorkloadParams(oio=0, io_size_kb=4.0, read_pct=0, random_pct=0.0),
        WorkloadParams(oio=2**53 + 1, io_size_kb=1e300, read_pct=np.float32(33.3), random_pct=55.5),  # type: ignore[arg-type]
        *(WorkloadParams(*(float(v) for v in rng.uniform(0.0, 100.0, 4))) for _ in range(200)),
    ]
    expected = np.array(
        [(w.oio, w.io_size_kb, w.read_pct, w.random_pct) for w in workloads], dtype=np.float64
    )
    assert mix_columns(workloads).tobytes() == expected.tobytes()
    assert mix_columns([]).shape == (0, 4)
