"""Device model: P = 1/slope of read latency against OIO, with aggregation, filters and explicit failures."""

from __future__ import annotations

import numpy as np
import pytest

from basil.core.device_model import (
    DeviceModelParams,
    DeviceSample,
    FitStatus,
    aggregate_intervals,
    fit_device_model,
)


def line_samples(
    slope: float,
    intercept: float,
    oios: list[float],
    *,
    noise: float = 0.0,
    seed: int = 0,
    host: str = "esx-1",
) -> list[DeviceSample]:
    rng = np.random.default_rng(seed)
    return [
        DeviceSample(
            host=host,
            oio=o,
            latency_ms=intercept + slope * o + float(rng.normal(0, noise)),
            iops=100.0,
            io_size_kb=8.0,
            seq_pct=10.0,
            time=float(t),
        )
        for t, o in enumerate(oios)
    ]


def test_exact_line_gives_p_as_inverse_slope() -> None:
    fit = fit_device_model(line_samples(0.5, 2.0, [4, 8, 12, 16, 24, 32]))
    assert fit.status is FitStatus.OK
    assert fit.slope == pytest.approx(0.5)
    assert fit.performance == pytest.approx(2.0)
    assert fit.intercept == pytest.approx(2.0)
    assert fit.r_squared == pytest.approx(1.0)
    assert fit.points_used == 6


@pytest.mark.parametrize(("slope", "seed"), [(1.43, 1), (0.714, 2), (0.5, 3), (3.5, 4)])
def test_noisy_lines_recover_the_slope(slope: float, seed: int) -> None:
    oios = [float(o) for o in np.linspace(4, 64, 200)]
    fit = fit_device_model(line_samples(slope, 3.0, oios, noise=2.0, seed=seed))
    assert fit.ok
    assert fit.slope == pytest.approx(slope, rel=0.05)
    assert fit.performance == pytest.approx(1 / slope, rel=0.05)
    assert fit.r_squared is not None
    assert 0.8 < fit.r_squared < 1.0


def test_more_spindles_give_larger_p() -> None:
    # Figure 6: slopes fall as disks are added, so P grows with the number of disks.
    fits = [fit_device_model(line_samples(4.0 / disks, 1.0, [4, 8, 16, 32, 64])) for disks in (4, 8, 16)]
    ps = [f.performance for f in fits]
    assert all(p is not None for p in ps)
    assert ps == sorted(ps)


def test_hosts_are_aggregated_per_interval() -> None:
    # §6.1: OIO summed over hosts, latency weighted by each host's IOPS.
    samples = [
        DeviceSample("esx-1", oio=4, latency_ms=10, iops=300, io_size_kb=8, seq_pct=0, time=1.0),
        DeviceSample("esx-2", oio=6, latency_ms=20, iops=100, io_size_kb=16, seq_pct=40, time=1.0),
    ]
    intervals, dropped = aggregate_intervals(samples)
    assert len(intervals) == 1
    i = intervals[0]
    assert i.oio == 10
    assert i.latency_ms == pytest.approx((10 * 300 + 20 * 100) / 400)
    assert i.iops == 400
    assert i.io_size_kb == pytest.approx((8 * 300 + 16 * 100) / 400)
    assert i.seq_pct == pytest.approx(10)
    assert i.hosts == 2
    assert dropped == {"writes": 0, "idle": 0}


def test_untimed_samples_pair_up_by_position_per_host() -> None:
    samples = [
        DeviceSample("esx-1", 2, 5, 100, 8, 0),
        DeviceSample("esx-1", 4, 7, 100, 8, 0),
        DeviceSample("esx-2", 3, 5, 100, 8, 0),
        DeviceSample("esx-2", 5, 7, 100, 8, 0),
    ]
    intervals, _ = aggregate_intervals(samples)
    assert sorted(i.oio for i in intervals) == [5, 9]


def test_two_hosts_fit_against_total_oio() -> None:
    # Each host sees half the OIO; the device's line is in terms of the total: latency = 1 + 0.25·ΣOIO.
    samples = [
        DeviceSample(
            host, oio=total / 2, latency_ms=1.0 + 0.25 * total, iops=100, io_size_kb=8, seq_pct=0, time=t
        )
        for t, total in enumerate((8.0, 16.0, 24.0, 32.0, 48.0))
        for host in ("esx-1", "esx-2")
    ]
    fit = fit_device_model(samples)
    assert fit.ok
    assert fit.slope == pytest.approx(0.25)
    assert fit.points_used == 5


