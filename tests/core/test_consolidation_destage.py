"""Cached writes destaged (docs/whatif.md): a sequential write stream the write-back cache absorbs
costs the devices little alone, but interleaved with other streams its destaging becomes random
and loads the devices, which slows every disk's reads."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from basil.core.consolidation import (
    DESTAGE_FROM_READS,
    MAX_DESTAGE_UTIL,
    RAID_WRITE_COST,
    WRITE_COST_LOWER_BOUND,
    DeviceParams,
    ReadInterval,
    WorkloadMeasurement,
    WorkloadPrediction,
    destage_factor,
    destage_util,
    interleaved_share,
    predict_consolidation,
    predict_departure,
    separate_destage,
    whatif_from_mapping,
)
from basil.errors import ValidationError

M = 4.0
T_POS = 5.0
K = RAID_WRITE_COST["10"]  # a mirror: two device writes per host write
DEVICE = DeviceParams(
    max_conn=32, parallelism=M, positioning_ms=T_POS, positioning_source="given", write_cost=K
)
NO_DESTAGE = DeviceParams(
    max_conn=32, parallelism=M, positioning_ms=T_POS, positioning_source="given", write_cost=None
)

# A database log: 95 % writes acknowledged by the cache (0.37 ms), 10 % random.
LOG = WorkloadMeasurement("log", 150.0, 3000.0, 2.0, 0.37, read_oio=0.3, write_oio=1.11, random_pct=10.0)
# A decision-support scan of random 64 KB reads, no writes.
DSS = WorkloadMeasurement("dss", 600.0, 0.0, 15.0, 0.0, read_oio=9.0, write_oio=0.0, random_pct=100.0)
# A random writer: its destaging is random alone already.
MAIL = WorkloadMeasurement("mail", 150.0, 750.0, 13.0, 0.36, read_oio=1.95, write_oio=0.27, random_pct=99.0)


def by_name(workloads: list[WorkloadPrediction]) -> dict[str, WorkloadPrediction]:
    return {w.name: w for w in workloads}


def test_alone_a_cached_sequential_writer_keeps_its_figures() -> None:
    p = predict_consolidation([LOG], DEVICE)
    (log,) = p.workloads
    assert p.destage_util == 0.0
    assert log.destage_added_ms == 0.0
    assert (log.read_latency_ms, log.write_latency_ms, log.write_iops) == pytest.approx((2.0, 0.37, 3000.0))


def test_interleaved_destaging_slows_the_neighbours_reads_by_the_added_device_load() -> None:
    p = predict_consolidation([LOG, DSS], DEVICE)
    without = predict_consolidation([LOG, DSS], NO_DESTAGE)
    got, base = by_name(p.workloads), by_name(without.workloads)
    log = got["log"]
    # ΔU = X^W' · k · s · (f¹ − f⁰) · t_pos / m, X^W' the log's predicted write rate, f⁰ = 0 alone,
    # f¹ the neighbour's share of the IOs in flight (which a closed loop keeps).
    f1 = interleaved_share(LOG.queue, LOG.queue + DSS.queue)
    assert f1 == pytest.approx(9.0 / 10.41)
    expected = log.write_iops * K * 0.9 * f1 * T_POS / (1000.0 * M)
    assert p.destage_util == pytest.approx(expected, rel=1e-4)
    assert 0.05 < p.destage_util < MAX_DESTAGE_UTIL
    # The reader's latency is what it was predicted without destaging, stretched by 1 / (1 − ΔU)
    # (the fixed point lowers the log's rate a little, so compare through the answer's own ΔU).
    dss = got["dss"]
    unstretched = dss.read_latency_ms - dss.destage_added_ms
    assert dss.read_latency_ms == pytest.approx(unstretched / (1.0 - p.destage_util), rel=1e-6)
    assert dss.read_latency_ms > base["dss"].read_latency_ms * 1.05
    assert dss.read_iops < base["dss"].read_iops
    # The log's own writes stay at the cache's latency; its reads wait longer too.
    assert log.write_latency_ms == pytest.approx(0.37)
    assert log.read_latency_ms > base["log"].read_latency_ms
    assert p.to_dict()["destage_saturated"] is False


def test_a_random_writer_adds_no_destage_change_its_destaging_was_random_alone() -> None:
    p = predict_consolidation([MAIL, DSS], DEVICE)
    without = predict_consolidation([MAIL, DSS], NO_DESTAGE)
    # s = 0.01: the share that interleaving turns random is tiny.
    assert p.destage_util < 0.01
    assert by_name(p.workloads)["dss"].read_latency_ms == pytest.approx(
        by_name(without.workloads)["dss"].read_latency_ms, rel=0.01
    )


def test_destage_load_grows_with_the_raid_write_cost_and_needs_a_cache() -> None:
    raid5 = DeviceParams(max_conn=32, parallelism=M, positioning_ms=T_POS, write_cost=RAID_WRITE_COST["5"])
    raid0 = DeviceParams(max_conn=32, parallelism=M, positioning_ms=T_POS, write_cost=RAID_WRITE_COST["0"])
    assert destage_util(LOG, 1000.0, 0.5, raid5) == pytest.approx(4 * destage_util(LOG, 1000.0, 0.5, raid0))
    # U = X^W k (r + s f) t_pos / m
    assert destage_util(LOG, 1000.0, 0.5, raid0) == pytest.approx(
        1000.0 * 1 * (0.1 + 0.9 * 0.5) * T_POS / 4000.0
    )
    # Writes the cache did not absorb wait for the devices in the foreground: no destage load.
    slow = WorkloadMeasurement("slow", 0.0, 500.0, 0.0, 8.0, random_pct=10.0)
    assert destage_util(slow, 500.0, 0.5, raid5) == 0.0
    # Without a random % or a positioning cost nothing is known of its destaging.
    unknown = WorkloadMeasurement("u", 0.0, 500.0, 0.0, 0.37)
    assert destage_util(unknown, 500.0, 0.5, raid5) == 0.0
    assert destage_util(LOG, 500.0, 0.5, DeviceParams(write_cost=4.0)) == 0.0


def test_the_stretch_is_bounded_where_the_cache_would_fill() -> None:
    assert destage_factor(0.0, 5.0) == pytest.approx(1.0 / (1.0 - MAX_DESTAGE_UTIL))
    assert destage_factor(0.2, 0.2) == 1.0
    assert destage_factor(0.5, 0.1) == pytest.approx(0.6)  # leaving takes the stretch back
    assert destage_factor(math.inf, math.inf) == pytest.approx(1.0 / (1.0 - MAX_DESTAGE_UTIL))
    heavy = DeviceParams(
        max_conn=32,
        parallelism=1.0,
        positioning_ms=20.0,
        write_cost=RAID_WRITE_COST["6"],
        cache_fills=False,
    )
    p = predict_consolidation([LOG, DSS], heavy)
    assert p.destage_util > MAX_DESTAGE_UTIL
    assert p.to_dict()["destage_saturated"] is True
    assert p.to_dict()["cache_full"] is False
    dss = by_name(p.workloads)["dss"]
    assert dss.read_latency_ms == pytest.approx(
        (dss.read_latency_ms - dss.destage_added_ms) / (1.0 - MAX_DESTAGE_UTIL), rel=1e-6
    )


def test_when_the_writer_leaves_the_reader_regains_the_destage_stretch() -> None:
    # RAID 0 (k = 1): a stretch well below the bound, so that leaving takes back what joining added.
    device = DeviceParams(max_conn=32, parallelism=M, positioning_ms=T_POS, write_cost=RAID_WRITE_COST["0"])
    # Measured together: the same disks as the consolidated prediction gives them.
    together = [
        WorkloadMeasurement(
            w.name,
            w.read_iops,
            w.write_iops,
            w.read_latency_ms,
            w.write_latency_ms,
            group="lun",
            random_pct=src.random_pct,
        )
        for w, src in zip(predict_consolidation([LOG, DSS], device).workloads, (LOG, DSS), strict=True)
    ]
    (dss,) = predict_departure(together, {"log"}, device)
    (plain,) = predict_departure(together, {"log"}, NO_DESTAGE)
    assert dss.destage_added_ms < 0
    assert dss.read_latency_ms < plain.read_latency_ms
    assert dss.read_latency_ms == pytest.approx(15.0, rel=0.25)


def test_a_document_carries_the_write_cost() -> None:
    disks = [
        {"name": "log", "read_iops": 150, "write_iops": 600, "read_latency_ms": 2, "write_latency_ms": 0.37,
         "random_pct": 10},
        {"name": "dss", "read_iops": 600, "write_iops": 0, "read_latency_ms": 15, "write_latency_ms": 0,
         "random_pct": 100},
    ]  # fmt: skip
    given = whatif_from_mapping(
        {"datastore": {"parallelism": 4, "positioning_ms": 5, "write_cost": 4}, "disks": disks}
    ).to_dict()
    assert (given["write_cost"], given["write_cost_source"]) == (4.0, "given")
    assert isinstance(given["destage_util"], float)
    assert given["destage_util"] > 0
    default = whatif_from_mapping({"datastore": {"parallelism": 4, "positioning_ms": 5}, "disks": disks})
    assert (default.device.write_cost, default.device.write_cost_source) == (1.0, WRITE_COST_LOWER_BOUND)
    assert 0 < default.destage_util < given["destage_util"]
    off = whatif_from_mapping(
        {"datastore": {"parallelism": 4, "positioning_ms": 5, "write_cost": None}, "disks": disks}
    )
    assert off.destage_util == 0.0
    for bad in (0.5, "4", True):
        with pytest.raises(ValidationError) as err:
            whatif_from_mapping({"datastore": {"write_cost": bad}, "disks": disks})
        assert "datastore.write_cost" in str(err.value)


def test_a_destaged_operation_costs_c_where_known_else_t_pos_over_m() -> None:
    reads_cost = destage_util(LOG, 1000.0, 0.5, DEVICE)
    assert reads_cost == pytest.approx(1000.0 * K * (0.1 + 0.9 * 0.5) * T_POS / M / 1000.0)
    sorted_cost = DeviceParams(
        max_conn=32, parallelism=M, positioning_ms=T_POS, write_cost=K, destage_ms=0.4, destage_source="x"
    )
    assert destage_util(LOG, 1000.0, 0.5, sorted_cost) == pytest.approx(reads_cost * 0.4 / (T_POS / M))
    # Cheaper destaging, less stretch for the reader.
    dear = by_name(predict_consolidation([LOG, DSS], DEVICE).workloads)["dss"]
    cheap = by_name(predict_consolidation([LOG, DSS], sorted_cost).workloads)["dss"]
    assert 0 < cheap.destage_added_ms < dear.destage_added_ms
    # Still no positioning cost known, nothing destaged: the rule needs the device model.
    assert destage_util(LOG, 1000.0, 0.5, DeviceParams(write_cost=K, destage_ms=0.4)) == 0.0


def _intervals(a: float, b: float, c: float | None) -> list[ReadInterval]:
    """Reads of a device L = (a + b·OIO) / (1 − D·c / 1000), the writes (D) growing with the OIO."""
    out = []
    for oio in (2.0, 4.0, 6.0, 8.0, 11.0, 14.0):
        for write_share in (0.0, 0.3, 0.6):
            ops = 40.0 * oio * write_share
            load = 0.0 if c is None else ops * c / 1000.0
            out.append(ReadInterval(oio=oio, latency_ms=(a + b * oio) / (1.0 - load), destaged_ops=ops))
    return out


def test_separating_the_destaging_recovers_the_reads_line_and_the_destage_cost() -> None:
    fit = separate_destage(_intervals(3.0, 0.6, 0.45))
    assert fit is not None
    assert (fit.intercept_ms, fit.slope_ms, fit.destage_ms) == pytest.approx((3.0, 0.6, 0.45), rel=1e-6)
    assert fit.points == 18
    # A line through the same points puts the destaging in its slope.
    points = _intervals(3.0, 0.6, 0.45)
    x = [p.oio for p in points]
    y = [p.latency_ms for p in points]
    mean_x, mean_y = sum(x) / len(x), sum(y) / len(y)
    slope = sum((u - mean_x) * (v - mean_y) for u, v in zip(x, y, strict=True)) / sum(
        (u - mean_x) ** 2 for u in x
    )
    assert slope > 0.6 * 1.1


def test_separation_without_cached_writes_is_the_plain_line_and_refuses_what_it_cannot_read() -> None:
    no_writes = [ReadInterval(p.oio, p.latency_ms, 0.0) for p in _intervals(3.0, 0.6, None)]
    fit = separate_destage(no_writes)
    assert fit is not None
    assert (fit.intercept_ms, fit.slope_ms, fit.destage_ms) == pytest.approx((3.0, 0.6, None))
    assert separate_destage(no_writes[:4]) is None  # too few intervals
    flat = [ReadInterval(5.0, 4.0 + 0.1 * k, 10.0 * k) for k in range(8)]  # one OIO: no line
    assert separate_destage(flat) is None
    falling = [ReadInterval(p.oio, 20.0 - p.oio, 0.0) for p in no_writes]
    assert separate_destage(falling) is None


def test_a_document_carries_the_destage_cost() -> None:
    document = {
        "datastore": {"parallelism": M, "positioning_ms": T_POS, "write_cost": K, "destage_ms": 0.4},
        "disks": [
            {
                "name": w.name,
                "read_iops": w.read_iops,
                "write_iops": w.write_iops,
                "read_latency_ms": w.read_latency_ms,
                "write_latency_ms": w.write_latency_ms,
                "random_pct": w.random_pct,
            }
            for w in (LOG, DSS)
        ],
    }
    given = whatif_from_mapping(document).to_dict()
    assert (given["destage_ms"], given["destage_source"]) == (0.4, "given")
    del document["datastore"]["destage_ms"]  # type: ignore[attr-defined]
    default = whatif_from_mapping(document).to_dict()
    assert default["destage_ms"] == pytest.approx(T_POS / M)
    assert default["destage_source"] == DESTAGE_FROM_READS
    document["datastore"]["destage_ms"] = 0  # type: ignore[index]
    with pytest.raises(ValidationError) as err:
        whatif_from_mapping(document)
    assert "datastore.destage_ms" in str(err.value)


HEAVY = DeviceParams(max_conn=32, parallelism=1.0, positioning_ms=20.0, write_cost=RAID_WRITE_COST["6"])


def test_a_full_cache_admits_the_writes_at_the_rate_the_devices_destage() -> None:
    # The filling regime (the rule before the full cache's steady state, task wif6).
    unbounded = predict_consolidation([LOG, DSS], replace(HEAVY, cache_fills=False, steady_full=False))
    p = predict_consolidation([LOG, DSS], replace(HEAVY, steady_full=False))
    answer = p.to_dict()
    assert answer["cache_full"] is True
    assert answer["destage_saturated"] is True
    # The demand the cache would have needed is what the bounded estimator had; the admitted load fits.
    assert p.destage_demand == pytest.approx(unbounded.destage_util, rel=1e-6)
    assert p.destage_util == pytest.approx(MAX_DESTAGE_UTIL, abs=1e-6)
    assert p.destage_util <= MAX_DESTAGE_UTIL
    log, before = by_name(p.workloads)["log"], by_name(unbounded.workloads)["log"]
    # The log's writes wait for the cache to take them: slower, and fewer (a closed loop).
    assert log.write_waits
    assert log.write_latency_ms == pytest.approx(LOG.write_latency_ms + p.admission_wait_ms)
    assert p.admission_wait_ms > 0
    assert log.write_iops < before.write_iops
    assert answer["admitted_write_iops"] == pytest.approx(log.write_iops)
    # The reader sees the destaging the devices can give, no more; it has no cached writes to wait.
    dss = by_name(p.workloads)["dss"]
    assert dss.read_latency_ms == pytest.approx(
        (dss.read_latency_ms - dss.destage_added_ms) / (1.0 - MAX_DESTAGE_UTIL), rel=1e-5
    )
    assert dss.write_waits is False


def test_a_cache_that_keeps_up_admits_every_write() -> None:
    for device in (DEVICE, replace(DEVICE, write_cost=RAID_WRITE_COST["0"])):
        p = predict_consolidation([LOG, DSS], device)
        before = predict_consolidation([LOG, DSS], replace(device, cache_fills=False))
        assert p.destage_util < MAX_DESTAGE_UTIL
        assert not p.cache_full
        assert p.admission_wait_ms == 0.0
        assert p.to_dict()["admitted_write_iops"] == 0.0
        assert [w.to_dict() for w in p.workloads] == [w.to_dict() for w in before.workloads]


writers = st.builds(
    WorkloadMeasurement,
    name=st.uuids().map(str),
    read_iops=st.floats(0, 2000),
    write_iops=st.floats(0, 5000),
    read_latency_ms=st.floats(0.1, 100),
    write_latency_ms=st.floats(0.2, 5),  # some cached (at most 1 ms), some not
    read_oio=st.floats(0, 32),
    write_oio=st.floats(0, 8),
    random_pct=st.floats(0, 100),
)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(writers, min_size=1, max_size=4, unique_by=lambda m: m.name), st.sampled_from(["0", "5", "6"])
)
def test_the_admitted_destage_load_fits_the_devices(group: list[WorkloadMeasurement], raid: str) -> None:
    device = replace(HEAVY, write_cost=RAID_WRITE_COST[raid], parallelism=2.0)
    p = predict_consolidation(group, device)
    # A disk with writes slower than a cache hit beside others: the cache full where it was measured
    # is carried to them (their cached writes go through, no admission); otherwise the filling rule.
    # So is a cache at its edge where a disk was measured: cached writes above two cache hits (the
    # fastest cached write of the group).
    cached = [w.write_latency_ms for w in group if w.write_iops > 0 and w.write_latency_ms <= 1.0]
    assert p.edge_where_measured == tuple(
        w.name
        for w in group
        if w.write_iops > 0 and w.write_latency_ms <= 1.0 and w.write_latency_ms > 2 * min(cached)
    )
    carried = bool(p.full_where_measured or p.edge_where_measured) and len(group) > 1
    assert p.full_where_measured == tuple(
        w.name for w in group if w.write_iops > 0 and w.write_latency_ms > 1
    )
    if not carried:
        assert p.destage_util <= MAX_DESTAGE_UTIL + 1e-9
    assert p.cache_full == (carried or p.destage_demand >= MAX_DESTAGE_UTIL)
    assert p.admission_wait_ms >= 0.0
    if not p.cache_full or carried:
        assert p.admission_wait_ms == 0.0
    for w, got in zip(group, p.workloads, strict=True):
        assert got.write_through == (carried and w.write_iops > 0 and w.write_latency_ms <= 1.0)
        if got.write_through:
            assert got.write_waits
            assert got.write_latency_ms >= w.write_latency_ms  # through the devices: never a cache hit's
        elif got.write_waits:
            assert w.write_latency_ms <= 1.0  # only writes the cache absorbs wait for it
            assert got.write_latency_ms == pytest.approx(w.write_latency_ms + p.admission_wait_ms)
        elif w.write_iops > 0 and w.write_latency_ms <= 1.0:
            assert got.write_latency_ms == w.write_latency_ms  # the cache keeps up: its latency
        else:
            assert got.write_latency_ms >= w.write_latency_ms - 1e-9
