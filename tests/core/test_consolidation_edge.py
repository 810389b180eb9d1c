"""The cache at its edge where a disk was measured (docs/whatif.md, issue 16, task wif5): a disk whose
writes were taken as cached but were on average more than two cache hits alone had the cache full at
times where it ran, its destaging at the bound. Beside another disk the cache fills: the cached
writes of both go through to the devices (the full cache's steady state)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from basil.core.consolidation import (
    EDGE_FACTOR,
    RAID_WRITE_COST,
    DeviceParams,
    WorkloadMeasurement,
    WorkloadPrediction,
    at_edge_where_measured,
    cache_hit_ms,
    predict_consolidation,
    whatif_from_mapping,
)
from basil.errors import ValidationError

RAID5 = DeviceParams(
    max_conn=32,
    parallelism=4.0,
    positioning_ms=5.0,
    positioning_source="given",
    write_cost=RAID_WRITE_COST["5"],
    destage_ms=0.67,
)
# A ledger: 8 KB sequential writes, 0.92 ms on average alone, 2.5 cache hits: the cache filled at times.
LEDGER = WorkloadMeasurement(
    "ledger", 72.4, 1375.5, 4.15, 0.92, read_oio=0.30, write_oio=1.26, random_pct=10.0
)
# A lookup disk: random 8 KB reads, its few writes cache hits (0.37 ms).
LOOKUP = WorkloadMeasurement(
    "lookup", 700.0, 37.0, 12.0, 0.37, read_oio=8.4, write_oio=0.01, random_pct=100.0
)


def by_name(workloads: list[WorkloadPrediction]) -> dict[str, WorkloadPrediction]:
    return {w.name: w for w in workloads}


def test_a_cache_at_its_edge_fills_beside_a_neighbour_and_writes_go_through() -> None:
    p = predict_consolidation([LEDGER, LOOKUP], RAID5)
    before = predict_consolidation([LEDGER, LOOKUP], replace(RAID5, edge_carried=False))
    assert cache_hit_ms([LEDGER, LOOKUP], RAID5) == pytest.approx(0.37)
    assert p.edge_where_measured == ("ledger",)
    assert p.full_where_measured == ()
    assert p.cache_full
    assert before.edge_where_measured == ()
    assert not before.cache_full
    ledger, lookup = by_name(p.workloads)["ledger"], by_name(p.workloads)["lookup"]
    ledger_before, lookup_before = by_name(before.workloads)["ledger"], by_name(before.workloads)["lookup"]
    # Before: cache hits, the ledger's destaging stretching the lookup's reads.
    assert (ledger_before.write_latency_ms, lookup_before.write_latency_ms) == pytest.approx((0.92, 0.37))
    # Now both go through the full cache to the devices: slower writes, fewer of them.
    for got, measured in ((ledger, LEDGER), (lookup, LOOKUP)):
        assert got.write_through
        assert got.write_waits
        assert got.write_latency_ms > 5.0  # a positioning at least
        assert got.write_iops < measured.write_iops
    # The ledger writes at the devices' pace, so its destaging no longer stretches the lookup's reads.
    assert p.destage_util < before.destage_util
    assert lookup.read_latency_ms < lookup_before.read_latency_ms


def test_not_at_the_edge_within_two_cache_hits_alone_or_without_the_device_line() -> None:
    near = replace(LEDGER, write_latency_ms=0.37 * EDGE_FACTOR)  # at two hits: not above
    p = predict_consolidation([near, LOOKUP], RAID5)
    assert p.edge_where_measured == ()
    assert not any(w.write_through for w in p.workloads)
    # Alone its own write is the fastest cached one (no hit to compare with); with a known hit it is
    # at the edge but there is no neighbour to carry it to. With a known hit of 0.5 ms, 0.92 is within.
    assert predict_consolidation([LEDGER], RAID5).edge_where_measured == ()
    alone = predict_consolidation([LEDGER], replace(RAID5, write_hit_ms=0.37))
    assert alone.edge_where_measured == ("ledger",)
    assert not alone.cache_full
    assert alone.workloads[0].write_latency_ms == pytest.approx(0.92)
    assert not at_edge_where_measured(LEDGER, replace(RAID5, write_hit_ms=0.5), 0.5)
    assert predict_consolidation([LEDGER, LOOKUP], replace(RAID5, write_hit_ms=0.5)).edge_where_measured == ()
    for device in (
        replace(RAID5, positioning_ms=None),
        replace(RAID5, write_cost=None),
        replace(RAID5, full_cache_carried=False),
    ):
        q = predict_consolidation([LEDGER, LOOKUP], device)
        assert q.edge_where_measured == ()
        assert not any(w.write_through for w in q.workloads)


def test_measured_together_the_group_keeps_its_figures() -> None:
    group = [replace(LEDGER, group="g"), replace(LOOKUP, group="g")]
    p = predict_consolidation(group, RAID5)
    assert p.edge_where_measured == ("ledger",)
    assert not p.cache_full
    assert not any(w.write_through for w in p.workloads)


def test_a_bad_cache_hit_names_the_field() -> None:
    with pytest.raises(ValidationError, match="write_hit_ms"):
        predict_consolidation([LEDGER, LOOKUP], replace(RAID5, write_hit_ms=-1.0))


def test_fields_present_in_the_answer() -> None:
    def disk(w: WorkloadMeasurement) -> dict[str, object]:
        return {
            "name": w.name,
            "read_iops": w.read_iops,
            "write_iops": w.write_iops,
            "read_latency_ms": w.read_latency_ms,
            "write_latency_ms": w.write_latency_ms,
            "random_pct": w.random_pct,
        }

    answer = whatif_from_mapping(
        {
            "datastore": {"parallelism": 4, "positioning_ms": 5.0, "write_cost": 4},
            "disks": [disk(LEDGER), disk(LOOKUP)],
        }
    ).to_dict()
    assert answer["edge_where_measured"] == ["ledger"]
    assert answer["cache_full"] is True
    # All the destaging together counts the ledger's own, which its figures alone already had.
    total, added = answer["destage_total"], answer["destage_util"]
    assert isinstance(total, float)
    assert isinstance(added, float)
    assert total > added
    workloads = answer["workloads"]
    assert isinstance(workloads, list)
    assert [w["write_through"] for w in workloads] == [True, True]


def test_not_at_the_edge_when_never_measured_alone() -> None:
    """A disk on a shared datastore: its old neighbours may have filled the cache; nothing is carried."""
    p = predict_consolidation([replace(LEDGER, alone=False), LOOKUP], RAID5)
    assert p.edge_where_measured == ()
    assert not any(w.write_through for w in p.workloads)
    assert predict_consolidation([LEDGER, LOOKUP], RAID5).edge_where_measured == ("ledger",)
