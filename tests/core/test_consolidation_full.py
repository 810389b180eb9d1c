"""The cache full where a disk was measured (docs/whatif.md, issue 16): a disk whose writes alone were
slower than a cache hit on a datastore with a write-back cache overran the cache by itself; beside
other disks the cache is full for everyone, and their cached writes go through to the devices."""

from __future__ import annotations

from dataclasses import replace

import pytest

from basil.core.consolidation import (
    RAID_WRITE_COST,
    DeviceParams,
    WorkloadMeasurement,
    WorkloadPrediction,
    full_where_measured,
    predict_consolidation,
    whatif_from_mapping,
)

M = 5.5
T_POS = 11.6
RAID6 = DeviceParams(
    max_conn=32,
    parallelism=M,
    positioning_ms=T_POS,
    positioning_source="given",
    write_cost=RAID_WRITE_COST["6"],
)
# An audit trail: 16 KB sequential writes, 4.96 ms each alone: the cache was full where it ran.
AUDIT = WorkloadMeasurement("audit", 15.4, 368.6, 3.47, 4.96, read_oio=0.05, write_oio=1.83, random_pct=10.0)
# A catalog: random 8 KB reads, its few writes acknowledged by the cache (0.37 ms).
CATALOG = WorkloadMeasurement(
    "catalog", 249.3, 27.7, 31.41, 0.37, read_oio=7.83, write_oio=0.01, random_pct=100.0
)
# A reader without writes.
READER = WorkloadMeasurement("reader", 300.0, 0.0, 20.0, 0.0, read_oio=6.0, write_oio=0.0, random_pct=100.0)


def by_name(workloads: list[WorkloadPrediction]) -> dict[str, WorkloadPrediction]:
    return {w.name: w for w in workloads}


def test_a_cache_full_alone_is_carried_to_the_neighbours() -> None:
    # As carried before the full cache's steady state (task wif6): the destage stretch kept.
    p = predict_consolidation([AUDIT, CATALOG], replace(RAID6, steady_full=False))
    before = predict_consolidation(
        [AUDIT, CATALOG], replace(RAID6, full_cache_carried=False, steady_full=False)
    )
    assert p.full_where_measured == ("audit",)
    assert p.cache_full
    assert not before.cache_full
    assert p.admission_wait_ms == 0.0
    catalog, catalog_before = by_name(p.workloads)["catalog"], by_name(before.workloads)["catalog"]
    assert catalog_before.write_latency_ms == pytest.approx(0.37)  # before: still a cache hit
    assert catalog.write_through
    assert catalog.write_waits
    # A random 8 KB write on RAID 6 through the devices: two rounds of a positioning at least.
    assert catalog.write_latency_ms >= 2 * T_POS
    # A closed loop: slower writes, fewer IOs, its mix kept.
    assert catalog.write_iops < CATALOG.write_iops
    assert catalog.read_iops / catalog.write_iops == pytest.approx(CATALOG.read_iops / CATALOG.write_iops)
    # The full disk's writes were device writes: counted whole ahead of the catalog's reads, not halved.
    assert catalog.read_latency_ms > catalog_before.read_latency_ms
    audit = by_name(p.workloads)["audit"]
    assert not audit.write_through
    assert not audit.write_cached


def test_a_mirror_writes_through_in_one_round() -> None:
    mirror = replace(RAID6, write_cost=RAID_WRITE_COST["10"])
    parity = by_name(predict_consolidation([AUDIT, CATALOG], RAID6).workloads)["catalog"]
    mirrored = by_name(predict_consolidation([AUDIT, CATALOG], mirror).workloads)["catalog"]
    assert mirrored.write_through
    assert T_POS <= mirrored.write_latency_ms < parity.write_latency_ms


def test_not_applied_without_a_write_back_cache() -> None:
    for device in (
        replace(RAID6, write_cache_ms=None),  # no cache: every write is a device write
        replace(RAID6, positioning_ms=None),  # no device line to price a write that goes through
        replace(RAID6, write_cost=None),
    ):
        p = predict_consolidation([AUDIT, CATALOG], device)
        before = predict_consolidation([AUDIT, CATALOG], replace(device, full_cache_carried=False))
        assert not full_where_measured(AUDIT, device)
        assert p.full_where_measured == ()
        assert not any(w.write_through for w in p.workloads)
        assert [w.to_dict() for w in p.workloads] == [w.to_dict() for w in before.workloads]


def test_not_carried_alone_nor_within_the_group_measured_together() -> None:
    alone = predict_consolidation([AUDIT], RAID6)
    assert alone.full_where_measured == ("audit",)
    assert not alone.cache_full
    (audit,) = alone.workloads
    assert (audit.read_latency_ms, audit.write_latency_ms) == pytest.approx((3.47, 4.96))
    # Measured together: the catalog's figures have the full cache already (its 0.37 ms says it was
    # not, here; the group's figures are taken as they are).
    group = [replace(AUDIT, group="g"), replace(CATALOG, group="g")]
    p = predict_consolidation(group, RAID6)
    assert not p.cache_full
    assert not any(w.write_through for w in p.workloads)
    assert by_name(p.workloads)["catalog"].write_latency_ms == pytest.approx(0.37)


def test_a_full_cache_beside_a_reader_is_full_but_nobody_writes_through() -> None:
    p = predict_consolidation([AUDIT, READER], RAID6)
    assert p.cache_full
    assert p.full_where_measured == ("audit",)
    assert not any(w.write_through for w in p.workloads)


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
            "datastore": {"parallelism": M, "positioning_ms": T_POS, "write_cost": 6},
            "disks": [disk(AUDIT), disk(CATALOG)],
        }
    ).to_dict()
    assert answer["full_where_measured"] == ["audit"]
    assert answer["cache_full"] is True
    workloads = answer["workloads"]
    assert isinstance(workloads, list)
    assert [w["write_through"] for w in workloads] == [False, True]
    plain = whatif_from_mapping({"disks": [disk(AUDIT), disk(CATALOG)]}).to_dict()
    assert plain["full_where_measured"] == []  # no t_pos: the rule cannot price a write through


def test_a_disk_never_measured_alone_carries_no_full_cache() -> None:
    """Its slow writes may be its old neighbours' doing (they filled the cache there), and they do not
    come along: neither the full cache nor the cache at its edge is carried, and the neighbours keep
    their cache hits."""
    shared = replace(AUDIT, alone=False)
    p = predict_consolidation([shared, CATALOG], RAID6)
    assert p.full_where_measured == ()
    assert not p.cache_full
    assert not any(w.write_through for w in p.workloads)
    assert by_name(p.workloads)["catalog"].write_latency_ms == pytest.approx(0.37)
    assert not full_where_measured(shared, RAID6)
    assert full_where_measured(AUDIT, RAID6)
