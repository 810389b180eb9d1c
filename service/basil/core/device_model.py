"""BASIL's device model (§4, §4.1, §6.1): a datastore's performance P = 1 / slope of latency against OIO.

Samples of several hosts on the same datastore and interval are first aggregated (OIO summed,
latency weighted by IOPS, §6.1). Only read figures are used and intervals with large IOs or highly
sequential IO are dropped, because cached writes, sequential streams and large transfers bend the
⟨OIO, latency⟩ line, sometimes to a negative slope (§4.1). Every way the fit can fail is an explicit
outcome; a datastore without a usable fit has no model and is treated as new (§6.3).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum

import numpy as np

from basil.core.workload_model import number_problems
from basil.errors import Problem

OP_READ = "read"
OP_WRITE = "write"


@dataclass(frozen=True, slots=True)
class DeviceSample:
    """One host's view of a datastore over one interval (vCenter's ``datastore.*`` read counters).

    ``oio`` is outstanding read IOs, ``latency_ms`` the average read latency, ``iops`` read IOs per
    second, ``io_size_kb`` the average IO size, ``seq_pct`` the share of sequential IO (0–100).
    ``time`` (seconds since the epoch) identifies the interval; samples of different hosts with the
    same time are aggregated. When no sample of a datastore has a time, the k-th sample of each host
    is taken to belong to interval k. ``op`` marks write-side samples, which the model ignores.
    """

    host: str
    oio: float
    latency_ms: float
    iops: float
    io_size_kb: float
    seq_pct: float
    time: float | None = None
    op: str = OP_READ

    def problems(self, path: str) -> list[Problem]:
        found = [
            *number_problems(self.oio, f"{path}.oio", minimum=0),
            *number_problems(self.latency_ms, f"{path}.latency_ms", minimum=0),
            *number_problems(self.iops, f"{path}.iops", minimum=0),
            *number_problems(self.io_size_kb, f"{path}.io_size_kb", minimum=0),
            *number_problems(self.seq_pct, f"{path}.seq_pct", minimum=0, maximum=100),
        ]
        if self.time is not None:
            found += number_problems(self.time, f"{path}.time")
        if self.op not in (OP_READ, OP_WRITE):
            found.append(Problem(f"{path}.op", f"must be 'read' or 'write', got {self.op!r}"))
        if not self.host:
            found.append(Problem(f"{path}.host", "must not be empty"))
        return found


@dataclass(frozen=True, slots=True)
class DeviceModelParams:
    """Filters and minimum data of the device model (§4.1 gives 32 KB and 90 %)."""

    max_io_size_kb: float = 32.0
    max_seq_pct: float = 90.0
    min_points: int = 5

    def validate(self, path: str = "device_model") -> list[Problem]:
        found = [
            *number_problems(
                self.max_io_size_kb, f"{path}.max_io_size_kb", minimum=0, exclusive_minimum=True
            ),
            *number_problems(self.max_seq_pct, f"{path}.max_seq_pct", minimum=0, maximum=100),
        ]
        if not isinstance(self.min_points, int) or isinstance(self.min_points, bool) or self.min_points < 2:
            found.append(
                Problem(f"{path}.min_points", f"must be an integer of at least 2, got {self.min_points!r}")
            )
        return found


class FitStatus(StrEnum):
    """Outcome of a device-model fit; only OK yields a performance P."""

    OK = "ok"
    NO_DATA = "no_data"  # no sample at all
    TOO_FEW_POINTS = "too_few_points"  # fewer than min_points intervals survive the filters
    NO_OIO_SPREAD = "no_oio_spread"  # every kept interval has the same OIO: no slope exists
    NON_POSITIVE_SLOPE = "non_positive_slope"  # latency does not grow with OIO (§4.1, Figure 8)


@dataclass(frozen=True, slots=True)
class AggregatedInterval:
    """All hosts' samples of one interval combined (§6.1): OIO summed, the rest IOPS-weighted."""

    key: str
    oio: float
    latency_ms: float
    iops: float
    io_size_kb: float
    seq_pct: float
    hosts: int


