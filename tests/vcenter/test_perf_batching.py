"""How a collection cycle is cut into QueryPerf requests, and the figures derived from counters."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta
from typing import cast

import pytest

from basil.errors import ValidationError
from basil.vcenter.connection import VCenterConnection
from basil.vcenter.perf import (
    FIRST_LOOK,
    CollectorParams,
    PerfCollector,
    QueryUnit,
    Window,
    _EntityResult,
    expected_samples,
    merge_into,
    pack_queries,
    random_pct,
    split_entity,
)


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


def test_a_catch_up_batch_also_stays_within_the_value_budget() -> None:
    units = [QueryUnit(f"vm-{i}", "vm", tuple(range(13)), 13) for i in range(40)]
    behind = {f"vm-{i}": 60 for i in range(0, 40, 2)}  # every other VM catches up 60 samples
    batches = pack_queries(units, 256, {**dict.fromkeys((u.entity for u in units), 1), **behind}, 2000)
    assert [u for b in batches for u in b] == units
    for batch in batches:
        assert sum(u.cost for u in batch) <= 256
        assert sum(u.cost * behind.get(u.entity, 1) for u in batch) <= 2000
    # Without anybody behind, the value budget changes nothing.
    assert pack_queries(units, 256, {}, 2000) == pack_queries(units, 256)


def test_expected_samples_of_a_window() -> None:
    now = datetime(2026, 1, 1, tzinfo=UTC)
    assert expected_samples(FIRST_LOOK, now, 60) == 1
    assert expected_samples(Window(now - timedelta(seconds=40)), now, 60) == 2
    assert expected_samples(Window(now - timedelta(hours=1)), now, 60) == 60  # open: at most a window
    assert expected_samples(Window(now - timedelta(minutes=30), now - timedelta(minutes=25)), now, 60) == 15
    assert expected_samples(Window(now - timedelta(seconds=40)), None, 60) == 1


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


NOW = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


def collector(**params: int) -> PerfCollector:
    # Windows are worked out from bookmarks and vCenter's time alone: no session is needed.
    return PerfCollector(cast(VCenterConnection, None), CollectorParams(**params))


def test_an_entity_close_behind_is_asked_for_everything_after_its_bookmark() -> None:
    c = collector(window_samples=15)
    assert c.window("vm-1", NOW) == FIRST_LOOK  # never seen: its newest sample only
    c.resume({"vm-1": NOW - timedelta(seconds=40)})
    assert c.window("vm-1", NOW) == Window(NOW - timedelta(seconds=40))
    assert c.window("vm-1", None) == Window(NOW - timedelta(seconds=40))


def test_an_entity_far_behind_is_asked_for_one_closed_window() -> None:
    c = collector(window_samples=15)
    c.resume({"vm-1": NOW - timedelta(minutes=10)})
    start = NOW - timedelta(minutes=10)
    assert c.window("vm-1", NOW) == Window(start, start + timedelta(minutes=5))


def test_a_window_ending_within_the_publication_grace_stays_open() -> None:
    c = collector(window_samples=15)
    # 5 minutes of window ending 59 s before vCenter's clock: its last sample may not be published.
    since = NOW - timedelta(minutes=5, seconds=59)
    c.resume({"vm-1": since, "vm-2": since - timedelta(seconds=1)})
    assert c.window("vm-1", NOW) == Window(since)
    assert c.window("vm-2", NOW).end == NOW - timedelta(seconds=60)


def test_nothing_older_than_vcenters_hour_is_asked_for() -> None:
    c = collector(window_samples=15)
    c.resume({"vm-1": NOW - timedelta(hours=5)})
    start = NOW - timedelta(hours=1)
    assert c.window("vm-1", NOW) == Window(start, start + timedelta(minutes=5))


def test_collector_parameters_report_every_problem() -> None:
    problems = CollectorParams(
        workers=0, window_samples=0, max_rounds=0, chunk_samples=0, max_query_values=0
    ).validate()
    assert {p.field for p in problems} == {
        "workers",
        "window_samples",
        "max_rounds",
        "chunk_samples",
        "max_query_values",
    }
    assert CollectorParams(window_samples=181).validate()[0].field == "window_samples"
    with pytest.raises(ValidationError):
        collector(chunk_samples=-1)
