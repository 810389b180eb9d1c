"""Capacity for a response-time target by workload shaping (Lu's thesis, §3.1–3.3 and §4.2, §4.5).

A client's IO stream is served by a FIFO server of capacity C IOs/s: every request takes 1/C s and a
request meets the bound δ when it completes within δ of its arrival. RTT (Algorithm 1) splits the
stream online into a primary class that all meets δ at C and an overflow class; for a given C and δ
it keeps the largest set of requests any partitioning could keep (§3.3.1). A binary search on C
then finds the smallest capacity at which a fraction f of the requests meet δ (Table 4.1). Miser
(Algorithm 2) serves both classes on one server of C + ΔC, giving the overflow the primary class's
slack. The capacity of several clients together is estimated as the sum of their shaped capacities
(§3.2.1, §4.5).

The simulations are exact (event by event, no time step). "Meets δ" means a response time of at
most δ + 1 ns, so that float rounding never decides a tie. RTT runs vectorised (numpy) both where nothing
is late and inside busy periods with drops, so a pass over 10 million requests is a few numpy
passes, not a Python loop.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from basil.errors import Problem, raise_if_problems

FloatArray = NDArray[np.float64]
BoolArray = NDArray[np.bool_]

# A response time within δ + TIME_TOLERANCE_S meets δ: float rounding must not decide ties.
TIME_TOLERANCE_S = 1e-9
# The thesis found ΔC = Cmin / 6 enough for Miser to serve the overflow well (§3.2.1).
DEFAULT_EXTRA_CAPACITY = 1.0 / 6.0
DEFAULT_REL_TOL = 1e-3
# Fractions on the plot-ready curve, beside the requested one (Table 4.1's columns and a knee).
CURVE_FRACTIONS = (0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.95, 0.98, 0.99, 0.995, 0.999, 1.0)

_WINDOW_MIN = 1024
# Long traces aim the capacity search with a sample of blocks: 1 block of 65,536 requests in 8.
_SAMPLE_BLOCK = 1 << 16
_SAMPLE_EVERY = 8
_GUESS_MARGIN = 0.03
_WINDOW_MAX = 1 << 16
_BISECT_ABOVE = 1.25  # the capacity search bisects while hi / lo exceeds this, then interpolates


@dataclass(frozen=True)
class CapacityParams:
    """The question asked of a trace: capacity for ``fraction`` of the requests within ``bound_ms``.

    ``extra_capacity`` is ΔC as a fraction of Cmin for Miser; ``rel_tol`` the binary search's
    relative precision ε: at the capacity returned at least ``fraction`` meet the bound, at
    capacity × (1 − ε) fewer do.
    """

    fraction: float
    bound_ms: float
    extra_capacity: float = DEFAULT_EXTRA_CAPACITY
    rel_tol: float = DEFAULT_REL_TOL

    def problems(self) -> list[Problem]:
        found: list[Problem] = []

        def finite(name: str, value: object) -> bool:
            if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
                found.append(Problem(name, f"must be a finite number, not {value!r}"))
                return False
            return True

        if finite("fraction", self.fraction) and not 0 < self.fraction <= 1:
            found.append(Problem("fraction", f"must lie in (0, 1], got {self.fraction:g}"))
        if finite("bound_ms", self.bound_ms) and self.bound_ms <= 0:
            found.append(Problem("bound_ms", f"must be positive (milliseconds), got {self.bound_ms:g}"))
        if finite("extra_capacity", self.extra_capacity) and self.extra_capacity < 0:
            found.append(Problem("extra_capacity", f"must not be negative, got {self.extra_capacity:g}"))
        if finite("rel_tol", self.rel_tol) and not 0 < self.rel_tol < 0.5:
            found.append(Problem("rel_tol", f"must lie in (0, 0.5), got {self.rel_tol:g}"))
        return found

    def validate(self) -> None:
        raise_if_problems(self.problems(), "capacity question")

    @property
    def bound_s(self) -> float:
        return self.bound_ms / 1000.0


def check_arrivals(arrivals: FloatArray, name: str = "trace") -> None:
    """Raise a ValidationError unless *arrivals* is a non-empty, finite, non-decreasing float array."""
    problems: list[Problem] = []
    if arrivals.ndim != 1 or arrivals.size == 0:
        problems.append(Problem(name, "has no requests"))
    elif not np.all(np.isfinite(arrivals)):
        problems.append(Problem(name, "has arrival times that are not finite numbers"))
    elif arrivals.size > 1 and bool(np.any(np.diff(arrivals) < 0)):
        problems.append(Problem(name, "arrival times must be in non-decreasing order"))
    raise_if_problems(problems, "trace")


# --- the FIFO server and RTT (Algorithm 1) --------------------------------------------------------


def fifo_responses(arrivals: FloatArray, capacity: float) -> FloatArray:
    """Response times of every request on a FIFO server of *capacity* IOs/s, no request dropped.

    Lindley's recursion in closed form: the k-th completion is max over j ≤ k of a_j + (k − j + 1)/C.
    """
    s = 1.0 / capacity
    steps = np.arange(1, arrivals.size + 1, dtype=np.float64) * s
    finish = np.maximum.accumulate(arrivals - (steps - s)) + steps
    return finish - arrivals


def _rtt(arrivals: FloatArray, capacity: float, bound_s: float, dropped: list[FloatArray] | None) -> int:
    """Number of requests RTT admits to the primary class at *capacity*; collects dropped indices.

    Exact and vectorised, window by window. Inside a busy period of the primary queue that starts
    at arrival k0 with the queue finishing at F0, request k is admitted iff D_{k-1} ≥ x_k, where
    x_k = (k − k0) − C·(a_k + δ − 1/C − F0) and D counts the drops since k0; as x grows by at most
    one a request, D_k = max(0, max_{j≤k} ⌈x_j⌉), a running maximum (Lemma 2's bound, attained).
    Busy periods are taken from the same stream served without drops (dropping never lengthens one,
    so each of its idle instants is idle for RTT too); where RTT's queue empties inside such a
    period, the window stops there and the next one starts from that idle instant.
    """
    n = int(arrivals.size)
    s = 1.0 / capacity
    limit = bound_s + TIME_TOLERANCE_S
    if s > limit:  # even an idle server is too slow for one request
        if dropped is not None:
            dropped.append(np.arange(n, dtype=np.float64))
        return 0
    # Admit iff the primary queue's work ahead plus this request ends within δ (Algorithm 1 with the
    # queue length C·δ counted in work rather than whole requests): F ≤ a + δ − 1/C.
    tau = limit - s
    grid = _Grid(capacity, tau)
    finish_at = -math.inf
    admitted = 0
    i = 0
    window = _WINDOW_MIN
    while i < n:
        m = min(n - i, window)
        end, rises, finish_at = grid.step(arrivals[i : i + m], finish_at)
        lost = int(np.count_nonzero(rises))
        admitted += end - lost
        if dropped is not None and lost:
            dropped.append((np.flatnonzero(rises) + i).astype(np.float64))
        i += end
        # Windows adapt to the stretch last settled, so little work is thrown away.
        window = min(window * 4 if end == m else max(_WINDOW_MIN, 2 * end), _WINDOW_MAX)
    return admitted


class _Grid:
    """RTT's window step at one capacity, with the index grids it reuses."""

    def __init__(self, capacity: float, tau: float) -> None:
        self.capacity = capacity
        self.s = 1.0 / capacity
        self.tau = tau
        self.counts = np.arange(_WINDOW_MAX, dtype=np.float64)
        self.int_counts = np.arange(_WINDOW_MAX, dtype=np.int64)
        self.steps = (self.counts + 1.0) * self.s

    def step(self, seg: FloatArray, finish_at: float) -> tuple[int, BoolArray, float]:
        """RTT over *seg* from the queue finishing at *finish_at*: (requests settled, drops, finish)."""
        m = int(seg.size)
        s = self.s
        # 1. Busy periods of the stream served without drops (Lindley's recursion in closed form).
        ranks = self.steps[:m]
        nodrop = np.maximum.accumulate(seg - (ranks - s))
        np.maximum(nodrop, finish_at, out=nodrop)
        nodrop += ranks
        starts = np.empty(m, dtype=np.bool_)
        starts[0] = True
        np.greater(seg[1:], nodrop[:-1], out=starts[1:])
        # 2. Drops within each period by the running maximum, restarted at each period's start.
        start_at = np.maximum.accumulate(np.where(starts, self.int_counts[:m], 0))
        base = seg.copy()
        base[0] = max(float(seg[0]), finish_at)
        anchor = base[start_at]
        position = self.counts[:m] - start_at
        excess = np.ceil(position - self.capacity * (seg + self.tau - anchor))
        np.maximum(excess, 0.0, out=excess)
        offset = np.cumsum(starts).astype(np.float64) * float(_WINDOW_MAX + 2)
        drops = np.maximum.accumulate(excess + offset) - offset
        done = anchor + (position + 1.0 - drops) * s
        # 3. RTT's own queue may empty inside a no-drop busy period: stop at the first such arrival.
        inside = ~starts
        inside[1:] &= seg[1:] > done[:-1]
        end = int(np.argmax(inside))
        if not inside[end]:
            end = m
        rises = np.empty(end, dtype=np.bool_)
        rises[0] = drops[0] > 0
        np.greater(drops[1:end], drops[: end - 1], out=rises[1:])
        rises[1:] |= starts[1:end] & (drops[1:end] > 0)
        return end, rises, float(done[end - 1])


def rtt_admitted(arrivals: FloatArray, capacity: float, bound_s: float) -> int:
    """How many requests RTT keeps in the primary class at *capacity* IOs/s and bound *bound_s*."""
    return _rtt(arrivals, capacity, bound_s, None)


def rtt_decompose(arrivals: FloatArray, capacity: float, bound_s: float) -> BoolArray:
    """RTT's decomposition (Algorithm 1): True for requests of the primary class, False for overflow."""
    dropped: list[FloatArray] = []
    _rtt(arrivals, capacity, bound_s, dropped)
    primary = np.ones(arrivals.size, dtype=np.bool_)
    for chunk in dropped:
        primary[chunk.astype(np.int64)] = False
    return primary


# --- the capacity search (§3.2.1, Table 4.1) ----------------------------------------------------


def required_count(fraction: float, n: int) -> int:
    """Requests that must meet the bound for *fraction* of *n* (at least one; rounding error forgiven)."""
    return max(1, min(n, math.ceil(fraction * n - 1e-9 * n)))


@dataclass(frozen=True)
class CapacitySearch:
    """Smallest capacity (IOs/s, within ``rel_tol``) at which ``required`` requests meet the bound."""

    capacity: float
    admitted: int
    lower: float  # a capacity at which fewer than ``required`` meet the bound
    required: int
    passes: int


@dataclass
class _Bracket:
    """The capacity search's bracket: fewer than *need* requests meet the bound at ``lo``, at least
    *need* at ``hi``. While it is wide (or the count at ``lo`` unknown) a probe halves it
    geometrically; then probes are regula falsi on the admitted count (monotone in C),
    Illinois-weighted so a side kept twice does not stall it, each at least half a tolerance inside
    the bracket. Where ``hi`` keeps exactly *need* (at 100 % the count is capped) there is no slope
    and probes bisect; two interpolations that did not halve the bracket are followed by a
    bisection. Every probe is an exact RTT pass, so the answer is bisection's to within rel_tol."""

    lo: float
    hi: float
    got_lo: int | None
    got_hi: int
    need: int
    weight_lo: float = 1.0
    weight_hi: float = 1.0
    kept: int = 0  # +1 when lo moved last, -1 when hi did
    window: float = math.inf  # the width when the current run of interpolations began
    probes: int = 0  # interpolations in the current run

    def probe(self, rel_tol: float) -> float:
        lo, hi = self.lo, self.hi
        stalled = self.probes >= 2 and hi - lo > 0.5 * self.window
        # No slope to follow where hi keeps exactly the need (at 100 % the count is capped at n).
        flat = self.got_hi == self.need
        if self.got_lo is None or hi > _BISECT_ABOVE * lo or stalled or flat:
            self.probes = 0
            return math.sqrt(lo * hi)
        if self.probes == 0:
            self.window = hi - lo
        self.probes += 1
        below_need = (self.need - self.got_lo) * self.weight_lo
        above_need = (self.got_hi - self.need) * self.weight_hi
        mid = lo + (hi - lo) * below_need / max(below_need + above_need, 1e-12)
        margin = 0.5 * rel_tol * hi
        mid = min(max(mid, lo + margin), hi - margin)
        return mid if lo < mid < hi else (lo + hi) / 2.0

    def update(self, mid: float, got: int) -> None:
        if got >= self.need:
            self.hi, self.got_hi = mid, got
            self.weight_hi = 1.0
            self.weight_lo = self.weight_lo * 0.5 if self.kept == -1 else 1.0
            self.kept = -1
        else:
            self.lo, self.got_lo = mid, got
            self.weight_lo = 1.0
            self.weight_hi = self.weight_hi * 0.5 if self.kept == 1 else 1.0
            self.kept = 1
        if self.probes >= 2 and self.hi - self.lo <= 0.5 * self.window:
            self.probes = 0  # progress: a new run


def _search(
    arrivals: FloatArray, need: int, *, bound_s: float, rel_tol: float, lower: float, upper: float
) -> CapacitySearch:
    """Bracket the smallest capacity keeping *need* requests, then bisect (geometrically) to ``rel_tol``.

    The invariant: fewer than *need* meet the bound at ``lo``, at least *need* at ``hi``.
    """
    passes = 0
    n = int(arrivals.size)
    # A true lower bound: the requests kept are all served within [a_0, a_last + δ].
    floor = need / (float(arrivals[-1] - arrivals[0]) + bound_s)
    guess = 0.0
    if lower == 0.0 and upper == 0.0 and n >= 2 * _SAMPLE_BLOCK * _SAMPLE_EVERY:
        # A long trace: aim the bracket with the answer for a sample of its blocks (a guess only;
        # the bracket below is still checked on the whole trace).
        sample = _sample_blocks(arrivals, bound_s)
        found = _search(
            sample,
            required_count(need / n, int(sample.size)),
            bound_s=bound_s,
            rel_tol=1e-2,
            lower=0.0,
            upper=0.0,
        )
        guess = found.capacity
        upper = guess * (1.0 + _GUESS_MARGIN)
    lo = max(lower, floor * (1.0 - rel_tol))
    hi = max(upper, floor)
    got_lo: int | None = None  # admitted at lo, once a pass has measured it
    while True:
        got_hi = rtt_admitted(arrivals, hi, bound_s)
        passes += 1
        if got_hi >= need:
            break
        lo, got_lo = hi, got_hi
        hi *= 2.0
    below = guess * (1.0 - _GUESS_MARGIN)
    if lo < below < hi:
        got = rtt_admitted(arrivals, below, bound_s)
        passes += 1
        if got >= need:
            hi, got_hi = below, got
        else:
            lo, got_lo = below, got
    if hi <= floor:
        return CapacitySearch(
            capacity=hi, admitted=got_hi, lower=hi * (1.0 - rel_tol), required=need, passes=passes
        )
    bracket = _Bracket(lo, hi, got_lo, got_hi, need)
    while bracket.hi - bracket.lo > rel_tol * bracket.hi:
        mid = bracket.probe(rel_tol)
        bracket.update(mid, rtt_admitted(arrivals, mid, bound_s))
        passes += 1
    lo, hi, got_hi = bracket.lo, bracket.hi, bracket.got_hi
    return CapacitySearch(capacity=hi, admitted=got_hi, lower=lo, required=need, passes=passes)


def _sample_blocks(arrivals: FloatArray, bound_s: float) -> FloatArray:
    """Every ``_SAMPLE_EVERY``-th block of the trace, laid end to end with an idle gap between them."""
    blocks: list[FloatArray] = []
    offset = 0.0
    for start in range(0, int(arrivals.size), _SAMPLE_BLOCK * _SAMPLE_EVERY):
        block = arrivals[start : start + _SAMPLE_BLOCK]
        shifted = block - block[0] + offset
        blocks.append(shifted)
        offset = float(shifted[-1]) + 2.0 * bound_s + 1.0
    return np.concatenate(blocks)


def capacity_for_fraction(
    arrivals: FloatArray, fraction: float, bound_s: float, rel_tol: float = DEFAULT_REL_TOL
) -> CapacitySearch:
    """Binary search on C for the smallest capacity at which *fraction* of requests meet *bound_s*.

    Valid because RTT is optimal for each C and the best set at C stays feasible at any larger C.
    """
    CapacityParams(fraction=fraction, bound_ms=bound_s * 1000.0, rel_tol=rel_tol).validate()
    check_arrivals(arrivals)
    need = required_count(fraction, int(arrivals.size))
    return _search(arrivals, need, bound_s=bound_s, rel_tol=rel_tol, lower=0.0, upper=0.0)


@dataclass(frozen=True)
class CurvePoint:
    fraction: float
    capacity_iops: float


def capacity_curve(
    arrivals: FloatArray, fractions: Sequence[float], bound_s: float, rel_tol: float = DEFAULT_REL_TOL
) -> list[CurvePoint]:
    """Capacity against fraction (a plot-ready curve); each search starts from the last's bounds."""
    check_arrivals(arrivals)
    n = int(arrivals.size)
    points: list[CurvePoint] = []
    lower = upper = 0.0
    for fraction in sorted(set(fractions)):
        CapacityParams(fraction=fraction, bound_ms=bound_s * 1000.0, rel_tol=rel_tol).validate()
        found = _search(
            arrivals, required_count(fraction, n), bound_s=bound_s, rel_tol=rel_tol, lower=lower, upper=upper
        )
        lower, upper = found.lower, found.capacity
        points.append(CurvePoint(fraction=fraction, capacity_iops=found.capacity))
    return points


# --- Miser (Algorithm 2) ------------------------------------------------------------------------


def miser_responses(arrivals: FloatArray, primary: BoolArray, capacity: float, bound_s: float) -> FloatArray:
    """Response times when one server of *capacity* IOs/s serves both RTT classes by Miser.

    The classes come from RTT at Cmin (the primary queue Q1 is the optimal set, decided online by
    Algorithm 1). When the server frees, it takes the head of the overflow queue Q2 if every
    pending Q1 request would still meet its deadline after one more service (the minimum slack is
    at least one service, Algorithm 2), else the head of Q1; it never idles with work queued.
    Slack is kept in time (deadline a + δ) rather than in queue places, which is the same rule for
    whole requests and exact between them.
    """
    n = int(arrivals.size)
    s = 1.0 / capacity
    responses = np.empty(n, dtype=np.float64)
    times = arrivals.tolist()
    kinds = primary.tolist()
    q1: deque[int] = deque()
    q2: deque[int] = deque()
    # Q1 request number k (1-based) with deadline d has slack d − t − (k − served)·s; the monotone
    # deque keeps the minimum of d − k·s over the pending ones.
    mins: deque[tuple[float, int]] = deque()
    admitted1 = 0
    served1 = 0
    t = -math.inf
    i = 0
    tol = TIME_TOLERANCE_S
    while i < n or q1 or q2:
        if not q1 and not q2 and times[i] > t:
            t = times[i]
        while i < n and times[i] <= t:
            if kinds[i]:
                admitted1 += 1
                key = times[i] + bound_s - admitted1 * s
                while mins and mins[-1][0] >= key:
                    mins.pop()
                mins.append((key, admitted1))
                q1.append(i)
            else:
                q2.append(i)
            i += 1
        if q1 and (not q2 or mins[0][0] - t + served1 * s < s - tol):
            idx = q1.popleft()
            served1 += 1
            if mins[0][1] == served1:
                mins.popleft()
        else:
            idx = q2.popleft()
        t += s
        responses[idx] = t - times[idx]
    return responses


@dataclass(frozen=True)
class ResponseSummary:
    """Response times of a class of requests, in milliseconds."""

    count: int
    within_bound: float  # fraction of the class within δ
    mean_ms: float
    p50_ms: float
    p90_ms: float
    p99_ms: float
    max_ms: float

    @classmethod
    def of(cls, responses: FloatArray, bound_s: float) -> ResponseSummary:
        if responses.size == 0:
            return cls(0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0)
        ms = responses * 1000.0
        p50, p90, p99 = (float(v) for v in np.percentile(ms, [50, 90, 99]))
        within = float(np.count_nonzero(responses <= bound_s + TIME_TOLERANCE_S)) / responses.size
        return cls(int(responses.size), within, float(ms.mean()), p50, p90, p99, float(ms.max()))

    def to_dict(self) -> dict[str, float | int]:
        return {
            "count": self.count,
            "within_bound": self.within_bound,
            "mean_ms": self.mean_ms,
            "p50_ms": self.p50_ms,
            "p90_ms": self.p90_ms,
            "p99_ms": self.p99_ms,
            "max_ms": self.max_ms,
        }


# --- the answer to one capacity question ----------------------------------------------------------


@dataclass(frozen=True)
class CapacityReport:
    """Capacity for a fraction within a bound, the 100 % capacity, the overflow and its fate under Miser."""

    params: CapacityParams
    requests: int
    duration_s: float
    capacity_iops: float  # Cmin for ``fraction``
    capacity_full_iops: float  # Cmin for 100 %
    primary: int
    overflow_fraction: float
    miser_capacity_iops: float  # Cmin + ΔC
    miser_primary: ResponseSummary
    miser_overflow: ResponseSummary
    fcfs_all: ResponseSummary  # the whole stream FCFS at Cmin + ΔC, for comparison
    curve: list[CurvePoint] = field(default_factory=list)

    @property
    def mean_iops(self) -> float:
        return self.requests / self.duration_s if self.duration_s > 0 else math.inf

    def to_dict(self) -> dict[str, object]:
        return {
            "fraction": self.params.fraction,
            "bound_ms": self.params.bound_ms,
            "requests": self.requests,
            "duration_s": self.duration_s,
            "mean_iops": self.mean_iops if math.isfinite(self.mean_iops) else None,
            "capacity_iops": self.capacity_iops,
            "capacity_full_iops": self.capacity_full_iops,
            "primary_requests": self.primary,
            "overflow_fraction": self.overflow_fraction,
            "rel_tol": self.params.rel_tol,
            "miser": {
                "extra_capacity": self.params.extra_capacity,
                "capacity_iops": self.miser_capacity_iops,
                "primary": self.miser_primary.to_dict(),
                "overflow": self.miser_overflow.to_dict(),
            },
            "fcfs": self.fcfs_all.to_dict(),
            "curve": [{"fraction": p.fraction, "capacity_iops": p.capacity_iops} for p in self.curve],
        }


def plan_capacity(
    arrivals: FloatArray, params: CapacityParams, curve_fractions: Sequence[float] = CURVE_FRACTIONS
) -> CapacityReport:
    """Answer a capacity question: Cmin(f), Cmin(100 %), the RTT split and Miser at Cmin·(1 + ΔC)."""
    params.validate()
    check_arrivals(arrivals)
    bound_s = params.bound_s
    fractions = sorted({*curve_fractions, params.fraction, 1.0})
    curve = capacity_curve(arrivals, fractions, bound_s, params.rel_tol)
    by_fraction = {p.fraction: p.capacity_iops for p in curve}
    cmin = by_fraction[params.fraction]
    primary = rtt_decompose(arrivals, cmin, bound_s)
    kept = int(np.count_nonzero(primary))
    total = cmin * (1.0 + params.extra_capacity)
    responses = miser_responses(arrivals, primary, total, bound_s)
    return CapacityReport(
        params=params,
        requests=int(arrivals.size),
        duration_s=float(arrivals[-1] - arrivals[0]),
        capacity_iops=cmin,
        capacity_full_iops=by_fraction[1.0],
        primary=kept,
        overflow_fraction=1.0 - kept / arrivals.size,
        miser_capacity_iops=total,
        miser_primary=ResponseSummary.of(responses[primary], bound_s),
        miser_overflow=ResponseSummary.of(responses[~primary], bound_s),
        fcfs_all=ResponseSummary.of(fifo_responses(arrivals, total), bound_s),
        curve=[p for p in curve if p.fraction in set(curve_fractions) or p.fraction == params.fraction],
    )


# --- several clients together (§3.2.1, §4.5) -------------------------------------------------------


@dataclass(frozen=True)
class MultiClientEstimate:
    """Capacity for clients multiplexed on one server: the sum of shaped capacities against the truth."""

    fraction: float
    bound_ms: float
    individual_iops: list[float]
    estimate_iops: float  # Σ Cmin_i(f): the thesis's estimate
    merged_iops: float  # Cmin(f) of the merged stream, found by simulation
    worst_case_sum_iops: float  # Σ Cmin_i(100 %): provisioning every client for its worst case

    @property
    def estimate_error(self) -> float:
        return (self.estimate_iops - self.merged_iops) / self.merged_iops

    def to_dict(self) -> dict[str, object]:
        return {
            "fraction": self.fraction,
            "bound_ms": self.bound_ms,
            "individual_iops": list(self.individual_iops),
            "estimate_iops": self.estimate_iops,
            "merged_iops": self.merged_iops,
            "estimate_error": self.estimate_error,
            "worst_case_sum_iops": self.worst_case_sum_iops,
        }


def merge_arrivals(traces: Sequence[FloatArray]) -> FloatArray:
    merged = np.concatenate(list(traces))
    merged.sort(kind="stable")
    return merged


def multi_client_capacity(
    traces: Sequence[FloatArray],
    fraction: float,
    bound_s: float,
    rel_tol: float = DEFAULT_REL_TOL,
    known: Sequence[tuple[float, float]] | None = None,
) -> MultiClientEstimate:
    """Estimate the capacity of several clients as the sum of their shaped capacities (§3.2.1).

    *known* may give each trace's (Cmin(fraction), Cmin(100 %)) when already found.
    """
    if not traces:
        raise_if_problems([Problem("traces", "needs at least one trace")], "capacity question")
    for k, arrivals in enumerate(traces):
        check_arrivals(arrivals, f"traces[{k}]")
    individual: list[float] = []
    worst = 0.0
    for k, arrivals in enumerate(traces):
        if known is not None:
            shaped, full = known[k]
        else:
            points = capacity_curve(arrivals, [fraction, 1.0], bound_s, rel_tol)
            shaped, full = points[0].capacity_iops, points[-1].capacity_iops
        individual.append(shaped)
        worst += full
    merged = capacity_for_fraction(merge_arrivals(traces), fraction, bound_s, rel_tol)
    return MultiClientEstimate(
        fraction=fraction,
        bound_ms=bound_s * 1000.0,
        individual_iops=individual,
        estimate_iops=float(sum(individual)),
        merged_iops=merged.capacity,
        worst_case_sum_iops=worst,
    )
