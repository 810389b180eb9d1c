"""The search's fast paths give what the plain computation gives (issue 11, one round at
vCenter scale): the ranking of N kept sorted through updates, the sources and targets of a large pod
read from it (sources taken from the other end of the score than the targets), the units' sums
added for all units at once, a datastore's latency and IOPS at once, the disks' flags and classes
looked up by their four comparisons made at once."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from basil.core.constraints import Budget, PlacementState, Unit, UnitColumns, build_units
from basil.core.normalized_load import Models, resolve_models
from basil.core.params import OBJECTIVE_NORMALIZED_LOAD, BalancerParams
from basil.core.predictive import DiskDemands, PredictiveState, disk_demands, unit_sums, unit_write_sums
from basil.core.search import BestMoveSearch, Ranking
from basil.core.snapshot import Snapshot
from basil.core.workload_model import classify_workload, workload_flags

from .builders import datastore, disk, snapshot, workload
from .test_search_equivalence import random_snapshot

# Values drawn from a few levels, so that ties (broken by index) occur.
values = st.sampled_from([0.0, 0.5, 1.0, 2.5, 7.0, 1e6])


@settings(max_examples=200, deadline=None)
@given(
    start=st.lists(values, min_size=1, max_size=30),
    data=st.data(),
)
def test_ranking_after_updates_equals_a_full_sort(start: list[float], data: st.DataObject) -> None:
    n = len(start)
    members = data.draw(st.sets(st.integers(0, n - 1)))
    ranking = Ranking(start, members)
    current = list(start)
    inside = set(members)
    steps = data.draw(
        st.lists(st.tuples(st.booleans(), st.integers(0, n - 1), values), max_size=40),
    )
    for discard, i, value in steps:
        if discard:
            ranking.discard(i)
            inside.discard(i)
        else:
            ranking.update(i, value)
            current[i] = value
        expected = sorted((current[j], j) for j in inside)
        assert ranking.rows == expected
        for k in (0, 1, 3, len(expected), len(expected) + 2):
            assert ranking.smallest(k) == [j for _, j in expected[:k]]
            assert sorted(ranking.largest(k)) == sorted(j for _, j in expected[max(len(expected) - k, 0) :])


def pod_search(
    snap: Snapshot,
    models: Models,
    params: BalancerParams,
    units: list[Unit],
    unit_columns: UnitColumns | None = None,
) -> BestMoveSearch:
    """The search of the snapshot's first pod over *units* (the list itself: the search uses
    *unit_columns* only for the units they were built with), as the balancer sets it up."""
    (name, members), *_ = snap.pods().items()
    return BestMoveSearch(
        name=name,
        members=members,
        units=units,
        models=models,
        state=PlacementState(snap, models, params),
        budget=Budget(params.max_moves, params.max_gb),
        params=params,
        disk_sizes={d.id: d.size_gb for d in snap.disks},
        demands=disk_demands(models, params.workload_model.constants),
        unit_columns=unit_columns,
    )


def _search(seed: int, disks: int, datastores: int) -> BestMoveSearch:
    params = BalancerParams(objective=OBJECTIVE_NORMALIZED_LOAD, imbalance_threshold=0.0, seed=seed)
    snap = random_snapshot(seed, disks, datastores)
    models = resolve_models(snap, params)
    return pod_search(snap, models, params, build_units(snap, models, params))


def test_large_pod_sources_and_targets_equal_the_full_partitions_as_moves_apply() -> None:
    search = _search(11, 2_400, 150)
    assert search.by_n is not None  # a large pod: the ranking is in use
    checked = 0
    number = 1
    for _ in range(60):
        for width in (1, 4):
            search.width = width
            w = (search.N * search.total - search.squares) / search.P
            fast = search._sources_targets_n(w)
            full = search._sources_targets(w, low_is_target=True)
            assert fast == full
            assert fast[0]  # sources found
            checked += 1
        search.width = 1
        if search.done:
            break
        number += len(search.step(number))
    assert number > 40  # moves applied between the checks (the ranking was updated)
    assert checked >= 80
    # The ranking holds every datastore, by N.
    assert search.by_n.rows == sorted((float(search.N[j]), j) for j in range(search.d))
    # The datastores that still have movable units, and their count, as the pools say.
    assert search.has_units == [bool(pool) for pool in search.movable]
    assert search.with_units == sum(search.has_units)
    assert np.array_equal(np.array(search.by_n.value), search.N)


def test_latency_iops_is_latency_and_iops_to_the_bit() -> None:
    state = PredictiveState(np.array([0.2, 5.0, 3.0]), np.array([0.02, 1.0, 0.3]))
    state.positioning = [0.0, 0.6, 0.0]
    state.add(0, 4.0, 1.0, 3.0, 2)
    state.add(1, 7.5, 2.5, 6.0, 3, wa=1.0, wb=0.5)
    state.anchor([2.0, 3.0, 0.0], (11.5, 1.0))
    for j in range(3):  # j = 2 is empty: its IOPS are 0
        assert state.latency_iops(j) == (state.latency(j), state.iops(j))
    assert state.latency_iops(2)[1] == 0.0
    assert state.latency_iops(1)[1] > 0.0


def test_unit_sums_at_once_equal_unit_sums_per_unit() -> None:
    search = _search(12, 900, 30)
    assert any(len(unit.disks) > 1 for unit in search.units)
    assert len(search.units) == len(search.ua) == len(search.uwb)
    for uid, unit in enumerate(search.units):
        a, b, o = unit_sums(search.demands, unit.disks)
        wa, wb = unit_write_sums(search.demands, unit.disks)
        reads = sum(search.demands[disk].line_oio for disk in unit.disks)
        assert (search.ua[uid], search.ub[uid], search.uo[uid]) == (a, b, o)
        assert (search.uwa[uid], search.uwb[uid], search.ul[uid]) == (wa, wb, reads)


def test_disk_demands_columns_hold_each_disks_demand() -> None:
    params = BalancerParams()
    snap = random_snapshot(13, 200, 8)
    models = resolve_models(snap, params)
    demands = disk_demands(models, params.workload_model.constants)
    assert list(demands) == list(models.disks)
    assert len(demands) == len(snap.disks)
    ids = [disk.id for disk in reversed(snap.disks)]
    table = demands.columns(ids)
    assert table.shape == (len(DiskDemands.FLOAT_FIELDS), len(ids))
    for k, disk_id in enumerate(ids):
        demand = demands[disk_id]
        assert [getattr(demand, field) for field in DiskDemands.FLOAT_FIELDS] == table[:, k].tolist()
    assert any(demands[disk_id].sequential for disk_id in ids)
    assert any(not demands[disk_id].sequential for disk_id in ids)


def test_a_plain_mapping_of_demands_gives_the_same_unit_sums() -> None:
    search = _search(14, 600, 20)
    plain = dict(search.demands.items())
    assert not isinstance(plain, DiskDemands)
    again = BestMoveSearch(
        name=search.name,
        members=random_snapshot(14, 600, 20).pods()[search.name],
        units=search.units,
        models=search.models,
        state=search.state,
        budget=search.budget,
        params=search.params,
        disk_sizes=search.disk_sizes,
        demands=plain,
    )
    assert (again.ua, again.ub, again.uo, again.ul) == (search.ua, search.ub, search.uo, search.ul)
    assert (again.uwa, again.uwb) == (search.uwa, search.uwb)


def test_flags_and_class_from_the_comparison_codes_equal_each_disks_own() -> None:
    # Read and random shares on, just below and just above each threshold (5, 25, 30), ints too.
    shares = [0, 0.0, 4.999, 5, 5.0, 5.001, 24.9, 25.0, 25.1, 29.999, 30, 30.0001, 50.0, 100]
    disks = [
        disk(f"vm{i}/d0", "a", workload=workload(4.0, 8.0, read, random))
        for i, (read, random) in enumerate((r, x) for r in shares for x in shares)
    ]
    disks.append(disk("given/d0", "a", load=50.0))
    params = BalancerParams()
    models = resolve_models(snapshot([datastore("a", performance=1.0)], disks), params)
    seen = set()
    for d in disks:
        model = models.disks[d.id]
        if d.workload is None:
            assert model.flags == ()
            continue
        wparams = params.workload_model
        assert model.flags == workload_flags(d.workload, wparams)
        assert model.workload_class == classify_workload(d.workload, wparams)
        seen.add((model.flags, model.workload_class))
    assert len(seen) >= 6  # every flag and several classes occur


def _kth(values: list[float], k: int) -> float:
    """The k-th highest of *values* (the smallest a top-k choice can hold, ties aside)."""
    return sorted(values, reverse=True)[min(k, len(values)) - 1]


def test_large_pod_sources_are_the_gradients_high_end_and_targets_its_low_end() -> None:
    """A move of ℓ from x to y changes f² by about 2dℓ(w_y − w_x)/(ΣN)³: sources by w are the movable
    datastores with the highest w, targets those with the lowest (issue 11, srcfix)."""
    search = _search(11, 2_400, 150)
    number = 1
    for _ in range(20):
        for width in (1, 4):
            search.width = width
            k, j = 12 * width, min(24 * width, search.d - 1)
            w = (search.N * search.total - search.squares) / search.P
            sources, targets = search._sources_targets_n(w)
            movable = [i for i in range(search.d) if search.movable[i]]
            w_floor = _kth([float(w[i]) for i in movable], k)
            n_floor = _kth([float(search.N[i]) for i in movable], k)
            # Every movable datastore strictly above the k-th highest w is a source, and every
            # source is among the highest by w or by N.
            assert {i for i in movable if w[i] > w_floor} <= set(sources)
            assert all(w[i] >= w_floor or search.N[i] >= n_floor for i in sources)
            # The highest-w datastore is a source and, unless it is also among the lowest N, not a target.
            top = max(movable, key=lambda i: float(w[i]))
            assert top in sources
            lowest_n = float(np.sort(search.N)[j])
            assert top not in targets or search.N[top] <= lowest_n
            # Targets: the j + 1 lowest w and the j + 1 lowest N.
            w_ceiling = float(np.sort(w)[j])
            assert {i for i in range(search.d) if w[i] < w_ceiling} <= set(targets)
            assert all(w[i] <= w_ceiling or search.N[i] <= lowest_n for i in targets)
        search.width = 1
        if search.done:
            break
        number += len(search.step(number))
    assert number > 10


def test_large_pod_throughput_sources_are_the_lowest_marginal_iops() -> None:
    """throughput scores a datastore by its marginal IOPS per IO: a unit moved from x to y gains about
    its IO × (marginal_y − marginal_x), so sources are the lowest and targets the highest."""
    search = _search(12, 2_400, 150)
    rng = np.random.default_rng(12)
    for width in (1, 4):
        search.width = width
        k, j = 12 * width, min(24 * width, search.d - 1)
        score = rng.uniform(0.0, 100.0, search.d)  # distinct values: no ties
        sources, targets = search._sources_targets(score, low_is_target=False)
        movable = [i for i in range(search.d) if search.movable[i]]
        by_n = sorted(movable, key=lambda i: -float(search.N[i]))[:k]
        lowest = sorted(movable, key=lambda i: float(score[i]))[:k]
        assert set(sources) == set(by_n) | set(lowest)
        highest = np.argsort(-score)[: j + 1].tolist()
        assert set(highest) <= set(targets)
        top = max(movable, key=lambda i: float(score[i]))
        assert top not in sources or top in by_n  # the best target is a source only by its N