@dataclass(frozen=True, slots=True)
class DeviceFit:
    """Result of fitting one datastore: P (when OK), the line, its quality and what was dropped."""

    status: FitStatus
    performance: float | None = None  # P = 1 / slope, OIO per ms
    slope: float | None = None  # ms of latency per outstanding IO
    intercept: float | None = None
    r_squared: float | None = None
    points_used: int = 0
    intervals: int = 0
    dropped: dict[str, int] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.status is FitStatus.OK

    def describe(self) -> str:
        """One line for people: what was fitted, or why nothing could be."""
        drops = ", ".join(f"{n} {why}" for why, n in sorted(self.dropped.items()) if n)
        dropped = f"; dropped {drops}" if drops else ""
        if self.status is FitStatus.OK:
            return (
                f"P = {self.performance:.3g} from {self.points_used} intervals "
                f"(slope {self.slope:.3g} ms/IO, r² {self.r_squared:.2f}{dropped})"
            )
        if self.status is FitStatus.NO_DATA:
            why = "no samples"
        elif self.status is FitStatus.TOO_FEW_POINTS:
            why = f"only {self.points_used} usable intervals"
        elif self.status is FitStatus.NO_OIO_SPREAD:
            why = f"all {self.points_used} usable intervals have the same OIO"
        else:
            why = f"latency does not rise with OIO (slope {self.slope or 0.0:.3g} ms/IO)"
        return f"no device model: {why}{dropped}"


def aggregate_intervals(samples: Sequence[DeviceSample]) -> tuple[list[AggregatedInterval], dict[str, int]]:
    """Combine the read samples of all hosts per interval; returns the intervals and drop counts.

    Latency, IO size and sequentiality are weighted by each host's IOPS (§6.1). An interval in which
    no host did any IO has no meaningful latency and is dropped as idle.
    """
    dropped = {"writes": 0, "idle": 0}
    timed = any(s.time is not None for s in samples)
    by_interval: dict[str, list[DeviceSample]] = defaultdict(list)
    ordinal: dict[str, int] = defaultdict(int)
    for s in samples:
        if s.op != OP_READ:
            dropped["writes"] += 1
            continue
        if timed:
            key = repr(s.time)
        else:
            key = f"#{ordinal[s.host]}"
            ordinal[s.host] += 1
        by_interval[key].append(s)
    intervals: list[AggregatedInterval] = []
    for key, group in by_interval.items():
        iops = sum(s.iops for s in group)
        if iops <= 0:
            dropped["idle"] += 1
            continue
        intervals.append(
            AggregatedInterval(
                key=key,
                oio=sum(s.oio for s in group),
                latency_ms=sum(s.latency_ms * s.iops for s in group) / iops,
                iops=iops,
                io_size_kb=sum(s.io_size_kb * s.iops for s in group) / iops,
                seq_pct=sum(s.seq_pct * s.iops for s in group) / iops,
                hosts=len({s.host for s in group}),
            )
        )
    return intervals, dropped


def fit_device_model(samples: Sequence[DeviceSample], params: DeviceModelParams | None = None) -> DeviceFit:
    """Fit latency = a + slope·OIO by least squares over the filtered intervals; P = 1 / slope (§4)."""
    params = params or DeviceModelParams()
    if not samples:
        return DeviceFit(FitStatus.NO_DATA)
    intervals, dropped = aggregate_intervals(samples)
    dropped["large_io"] = 0
    dropped["sequential"] = 0
    kept: list[AggregatedInterval] = []
    for interval in intervals:
        # §4.1: IO size > 32 KB or sequentiality > 90 % bend the line; drop such intervals.
        if interval.io_size_kb > params.max_io_size_kb:
            dropped["large_io"] += 1
        elif interval.seq_pct > params.max_seq_pct:
            dropped["sequential"] += 1
        else:
            kept.append(interval)
    total = len(intervals) + dropped["idle"]
    if len(kept) < params.min_points:
        status = FitStatus.NO_DATA if not intervals and not dropped["idle"] else FitStatus.TOO_FEW_POINTS
        return DeviceFit(status, points_used=len(kept), intervals=total, dropped=dropped)

    x = np.array([i.oio for i in kept], dtype=np.float64)
    y = np.array([i.latency_ms for i in kept], dtype=np.float64)
    dx = x - x.mean()
    sxx = float(np.dot(dx, dx))
    if sxx <= 0 or not math.isfinite(sxx):
        return DeviceFit(FitStatus.NO_OIO_SPREAD, points_used=len(kept), intervals=total, dropped=dropped)
    slope = float(np.dot(dx, y - y.mean())) / sxx
    intercept = float(y.mean() - slope * x.mean())
    residual = y - (intercept + slope * x)
    ss_res = float(np.dot(residual, residual))
    dy = y - y.mean()
    ss_tot = float(np.dot(dy, dy))
    r_squared = 1.0 - ss_res / ss_tot if ss_tot > 0 else 1.0
    if slope <= 0:
        return DeviceFit(
            FitStatus.NON_POSITIVE_SLOPE,
            slope=slope,
            intercept=intercept,
            r_squared=r_squared,
            points_used=len(kept),
            intervals=total,
            dropped=dropped,
        )
    return DeviceFit(
        FitStatus.OK,
        performance=1.0 / slope,  # BASIL §4: P is the inverse of the slope
        slope=slope,
        intercept=intercept,
        r_squared=r_squared,
        points_used=len(kept),
        intervals=total,
        dropped=dropped,
    )
