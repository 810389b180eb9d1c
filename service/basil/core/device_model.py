"""BASIL's device model (§4, §4.1, §6.1): a datastore's performance P = 1 / slope of latency against OIO.

Samples of several hosts on the same datastore and interval are first aggregated (OIO summed,
latency weighted by IOPS, §6.1). Only read figures are used and intervals with large IOs or highly
sequential IO are dropped, because cached writes, sequential streams and large transfers bend the
⟨OIO, latency⟩ line, sometimes to a negative slope (§4.1). Beyond the paper, so that P holds up
from one fit to the next:

- latency in microseconds when a sample has it (a flash device reads 0 or 1 in whole milliseconds,
  which makes its slope noise); a fit uses one resolution and says which;
- intervals in which a Storage vMotion copies to or from the datastore (given as time windows) and
  write-cache transients (the interval's write latency jumps far above the datastore's usual one:
  the cache stopped absorbing writes and destaging loads the devices) are left out;
- the line is fitted by Theil–Sen (median of pairwise slopes), which a minority of disturbed
  intervals cannot tilt, with Sen's rank confidence interval on the slope, hence on P;
- a fit is credible only with a positive slope, a non-negative intercept (allowing for noise), a
  real OIO range and a bounded confidence interval; otherwise it is reported, not used.

:func:`settle_performance` then decides the P in use: a credible fit (moved at most a bounded step
from the previous P), the previous P carried forward, or a prior from what is known of the device.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum

import numpy as np
import numpy.typing as npt

from basil.core.workload_model import number_problems
from basil.errors import Problem

OP_READ = "read"
OP_WRITE = "write"

RESOLUTION_US = "us"
RESOLUTION_MS = "ms"

SOURCE_FIT = "fit"  # this window's credible fit
SOURCE_CARRIED = "carried"  # the previous P, kept because this window's fit is not credible
SOURCE_PRIOR = "prior"  # from what is known of the device (kind, spindles, vendor figure)
SOURCE_NONE = "none"  # nothing usable: the datastore is new (§6.3)


@dataclass(frozen=True, slots=True)
class DeviceSample:
    """One host's view of a datastore over one interval (vCenter's ``datastore.*`` read counters).

    ``oio`` is outstanding read IOs, ``latency_ms`` the average read latency, ``iops`` read IOs per
    second, ``io_size_kb`` the average IO size, ``seq_pct`` the share of sequential IO (0–100).
    ``latency_us`` is the same read latency in microseconds when vCenter has it (it then wins over
    ``latency_ms``, which vCenter rounds to whole milliseconds).
    ``time`` (seconds since the epoch, the end of the interval) identifies the interval; samples of
    different hosts with the same time are aggregated. When no sample of a datastore has a time, the
    k-th sample of each host is taken to belong to interval k. ``op`` marks write-side samples: the
    line ignores them, the write-cache transient filter reads them.
    """

    host: str
    oio: float
    latency_ms: float
    iops: float
    io_size_kb: float
    seq_pct: float
    time: float | None = None
    op: str = OP_READ
    latency_us: float | None = None

    def problems(self, path: str) -> list[Problem]:
        found = [
            *number_problems(self.oio, f"{path}.oio", minimum=0),
            *number_problems(self.latency_ms, f"{path}.latency_ms", minimum=0),
            *number_problems(self.iops, f"{path}.iops", minimum=0),
            *number_problems(self.io_size_kb, f"{path}.io_size_kb", minimum=0),
            *number_problems(self.seq_pct, f"{path}.seq_pct", minimum=0, maximum=100),
        ]
        if self.latency_us is not None:
            found += number_problems(self.latency_us, f"{path}.latency_us", minimum=0)
        if self.time is not None:
            found += number_problems(self.time, f"{path}.time")
        if self.op not in (OP_READ, OP_WRITE):
            found.append(Problem(f"{path}.op", f"must be 'read' or 'write', got {self.op!r}"))
        if not self.host:
            found.append(Problem(f"{path}.host", "must not be empty"))
        return found

    @property
    def latency(self) -> float:
        """The read latency in ms at the best resolution the sample has."""
        return self.latency_us / 1000.0 if self.latency_us is not None else self.latency_ms


@dataclass(frozen=True, slots=True)
class DeviceModelParams:
    """Filters, credibility rules and carry-forward bounds of the device model.

    §4.1 gives 32 KB and 90 %. ``min_oio_spread`` is the OIO range (10th to 90th percentile) needed,
    relative to the median OIO, and ``min_oio_range`` the same range in IOs. ``max_ci_ratio`` bounds
    P's confidence interval (high / low) at ``confidence``. ``max_step`` bounds how far P moves
    from one fit to the next (0.5: at most ×1.5 or ÷1.5). A write-cache transient is an interval
    whose write latency is above ``transient_factor`` × the datastore's median write latency and
    more than ``transient_floor_ms`` above it.
    """

    max_io_size_kb: float = 32.0
    max_seq_pct: float = 90.0
    min_points: int = 5
    min_oio_spread: float = 0.15
    min_oio_range: float = 1.0
    max_ci_ratio: float = 3.0
    confidence: float = 0.95
    max_step: float = 0.5
    transient_factor: float = 4.0
    transient_floor_ms: float = 1.0
    interval_s: float = 20.0  # length of a sample's interval; its time is the interval's end
    max_fit_points: int = 600  # Theil–Sen is O(n²): longer windows are thinned evenly in time

    def validate(self, path: str = "device_model") -> list[Problem]:
        found = [
            *number_problems(
                self.max_io_size_kb, f"{path}.max_io_size_kb", minimum=0, exclusive_minimum=True
            ),
            *number_problems(self.max_seq_pct, f"{path}.max_seq_pct", minimum=0, maximum=100),
            *number_problems(self.min_oio_spread, f"{path}.min_oio_spread", minimum=0),
            *number_problems(self.min_oio_range, f"{path}.min_oio_range", minimum=0),
            *number_problems(self.max_ci_ratio, f"{path}.max_ci_ratio", minimum=1, exclusive_minimum=True),
            *number_problems(self.confidence, f"{path}.confidence", minimum=0.5, maximum=0.999),
            *number_problems(self.max_step, f"{path}.max_step", minimum=0, exclusive_minimum=True),
            *number_problems(self.transient_factor, f"{path}.transient_factor", minimum=1),
            *number_problems(self.transient_floor_ms, f"{path}.transient_floor_ms", minimum=0),
            *number_problems(self.interval_s, f"{path}.interval_s", minimum=0, exclusive_minimum=True),
        ]
        for name, least in (("min_points", 2), ("max_fit_points", 10)):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < least:
                found.append(
                    Problem(f"{path}.{name}", f"must be an integer of at least {least}, got {value!r}")
                )
        return found


class FitStatus(StrEnum):
    """Outcome of a device-model fit; only OK is a credible fit."""

    OK = "ok"
    NO_DATA = "no_data"  # no sample at all
    TOO_FEW_POINTS = "too_few_points"  # fewer than min_points intervals survive the filters
    NO_OIO_SPREAD = "no_oio_spread"  # every kept interval has the same OIO: no slope exists
    NARROW_OIO_RANGE = "narrow_oio"  # the OIO range is too small for the slope to mean much
    NON_POSITIVE_SLOPE = "non_positive_slope"  # latency does not grow with OIO (§4.1, Figure 8)
    NEGATIVE_INTERCEPT = "negative_intercept"  # the line says latency < 0 at no load: not a device
    WIDE_INTERVAL = "wide_interval"  # P's confidence interval is too wide to act on


@dataclass(frozen=True, slots=True)
class AggregatedInterval:
    """All hosts' samples of one interval combined (§6.1): OIO summed, the rest IOPS-weighted.

    ``resolution`` is "us" when every host's read latency came in microseconds; ``write_latency_ms``
    is the interval's IOPS-weighted write latency, when write samples were given.
    """

    key: str
    oio: float
    latency_ms: float
    iops: float
    io_size_kb: float
    seq_pct: float
    hosts: int
    time: float | None = None
    resolution: str = RESOLUTION_MS
    write_latency_ms: float | None = None


@dataclass(frozen=True, slots=True)
class DeviceFit:
    """Result of fitting one datastore: the P in use, the line, its quality and what was dropped.

    ``performance`` is the P to use (None when nothing is usable); ``source`` says where it comes
    from (fit, carried, prior, none) and ``performance_low``/``performance_high`` its confidence
    interval. ``slope``/``intercept``/``r_squared`` describe this window's robust line even when it
    is not credible (``credible`` False, ``reason`` why); ``fitted_performance`` is that line's
    1/slope. ``latency_resolution`` is "us" or "ms" (the fit uses one).
    """

    status: FitStatus
    performance: float | None = None  # P in use, OIO per ms
    slope: float | None = None  # ms of latency per outstanding IO
    intercept: float | None = None
    r_squared: float | None = None
    points_used: int = 0
    intervals: int = 0
    dropped: dict[str, int] = field(default_factory=dict)
    performance_low: float | None = None
    performance_high: float | None = None  # None with a P: unbounded above
    credible: bool = False
    source: str = SOURCE_NONE
    latency_resolution: str | None = None
    reason: str = ""
    fitted_performance: float | None = None
    oio_range: tuple[float, float] | None = None  # 10th and 90th percentile of the kept OIO
    median_oio: float = 0.0

    @property
    def ok(self) -> bool:
        """Whether there is a P to use (a credible fit, a carried P or a confident prior)."""
        return self.performance is not None

    def describe(self) -> str:
        """One line for people: the P in use and where it comes from, or why there is none."""
        drops = ", ".join(f"{n} {why}" for why, n in sorted(self.dropped.items()) if n)
        dropped = f"; dropped {drops}" if drops else ""
        unit = f", latency in {self.latency_resolution}" if self.latency_resolution else ""
        line = ""
        if self.slope is not None and self.r_squared is not None:
            line = f"slope {self.slope:.3g} ms/IO, r² {self.r_squared:.2f}{unit}"
        if self.performance is not None:
            ci = _ci_text(self.performance_low, self.performance_high)
            if self.source == SOURCE_FIT:
                head = f"P = {self.performance:.3g} {ci}from {self.points_used} intervals ({line}{dropped})"
                return head + (f"; {self.reason}" if self.reason else "")
            return f"P = {self.performance:.3g} {ci}{self.source}: {self.reason}{dropped}"
        return f"no device model: {self.reason or self.status.value}{dropped}"


def _ci_text(low: float | None, high: float | None) -> str:
    if low is None:
        return ""
    return f"[{low:.3g}, {high:.3g}] " if high is not None else f"[{low:.3g}, ∞) "


def aggregate_intervals(samples: Sequence[DeviceSample]) -> tuple[list[AggregatedInterval], dict[str, int]]:
    """Combine the read samples of all hosts per interval; returns the intervals and drop counts.

    Latency, IO size and sequentiality are weighted by each host's IOPS (§6.1). An interval in which
    no host did any IO has no meaningful latency and is dropped as idle. Write samples only give
    the interval its write latency.
    """
    dropped = {"writes": 0, "idle": 0}
    timed = any(s.time is not None for s in samples)
    by_interval: dict[str, list[DeviceSample]] = defaultdict(list)
    writes: dict[str, list[DeviceSample]] = defaultdict(list)
    ordinal: dict[tuple[str, str], int] = defaultdict(int)
    for s in samples:
        if timed:
            key = repr(s.time)
        else:
            key = f"#{ordinal[(s.host, s.op)]}"
            ordinal[(s.host, s.op)] += 1
        if s.op != OP_READ:
            dropped["writes"] += 1
            writes[key].append(s)
            continue
        by_interval[key].append(s)
    intervals: list[AggregatedInterval] = []
    for key, group in by_interval.items():
        iops = sum(s.iops for s in group)
        if iops <= 0:
            dropped["idle"] += 1
            continue
        w = writes.get(key, [])
        w_iops = sum(s.iops for s in w)
        intervals.append(
            AggregatedInterval(
                key=key,
                oio=sum(s.oio for s in group),
                latency_ms=sum(s.latency * s.iops for s in group) / iops,
                iops=iops,
                io_size_kb=sum(s.io_size_kb * s.iops for s in group) / iops,
                seq_pct=sum(s.seq_pct * s.iops for s in group) / iops,
                hosts=len({s.host for s in group}),
                time=group[0].time,
                resolution=RESOLUTION_US if all(s.latency_us is not None for s in group) else RESOLUTION_MS,
                write_latency_ms=sum(s.latency * s.iops for s in w) / w_iops if w_iops > 0 else None,
            )
        )
    return intervals, dropped


def _in_windows(time: float | None, windows: Sequence[tuple[float, float]], length: float) -> bool:
    """Whether the interval ending at *time* overlaps any [start, end] window."""
    if time is None:
        return False
    return any(time > start and time - length < end for start, end in windows)


def _transients(intervals: Sequence[AggregatedInterval], params: DeviceModelParams) -> set[str]:
    """Keys of the intervals whose write latency jumps far above the datastore's usual one."""
    lat = [i.write_latency_ms for i in intervals if i.write_latency_ms is not None]
    if len(lat) < params.min_points:
        return set()
    usual = float(np.median(lat))
    return {
        i.key
        for i in intervals
        if i.write_latency_ms is not None
        and i.write_latency_ms > params.transient_factor * usual
        and i.write_latency_ms - usual > params.transient_floor_ms
    }


