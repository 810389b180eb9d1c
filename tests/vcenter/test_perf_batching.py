"""How a collection cycle is cut into QueryPerf requests, and the figures derived from counters."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime

import pytest

from basil.vcenter.perf import QueryUnit, _EntityResult, merge_into, pack_queries, random_pct, split_entity


def test_an_entity_within_the_budget_is_one_unit() -> None:
    units = split_entity("vm-1", "vm", list(range(13)), budget=64)
    assert units == [QueryUnit("vm-1", "vm", tuple(range(13)), 13)]


def test_an_entity_over_the_budget_is_split_by_counters() -> None:
    units = split_entity("vm-1", "vm", list(range(13)), budget=5)
    assert [u.counters for u in units] == [(0, 1, 2, 3, 4), (5, 6, 7, 8, 9), (10, 11, 12)]
    assert all(u.cost <= 5 for u in units)


@pytest.mark.parametrize("budget", [1, 13, 26, 64, 256])
def test_batches_never_exceed_the_budget_and_keep_every_unit(budget: int) -> None:
    units = [u for i in range(100) for u in split_entity(f"vm-{i}", "vm", list(range(13)), budget)]
    batches = pack_queries(units, budget)
    assert all(sum(u.cost for u in b) <= budget for b in batches)
    assert [u for b in batches for u in b] == units
    # Packing is tight: no two neighbouring batches could have been one.
    assert all(sum(u.cost for u in a) + b[0].cost > budget for a, b in itertools.pairwise(batches))


def test_random_percent_from_the_seek_histogram() -> None:
    assert random_pct(75, 20, 5) == pytest.approx(25.0)
    assert random_pct(0, 0, 0) is None
    assert random_pct(None, 1, 1) is None


def ts(second: int) -> tuple[datetime, int]:
    return (datetime(2026, 1, 1, 0, 0, second, tzinfo=UTC), 20)


def test_merge_of_split_results_keeps_only_common_sample_times() -> None:
    a = _EntityResult([ts(0), ts(20)], {"scsi0:0": {1: [1.0, 2.0]}})
    b = _EntityResult([ts(20), ts(40)], {"scsi0:0": {2: [3.0, 4.0]}})
    merge_into(a, b)
    assert a.timestamps == [ts(20)]
    assert a.series == {"scsi0:0": {1: [2.0], 2: [3.0]}}


def test_merge_of_aligned_results_joins_counters() -> None:
    a = _EntityResult([ts(0)], {"scsi0:0": {1: [1.0]}})
    merge_into(a, _EntityResult([ts(0)], {"scsi0:0": {2: [5.0]}, "scsi0:1": {2: [6.0]}}))
    assert a.series == {"scsi0:0": {1: [1.0], 2: [5.0]}, "scsi0:1": {2: [6.0]}}
