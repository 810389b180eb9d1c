"""The full cache in its steady state (docs/whatif.md, task wif6): once a write-back cache is full it
stays full while the writes arriving need more destaging than the devices give; then nothing is
destaged in the background, every write goes through to the devices, and each disk's figures lose
the destage stretch its own cached writes put on the devices where it was measured."""

from __future__ import annotations

from dataclasses import replace

import pytest

from basil.core.consolidation import (
    MAX_DESTAGE_UTIL,
    RAID_WRITE_COST,
    DeviceParams,
    WorkloadMeasurement,
    WorkloadPrediction,
    destage_util,
    predict_consolidation,
    write_through_ms,
)

# A RAID 6 LUN with a slow line: a log's interleaved destaging overruns it.
HEAVY = DeviceParams(max_conn=32, parallelism=1.0, positioning_ms=20.0, write_cost=RAID_WRITE_COST["6"])
# A database log: 95 % writes acknowledged by the cache (0.37 ms), 10 % random.
LOG = WorkloadMeasurement("log", 150.0, 3000.0, 2.0, 0.37, read_oio=0.3, write_oio=1.11, random_pct=10.0)
# A decision-support scan of random 64 KB reads, no writes.
DSS = WorkloadMeasurement("dss", 600.0, 0.0, 15.0, 0.0, read_oio=9.0, write_oio=0.0, random_pct=100.0)
# A random reader whose few writes the cache absorbed: their destaging was in its figures alone.
CATALOG = WorkloadMeasurement(
    "catalog", 249.3, 27.7, 31.41, 0.37, read_oio=7.83, write_oio=0.01, random_pct=100.0
)
# An audit trail whose writes were slower than a cache hit alone: the cache full where it ran.
AUDIT = WorkloadMeasurement("audit", 15.4, 368.6, 3.47, 4.96, read_oio=0.05, write_oio=1.83, random_pct=10.0)
RAID6 = DeviceParams(
    max_conn=32,
    parallelism=5.5,
    positioning_ms=11.6,
    positioning_source="given",
    write_cost=RAID_WRITE_COST["6"],
)


def by_name(workloads: list[WorkloadPrediction]) -> dict[str, WorkloadPrediction]:
    return {w.name: w for w in workloads}


def test_a_cache_the_writes_overrun_is_full_for_good() -> None:
    p = predict_consolidation([LOG, DSS], HEAVY)
    filling = predict_consolidation([LOG, DSS], replace(HEAVY, steady_full=False))
    assert p.cache_full
    assert filling.cache_full
    assert filling.admission_wait_ms > 0
    # Full, nothing is admitted later: the log's writes go through to the devices.
    assert p.admission_wait_ms == 0.0
    log, dss = by_name(p.workloads)["log"], by_name(p.workloads)["dss"]
    assert log.write_through
    assert log.write_waits
    queue = LOG.queue + DSS.queue
    in_flight = 1.0 - LOG.queue / queue
    assert log.write_latency_ms == pytest.approx(write_through_ms(LOG, in_flight, queue, 1.0, HEAVY))
    # No destaging stretches the reader (it has no cached writes of its own to shed).
    assert dss.destage_added_ms == pytest.approx(0.0)
    # The filling cache's reader waited behind destaging at the bound; the full one's does not.
    assert dss.read_latency_ms < by_name(filling.workloads)["dss"].read_latency_ms
    assert dss.read_latency_ms > DSS.read_latency_ms  # the log's reads still come first


def test_each_disk_sheds_the_destaging_of_its_own_writes() -> None:
    p = predict_consolidation([AUDIT, CATALOG], RAID6)
    assert p.full_where_measured == ("audit",)
    assert p.cache_full
    catalog = by_name(p.workloads)["catalog"]
    assert catalog.write_through
    # Alone its cached writes kept the devices busy U⁰ of the time, which stretched its reads by
    # 1 / (1 - U⁰); with the cache full that destaging is gone: its reads lose that share.
    own = destage_util(CATALOG, CATALOG.write_iops, 0.0, RAID6)
    assert 0 < own < MAX_DESTAGE_UTIL
    before_stretch = catalog.read_latency_ms - catalog.destage_added_ms
    assert catalog.destage_added_ms == pytest.approx(-own * before_stretch)
    # Its writes through the devices, no destage stretch on them.
    queue = AUDIT.queue + CATALOG.queue
    assert catalog.write_latency_ms == pytest.approx(write_through_ms(CATALOG, 0.0, queue, 1.0, RAID6))
    # The disk measured with the cache full had no cached writes: nothing to shed.
    audit = by_name(p.workloads)["audit"]
    assert audit.destage_added_ms == pytest.approx(0.0)


def test_a_cache_that_keeps_up_is_untouched() -> None:
    device = replace(HEAVY, write_cost=RAID_WRITE_COST["0"], positioning_ms=2.0)
    p = predict_consolidation([LOG, DSS], device)
    before = predict_consolidation([LOG, DSS], replace(device, steady_full=False))
    assert not p.cache_full
    assert p.destage_util < MAX_DESTAGE_UTIL
    assert [w.to_dict() for w in p.workloads] == [w.to_dict() for w in before.workloads]


def test_a_full_cache_alone_changes_nothing() -> None:
    alone = predict_consolidation([AUDIT], RAID6)
    (audit,) = alone.workloads
    assert not alone.cache_full
    assert (audit.read_latency_ms, audit.write_latency_ms) == pytest.approx((3.47, 4.96))