def _normal_quantile(p: float) -> float:
    """Φ⁻¹(p) by bisection on erf (no SciPy in the core)."""
    lo, hi = -10.0, 10.0
    for _ in range(80):
        mid = (lo + hi) / 2
        if 0.5 * (1 + math.erf(mid / math.sqrt(2))) < p:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def theil_sen(
    x: npt.NDArray[np.float64], y: npt.NDArray[np.float64], confidence: float
) -> tuple[float, float, float, float] | None:
    """Theil–Sen line with Sen's confidence interval on the slope: (slope, intercept, low, high).

    The slope is the median of the pairwise slopes, the intercept the median of y − slope·x. Sen's
    interval takes the pairwise slopes ranked (N − C)/2 and (N + C)/2 with C = z·√Var(Kendall's S),
    Var = n(n−1)(2n+5)/18. Pairs with equal x carry no slope and are skipped. None without any pair.
    """
    n = x.size
    i, j = np.triu_indices(n, k=1)
    dx = x[j] - x[i]
    valid = dx != 0
    if not valid.any():
        return None
    slopes = np.sort((y[j] - y[i])[valid] / dx[valid])
    count = slopes.size
    slope = float(np.median(slopes))
    intercept = float(np.median(y - slope * x))
    z = _normal_quantile(0.5 + confidence / 2)
    c = z * math.sqrt(n * (n - 1) * (2 * n + 5) / 18.0)
    lo = int(max(0, math.floor((count - c) / 2)))
    hi = int(min(count - 1, math.ceil((count + c) / 2)))
    return slope, intercept, float(slopes[lo]), float(slopes[hi])