def test_writes_are_ignored_so_cached_bursts_do_not_bend_the_line() -> None:
    # Figure 8: bursty writes at high OIO with low (cached) latency give a negative slope; with reads
    # only the slope is positive (Figure 9).
    reads = line_samples(0.8, 2.0, [2, 4, 6, 8, 10])
    writes = [
        DeviceSample(
            "esx-1", oio=o, latency_ms=1.0, iops=2000, io_size_kb=8, seq_pct=0, time=100.0 + o, op="write"
        )
        for o in (40, 50, 60, 70)
    ]
    as_reads = [
        DeviceSample(w.host, w.oio, w.latency_ms, w.iops, w.io_size_kb, w.seq_pct, w.time) for w in writes
    ]
    assert fit_device_model(reads + as_reads).status is FitStatus.NON_POSITIVE_SLOPE
    fit = fit_device_model(reads + writes)
    assert fit.ok
    assert fit.slope == pytest.approx(0.8)
    assert fit.dropped["writes"] == 4


def test_large_and_sequential_intervals_are_dropped() -> None:
    good = line_samples(1.0, 0.0, [2, 4, 6, 8, 10])
    large = [DeviceSample("esx-1", 50, 5, 100, 64, 0, time=200.0)]
    sequential = [DeviceSample("esx-1", 60, 5, 100, 8, 95, time=300.0)]
    edge = [DeviceSample("esx-1", 12, 12, 100, 32, 90, time=400.0)]  # exactly at the limits: kept
    fit = fit_device_model(good + large + sequential + edge)
    assert fit.ok
    assert fit.slope == pytest.approx(1.0)
    assert fit.points_used == 6
    assert fit.dropped["large_io"] == 1
    assert fit.dropped["sequential"] == 1


def test_filters_are_configurable() -> None:
    samples = [DeviceSample("esx-1", o, o, 100, 64, 0, time=float(o)) for o in (1, 2, 3, 4, 5)]
    assert fit_device_model(samples).status is FitStatus.TOO_FEW_POINTS
    assert fit_device_model(samples, DeviceModelParams(max_io_size_kb=128)).ok


def test_no_samples_is_no_data() -> None:
    fit = fit_device_model([])
    assert fit.status is FitStatus.NO_DATA
    assert fit.performance is None
    assert "no samples" in fit.describe()


def test_too_few_points() -> None:
    fit = fit_device_model(line_samples(1.0, 0.0, [2, 4, 6]))
    assert fit.status is FitStatus.TOO_FEW_POINTS
    assert fit.points_used == 3
    assert fit.performance is None
    assert "only 3 usable intervals" in fit.describe()


def test_same_oio_everywhere_has_no_slope() -> None:
    samples = [DeviceSample("esx-1", 8, 5 + t, 100, 8, 0, time=float(t)) for t in range(6)]
    fit = fit_device_model(samples)
    assert fit.status is FitStatus.NO_OIO_SPREAD
    assert fit.performance is None


def test_negative_slope_is_reported_not_used() -> None:
    fit = fit_device_model(line_samples(-0.3, 30.0, [4, 8, 12, 16, 20]))
    assert fit.status is FitStatus.NON_POSITIVE_SLOPE
    assert fit.performance is None
    assert fit.slope == pytest.approx(-0.3)
    assert "does not rise" in fit.describe()


def test_flat_latency_is_a_non_positive_slope() -> None:
    fit = fit_device_model(line_samples(0.0, 5.0, [4, 8, 12, 16, 20]))
    assert fit.status is FitStatus.NON_POSITIVE_SLOPE


def test_idle_intervals_are_dropped() -> None:
    idle = [DeviceSample("esx-1", 0, 0, 0, 8, 0, time=float(100 + t)) for t in range(3)]
    fit = fit_device_model(line_samples(1.0, 1.0, [2, 4, 6, 8, 10]) + idle)
    assert fit.ok
    assert fit.dropped["idle"] == 3
    assert fit.intervals == 8
    only_idle = fit_device_model(idle)
    assert only_idle.status is FitStatus.TOO_FEW_POINTS


def test_params_validate() -> None:
    problems = DeviceModelParams(max_io_size_kb=0, max_seq_pct=120, min_points=1).validate()
    assert {p.field for p in problems} == {
        "device_model.max_io_size_kb",
        "device_model.max_seq_pct",
        "device_model.min_points",
    }


def test_sample_problems_name_fields() -> None:
    bad = DeviceSample("", oio=-1, latency_ms=float("nan"), iops=1, io_size_kb=8, seq_pct=101, op="trim")
    assert {p.field for p in bad.problems("s")} == {"s.host", "s.oio", "s.latency_ms", "s.seq_pct", "s.op"}
