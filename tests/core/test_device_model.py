"""Device model: P = 1/slope of read latency against OIO, with aggregation, filters and explicit failures."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

from basil.core.device_model import (
    PER_DEVICE_P,
    DeviceFit,
    DeviceModelParams,
    DeviceSample,
    FitStatus,
    aggregate_intervals,
    device_prior,
    fit_device_model,
    settle_performance,
)


def line_samples(
    slope: float,
    intercept: float,
    oios: list[float],
    *,
    noise: float = 0.0,
    seed: int = 0,
    host: str = "esx-1",
    time_step: float = 1.0,
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
            time=float(t) * time_step,
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


# --- µs latency, robust fit, exclusions, credibility, carry-forward and priors ----------------------


def ssd_samples(*, seed: int, micro: bool, n: int = 120) -> list[DeviceSample]:
    """A flash datastore: 0.3 ms + 0.02 ms per OIO (P = 50), 3 % noise, as vCenter reports it."""
    rng = np.random.default_rng(seed)
    out = []
    for t in range(n):
        oio = float(rng.uniform(4, 24))
        truth = (0.3 + 0.02 * oio) * float(np.exp(rng.normal(0, 0.03)))
        out.append(
            DeviceSample(
                "esx-1",
                oio,
                float(round(truth)),  # totalReadLatency: whole milliseconds
                2000.0,
                8.0,
                10.0,
                time=20.0 * t,
                latency_us=float(round(truth * 1000)) if micro else None,
            )
        )
    return out


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_flash_gets_a_credible_p_from_microseconds_and_none_from_milliseconds(seed: int) -> None:
    in_ms = fit_device_model(ssd_samples(seed=seed, micro=False))
    assert in_ms.latency_resolution == "ms"
    assert not in_ms.credible
    assert in_ms.performance is None
    in_us = fit_device_model(ssd_samples(seed=seed, micro=True))
    assert in_us.latency_resolution == "us"
    assert in_us.credible
    assert in_us.source == "fit"
    assert in_us.performance == pytest.approx(50.0, rel=0.15)
    assert in_us.performance_low is not None
    assert in_us.performance_high is not None
    assert in_us.performance_low < 50.0 < in_us.performance_high


def test_milliseconds_intervals_are_left_out_when_enough_come_in_microseconds() -> None:
    samples = ssd_samples(seed=4, micro=True, n=60) + [
        replace(s, time=s.time + 10_000.0, latency_us=None)  # type: ignore[operator]
        for s in ssd_samples(seed=5, micro=False, n=40)
    ]
    fit = fit_device_model(samples)
    assert fit.latency_resolution == "us"
    assert fit.dropped["ms_resolution"] == 40
    assert fit.performance == pytest.approx(50.0, rel=0.15)


def test_theil_sen_ignores_a_minority_of_disturbed_intervals() -> None:
    oios = [float(o) for o in np.linspace(4, 64, 100)]
    samples = line_samples(0.5, 3.0, oios, noise=0.5, seed=8)
    # A fifth of the intervals at low OIO see latency tripled (a burst of something else).
    disturbed = [replace(s, latency_ms=s.latency_ms * 3) if s.oio < 16 else s for s in samples]
    fit = fit_device_model(disturbed)
    assert fit.credible
    assert fit.slope == pytest.approx(0.5, rel=0.1)


def test_storage_vmotion_windows_are_left_out() -> None:
    # A copy runs over [400, 1600], most of the window: its background IO slows every VM IO by
    # 25 ms less 0.25 ms per OIO (the copy's share of the devices falls as the VMs queue more).
    samples = line_samples(0.5, 3.0, [float(4 + (t * 7) % 40) for t in range(80)], time_step=20.0)
    copying = [
        replace(s, latency_ms=s.latency_ms + 25.0 - 0.25 * s.oio) if 400 < (s.time or 0) <= 1600 else s
        for s in samples
    ]
    disturbed = fit_device_model(copying)
    fit = fit_device_model(copying, excluded=[(400.0, 1600.0)])
    assert fit.dropped["storage_vmotion"] == 59  # intervals ending 420 … 1580
    assert fit.credible
    assert fit.slope == pytest.approx(0.5, rel=0.02)
    assert disturbed.slope is not None
    assert abs(disturbed.slope - 0.5) > 0.1


def test_write_cache_transients_are_left_out() -> None:
    reads = line_samples(0.5, 3.0, [float(4 + (t * 7) % 40) for t in range(60)], time_step=20.0)
    writes = []
    spoiled = []
    for s in reads:
        full = 600 <= (s.time or 0) < 800  # the cache fills: writes wait for the devices, reads too
        writes.append(replace(s, op="write", latency_ms=40.0 if full else 0.4))
        spoiled.append(replace(s, latency_ms=s.latency_ms + 30.0) if full else s)
    fit = fit_device_model(spoiled + writes)
    assert fit.dropped["write_cache_transient"] == 10
    assert fit.slope == pytest.approx(0.5, rel=0.02)


@pytest.mark.parametrize(
    ("samples", "status"),
    [
        pytest.param(
            line_samples(0.5, -8.0, [20, 24, 28, 32, 36, 40]), FitStatus.NEGATIVE_INTERCEPT, id="intercept"
        ),
        pytest.param(
            line_samples(0.5, 5.0, [30, 30.2, 30.4, 30.1, 30.3]), FitStatus.NARROW_OIO_RANGE, id="oio-range"
        ),
        pytest.param(
            line_samples(0.05, 5.0, [4, 8, 12, 16, 20, 24], noise=3.0, seed=2),
            FitStatus.WIDE_INTERVAL,
            id="ci",
        ),
    ],
)
def test_fits_that_are_not_credible_are_flagged_not_used(
    samples: list[DeviceSample], status: FitStatus
) -> None:
    fit = fit_device_model(samples)
    assert fit.status is status
    assert not fit.credible
    assert fit.performance is None
    assert fit.slope is not None  # the line is still reported
    assert fit.reason in fit.describe()


def test_confidence_interval_covers_the_true_p_and_narrows_with_data() -> None:
    covered = 0
    widths = []
    for seed in range(40):
        oios = [float(o) for o in np.linspace(4, 64, 30 if seed % 2 else 120)]
        fit = fit_device_model(line_samples(0.5, 3.0, oios, noise=2.0, seed=seed))
        assert fit.performance_low is not None
        assert fit.performance_high is not None
        covered += fit.performance_low <= 2.0 <= fit.performance_high
        widths.append((seed % 2, fit.performance_high / fit.performance_low))
    assert covered >= 34  # a 95 % interval, 40 trials
    few = np.mean([w for odd, w in widths if odd])
    many = np.mean([w for odd, w in widths if not odd])
    assert many < few


def fitted(p: float, low: float, high: float) -> DeviceFit:
    return DeviceFit(
        FitStatus.OK, performance=p, slope=1 / p, performance_low=low, performance_high=high,
        credible=True, source="fit",
    )  # fmt: skip


def test_p_moves_by_a_bounded_step_and_halfway_when_the_fits_agree() -> None:
    previous = fitted(5.0, 4.0, 6.0)
    jump = settle_performance(fitted(20.0, 16.0, 25.0), previous)
    assert jump.performance == pytest.approx(7.5)  # ×1.5 at most
    assert "at most" in jump.reason
    agree = settle_performance(fitted(4.0, 3.0, 5.5), previous)
    assert agree.performance == pytest.approx(math.sqrt(20.0))
    near = settle_performance(fitted(6.0, 5.5, 6.5), previous)  # disagrees, within the step
    assert near.performance == pytest.approx(6.0)
    first = settle_performance(fitted(20.0, 16.0, 25.0), None)
    assert first.performance == pytest.approx(20.0)


def test_a_fit_that_is_not_credible_carries_the_previous_p() -> None:
    bad = fit_device_model(line_samples(0.5, -8.0, [20, 24, 28, 32, 36, 40]))
    settled = settle_performance(bad, fitted(5.0, 4.0, 6.0))
    assert settled.source == "carried"
    assert settled.performance == 5.0
    assert (settled.performance_low, settled.performance_high) == (4.0, 6.0)
    assert settled.status is FitStatus.NEGATIVE_INTERCEPT
    assert "negative intercept" in settled.describe()


def test_the_demo_sequence_settles() -> None:
    # 9diskLUN in the demo: P 5.6 → 4.7 → 9.0 → 3.8 → (not credible) → 1.0 → 2.9, each with an
    # interval of ±30 %. Settled, P stays within a factor 1.6 where the raw fits spanned 9.
    raw = [5.6, 4.7, 9.0, 3.8, None, 1.0, 2.9]
    settled: DeviceFit | None = None
    ps = []
    for p in raw:
        fit = fitted(p, p / 1.3, p * 1.3) if p is not None else DeviceFit(FitStatus.NEGATIVE_INTERCEPT)
        settled = settle_performance(fit, settled)
        assert settled.performance is not None
        ps.append(settled.performance)
    assert max(ps) / min(ps) < 2.5
    assert max(ps[:4]) / min(ps[:4]) < 1.6


def test_priors_from_device_kind_and_count() -> None:
    known = device_prior("fc15k", 8)
    assert known is not None
    assert known.confident
    assert known.performance == pytest.approx(8 * PER_DEVICE_P["fc15k"])
    assert known.performance_low < known.performance < known.performance_high
    kind_only = device_prior("sata7k")
    assert kind_only is not None
    assert not kind_only.confident
    assert device_prior("tape") is None
    vendor = device_prior(None, None, performance=12.0)
    assert vendor is not None
    assert vendor.confident
    nothing = fit_device_model([])
    assert settle_performance(nothing, None, known).source == "prior"
    assert settle_performance(nothing, None, known).performance == known.performance
    unsure = settle_performance(nothing, None, kind_only)
    assert unsure.performance is None
    assert "not confident" in unsure.reason