def _thin(kept: list[AggregatedInterval], most: int) -> list[AggregatedInterval]:
    if len(kept) <= most:
        return kept
    ordered = sorted(kept, key=lambda i: (i.time if i.time is not None else 0.0, i.key))
    picks = np.linspace(0, len(ordered) - 1, most).round().astype(int)
    return [ordered[k] for k in sorted({int(p) for p in picks})]


def _select(
    intervals: Sequence[AggregatedInterval],
    dropped: dict[str, int],
    excluded: Sequence[tuple[float, float]],
    params: DeviceModelParams,
) -> tuple[list[AggregatedInterval], str]:
    """The intervals the line is fitted to, and their latency resolution; counts the rest in *dropped*."""
    for why in ("storage_vmotion", "write_cache_transient", "large_io", "sequential", "ms_resolution"):
        dropped[why] = 0
    transient = _transients(intervals, params)
    candidates: list[AggregatedInterval] = []
    for interval in intervals:
        if _in_windows(interval.time, excluded, params.interval_s):
            dropped["storage_vmotion"] += 1
        elif interval.key in transient:
            dropped["write_cache_transient"] += 1
        # §4.1: IO size > 32 KB or sequentiality > 90 % bend the line; drop such intervals.
        elif interval.io_size_kb > params.max_io_size_kb:
            dropped["large_io"] += 1
        elif interval.seq_pct > params.max_seq_pct:
            dropped["sequential"] += 1
        else:
            candidates.append(interval)
    # One resolution per fit: whole-millisecond latencies mixed with microsecond ones would tilt it.
    in_us = [i for i in candidates if i.resolution == RESOLUTION_US]
    if len(in_us) >= params.min_points:
        dropped["ms_resolution"] = len(candidates) - len(in_us)
        return in_us, RESOLUTION_US
    all_us = bool(candidates) and len(in_us) == len(candidates)
    return candidates, RESOLUTION_US if all_us else RESOLUTION_MS


def fitted_intervals(
    samples: Sequence[DeviceSample],
    params: DeviceModelParams | None = None,
    *,
    excluded: Sequence[tuple[float, float]] = (),
) -> list[AggregatedInterval]:
    """The intervals :func:`fit_device_model` fits its line to (before thinning): the same filters
    (Storage vMotion windows, write-cache transients, large IOs, sequential, one latency resolution),
    for fits over the same intervals (the what-if's separated destaging)."""
    intervals, dropped = aggregate_intervals(samples)
    kept, _resolution = _select(intervals, dropped, excluded, params or DeviceModelParams())
    return kept


def _verdict(
    fit: DeviceFit, slope: float, intercept: float, median_latency: float, params: DeviceModelParams
) -> tuple[FitStatus, str]:
    """Whether a fitted line is credible: (OK, "") or the first reason it is not."""
    q10, q90 = fit.oio_range or (0.0, 0.0)
    spread = q90 - q10
    if spread < params.min_oio_range or spread < params.min_oio_spread * fit.median_oio:
        return FitStatus.NARROW_OIO_RANGE, f"OIO only ranges {q10:.3g}–{q90:.3g} (10th–90th percentile)"
    if slope <= 0:
        return FitStatus.NON_POSITIVE_SLOPE, f"latency does not rise with OIO (slope {slope:.3g} ms/IO)"
    # Allow for noise: an intercept within a tenth of the median latency below zero is kept.
    if intercept < -0.1 * median_latency:
        return FitStatus.NEGATIVE_INTERCEPT, f"negative intercept ({intercept:.3g} ms at no load)"
    low, high = fit.performance_low, fit.performance_high
    if low is None or high is None or high / low > params.max_ci_ratio:
        ci = _ci_text(low, high).strip() or "unbounded"
        return FitStatus.WIDE_INTERVAL, f"P {1 / slope:.3g} has confidence interval {ci}"
    return FitStatus.OK, ""


def fit_device_model(
    samples: Sequence[DeviceSample],
    params: DeviceModelParams | None = None,
    *,
    excluded: Sequence[tuple[float, float]] = (),
) -> DeviceFit:
    """Fit latency = a + slope·OIO robustly over the filtered intervals; P = 1 / slope (§4).

    *excluded* are time windows (seconds since the epoch) in which a Storage vMotion read or wrote
    the datastore; intervals overlapping them are left out. The result's ``source`` is "fit" when
    the fit is credible and "none" otherwise; :func:`settle_performance` adds carry-forward and priors.
    """
    params = params or DeviceModelParams()
    if not samples:
        return DeviceFit(FitStatus.NO_DATA, reason="no samples")
    intervals, dropped = aggregate_intervals(samples)
    kept, resolution = _select(intervals, dropped, excluded, params)
    total = len(intervals) + dropped["idle"]
    base = DeviceFit(FitStatus.NO_DATA, points_used=len(kept), intervals=total, dropped=dropped)
    if len(kept) < params.min_points:
        if not intervals and not dropped["idle"]:
            return replace(base, reason="no read samples")
        return replace(base, status=FitStatus.TOO_FEW_POINTS, reason=f"only {len(kept)} usable intervals")

    kept = _thin(kept, params.max_fit_points)
    x = np.array([i.oio for i in kept], dtype=np.float64)
    y = np.array([i.latency_ms for i in kept], dtype=np.float64)
    base = replace(base, points_used=len(kept), latency_resolution=resolution)
    line = theil_sen(x, y, params.confidence) if float(np.ptp(x)) > 0 else None
    if line is None:
        return replace(
            base, status=FitStatus.NO_OIO_SPREAD, reason=f"all {len(kept)} usable intervals have the same OIO"
        )
    slope, intercept, s_low, s_high = line
    residual = y - (intercept + slope * x)
    dy = y - y.mean()
    ss_tot = float(np.dot(dy, dy))
    q10, q50, q90 = (float(v) for v in np.percentile(x, [10, 50, 90]))
    fitted = replace(
        base,
        slope=slope,
        intercept=intercept,
        r_squared=1.0 - float(np.dot(residual, residual)) / ss_tot if ss_tot > 0 else 1.0,
        fitted_performance=1.0 / slope if slope > 0 else None,
        performance_low=1.0 / s_high if s_high > 0 else None,
        performance_high=1.0 / s_low if s_low > 0 else None,
        oio_range=(q10, q90),
        median_oio=q50,
    )
    status, reason = _verdict(fitted, slope, intercept, float(np.median(y)), params)
    if status is not FitStatus.OK:
        return replace(fitted, status=status, reason=reason)
    # BASIL §4: P is the inverse of the slope.
    return replace(fitted, status=FitStatus.OK, performance=1.0 / slope, credible=True, source=SOURCE_FIT)


# --- priors ------------------------------------------------------------------------------------------

#: P per device (spindle or flash device) of each kind, for a mixed, mostly random small-IO load.
#: From the lab's physics (lab/README.md "The physics, measured", Fig. 7 set-up: slopes 0.02 / 0.92 /
#: 1.18 / 2.02 ms per OIO on 7 devices) and its tiered scenario (benchmarks/bench_device_model.py:
#: 4 SSDs 69, 8 × FC 0.96 (RAID 5) and 2.2 (RAID 10), 12 × SATA 1.1), consistent with the drives'
#: data-sheet IOPS ratios (SATA 7.2k : SAS 10k : FC 15k ≈ 0.45 : 0.75 : 1). P moves with the IO mix
#: and RAID level by up to ×2 either way (flash most), hence the priors' wide intervals.
PER_DEVICE_P: Mapping[str, float] = {
    "ssd": 11.0,
    "fc15k": 0.18,
    "sas15k": 0.18,
    "sas10k": 0.13,
    "sata7k": 0.08,
    "nlsas7k": 0.08,
}
#: Relative uncertainty of a prior: P ×/÷ this factor is its interval.
PRIOR_FACTOR_KNOWN = 1.7  # kind and device count configured: confident enough to act on
PRIOR_FACTOR_KIND = 4.0  # kind only (device count unknown: 8 assumed): a stand-in, not a model
ASSUMED_DEVICES = 8


@dataclass(frozen=True, slots=True)
class DevicePrior:
    """What is known of a datastore's device before (or instead of) a fit."""

    performance: float
    performance_low: float
    performance_high: float
    confident: bool
    basis: str  # for people: "8 × fc15k", "vendor figure"


def device_prior(
    kind: str | None, devices: int | None = None, performance: float | None = None
) -> DevicePrior | None:
    """The prior P of a datastore from its configured device kind and count, or a vendor figure.

    A vendor (or operator) figure *performance* wins and is taken as confident within ×/÷ 1.7.
    """
    if performance is not None and performance > 0:
        f = PRIOR_FACTOR_KNOWN
        return DevicePrior(performance, performance / f, performance * f, True, "configured P")
    if kind is None or kind not in PER_DEVICE_P:
        return None
    if devices is not None and devices > 0:
        p, f, basis = PER_DEVICE_P[kind] * devices, PRIOR_FACTOR_KNOWN, f"{devices} × {kind}"
        return DevicePrior(p, p / f, p * f, p * f / (p / f) <= DeviceModelParams().max_ci_ratio, basis)
    p, f = PER_DEVICE_P[kind] * ASSUMED_DEVICES, PRIOR_FACTOR_KIND
    return DevicePrior(p, p / f, p * f, False, f"{kind}, device count unknown")


def _step(fit: DeviceFit, previous: float, params: DeviceModelParams) -> DeviceFit:
    """A credible fit's P moved from *previous* by at most ``max_step`` (halfway when they agree)."""
    assert fit.performance is not None
    new = fit.performance
    agrees = (fit.performance_low or 0.0) <= previous <= (fit.performance_high or math.inf)
    target = math.sqrt(previous * new) if agrees else new
    bound = 1.0 + params.max_step
    settled = min(max(target, previous / bound), previous * bound)
    if settled == new:
        return fit
    why = (
        f"fit gave {new:.3g}, within its interval of the previous {previous:.3g}: moved halfway"
        if agrees
        else f"fit gave {new:.3g}: moved at most ×{bound:g} from the previous {previous:.3g}"
    )
    ratio = settled / new
    return replace(
        fit,
        performance=settled,
        performance_low=(fit.performance_low or settled) * ratio,
        performance_high=fit.performance_high * ratio if fit.performance_high is not None else None,
        reason=why,
    )


def settle_performance(
    fit: DeviceFit,
    previous: DeviceFit | None = None,
    prior: DevicePrior | None = None,
    params: DeviceModelParams | None = None,
) -> DeviceFit:
    """The P to use after this window's *fit*, given the *previous* settled model and a *prior*.

    - A credible fit with a previous measured P (fit or carried): P moves towards the new fit, by at
      most ``max_step`` (×/÷ 1.5 by default), and only halfway when the previous P lies inside the
      new fit's confidence interval (the data do not contradict it). Fits that scatter within their
      own uncertainty so leave P nearly still; a real change is followed within a few fits.
    - A credible fit otherwise: its P.
    - No credible fit: the previous measured P is carried forward (``source`` "carried"); failing
      that a confident prior (``source`` "prior"); failing that no P, and a prior that is not
      confident is named in ``reason`` (a caller may still use it as a stand-in).
    """
    params = params or DeviceModelParams()
    before = previous.performance if previous is not None else None
    measured = before is not None and previous is not None and previous.source in (SOURCE_FIT, SOURCE_CARRIED)
    if fit.credible and fit.performance is not None:
        return _step(fit, before, params) if measured and before is not None else fit
    why = fit.reason or fit.status.value
    if measured and previous is not None:
        return replace(
            fit,
            performance=before,
            performance_low=previous.performance_low,
            performance_high=previous.performance_high,
            source=SOURCE_CARRIED,
            reason=f"this window's fit not used ({why}); previous P carried",
        )
    if prior is not None and prior.confident:
        return replace(
            fit,
            performance=prior.performance,
            performance_low=prior.performance_low,
            performance_high=prior.performance_high,
            source=SOURCE_PRIOR,
            reason=f"prior from {prior.basis} (fit: {why})",
        )
    if prior is not None:
        return replace(
            fit,
            reason=f"{why}; prior {prior.performance:.3g} from {prior.basis} not confident enough to act on",
        )
    return fit
