"""Calibration of the workload model's constants from a grid of measured latencies (BASIL §3, eq. 1–3).

K1–K4 come from the paper's pairwise-ratio method: for every pair of grid points that differ in one
parameter only, eq. 3 gives a value of that parameter's constant, and the median over all pairs is
taken so a few extreme pairs do not bias it. K5 is then the median ratio of eq. 1's numerator to the
measured latency. The relative error of predicted against measured latency per grid point is the
paper's Figure 3, summarised with and without the 100 % sequential points.

Why the ≈100 % sequential points are left out of K1–K5. The paper found eq. 1 over-predicts their
latency by a large factor (§3, Figures 2(d), 3, 4(d): "a big drop in latency as we go from 25 %
random to 0 % random"). Kept in, they bias exactly the constants the paper says they should not:
every random % pair with one sequential end gives a K4 far below the true one, and in the paper's
750-point grid those are 4 of the 10 pairs per group, enough to move the median (the bundled grid,
made with K4 = 0.8, K5 = 40 and sequential latencies × 0.45, gave K4 = 0.50); K5, a least-squares
slope dominated by the largest latencies, then inherits the bias (32.5). So the constants are
derived from the points eq. 1 is meant for, as in the paper's Figure 3(b), and the sequential
points get their own figure instead: ``sequential_factor``, the median of measured over predicted
latency among them, which says how much cheaper a sequential stream is than eq. 1 has it. K5 is a
median of ratios rather than a least-squares slope because the grid's errors are relative
(multiplicative); a median in that space is unbiased by the few largest latencies.
"""

from __future__ import annotations

import itertools
import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from basil.core.workload_model import WorkloadConstants, load_metric_array, number_problems
from basil.errors import Problem, raise_if_problems

PARAMETERS = ("oio", "io_size_kb", "read_pct", "random_pct")

# Random % at or below this marks a ≈100 % sequential grid point (as the workload model's flag does).
SEQUENTIAL_RANDOM_PCT = 5.0

# Relative-error buckets of the summary histogram (fractions, not %), as in Figure 3's y axis.
ERROR_BUCKETS = (-math.inf, -0.5, -0.25, -0.1, 0.1, 0.25, 0.5, math.inf)


@dataclass(frozen=True, slots=True)
class GridPoint:
    """One measured configuration: the four workload parameters and the average latency seen (ms)."""

    oio: float
    io_size_kb: float
    read_pct: float
    random_pct: float
    latency_ms: float

    def problems(self, path: str) -> list[Problem]:
        return [
            *number_problems(self.oio, f"{path}.oio", minimum=0),
            *number_problems(self.io_size_kb, f"{path}.io_size_kb", minimum=0),
            *number_problems(self.read_pct, f"{path}.read_pct", minimum=0, maximum=100),
            *number_problems(self.random_pct, f"{path}.random_pct", minimum=0, maximum=100),
            *number_problems(self.latency_ms, f"{path}.latency_ms", minimum=0, exclusive_minimum=True),
        ]

    def value(self, parameter: str) -> float:
        """The parameter on eq. 1's scale: read % and random % enter as fractions."""
        raw = float(getattr(self, parameter))
        return raw / 100.0 if parameter in ("read_pct", "random_pct") else raw


@dataclass(frozen=True, slots=True)
class ErrorSummary:
    """Distribution of relative errors (predicted − measured) / measured over a set of grid points."""

    points: int
    mean_abs: float
    median_abs: float
    p90_abs: float
    max_abs: float
    within_10pct: float  # share of points with |error| ≤ 10 %
    within_25pct: float
    histogram: tuple[tuple[str, int], ...]  # (bucket label, count) over ERROR_BUCKETS


@dataclass(frozen=True, slots=True)
class Calibration:
    """K1–K4 (medians of eq. 3 over all pairs), K5 (median ratio) and the Figure 3 error report."""

    constants: WorkloadConstants
    k5: float
    pairs: tuple[int, int, int, int]  # pairs that produced each of K1..K4
    relative_errors: tuple[float, ...]  # per grid point, in input order
    summary: ErrorSummary
    summary_without_sequential: ErrorSummary
    sequential_points: int
    # Median of measured / eq. 1-predicted latency over the ≈100 % sequential points (NaN: none).
    sequential_factor: float = math.nan


def pairwise_constant(points: Sequence[GridPoint], parameter: str) -> tuple[float, int]:
    """Median over all valid pairs of eq. 3 for *parameter*; returns (constant, pairs used).

    Two points pair up when the three other parameters are identical. For ratio r = L1/L2 of their
    latencies, eq. 2 L1/L2 = (K + x1)/(K + x2) solves to K = (x1 − x2·r)/(r − 1) (eq. 3). Pairs with
    r = 1 carry no information about K and are skipped.
    """
    others = [p for p in PARAMETERS if p != parameter]
    groups: dict[tuple[float, ...], list[GridPoint]] = defaultdict(list)
    for point in points:
        groups[tuple(float(getattr(point, o)) for o in others)].append(point)
    values: list[float] = []
    for key in sorted(groups):
        for a, b in itertools.combinations(groups[key], 2):
            x1, x2 = a.value(parameter), b.value(parameter)
            if x1 == x2:
                continue
            r = a.latency_ms / b.latency_ms
            if r == 1.0:
                continue
            k = (x1 - x2 * r) / (r - 1.0)  # BASIL eq. 3
            if math.isfinite(k):
                values.append(k)
    if not values:
        return math.nan, 0
    return float(np.median(values)), len(values)


def relative_errors(points: Sequence[GridPoint], constants: WorkloadConstants, k5: float) -> np.ndarray:
    """(predicted − measured) / measured per point, predicted = eq. 1 with the given constants."""
    numerator = load_metric_array(
        [p.oio for p in points],
        [p.io_size_kb for p in points],
        [p.read_pct for p in points],
        [p.random_pct for p in points],
        constants,
    )
    measured = np.array([p.latency_ms for p in points], dtype=np.float64)
    errors: np.ndarray = (numerator / k5 - measured) / measured
    return errors


def summarize_errors(errors: Sequence[float] | np.ndarray) -> ErrorSummary:
    """Summary and histogram of relative errors, the numbers behind the paper's Figure 3."""
    e = np.asarray(errors, dtype=np.float64)
    labels = [_bucket_label(lo, hi) for lo, hi in itertools.pairwise(ERROR_BUCKETS)]
    if e.size == 0:
        return ErrorSummary(
            0, math.nan, math.nan, math.nan, math.nan, math.nan, math.nan, tuple((lb, 0) for lb in labels)
        )
    a = np.abs(e)
    counts = []
    for (lo, hi), label in zip(itertools.pairwise(ERROR_BUCKETS), labels, strict=True):
        # The central bucket is closed on both sides so an exact ±10 % counts as "within 10 %".
        if lo == -0.1:
            n = int(np.count_nonzero((e >= lo) & (e <= hi)))
        elif hi <= -0.1:
            n = int(np.count_nonzero((e >= lo) & (e < hi)))
        else:
            n = int(np.count_nonzero((e > lo) & (e <= hi)))
        counts.append((label, n))
    return ErrorSummary(
        points=int(e.size),
        mean_abs=float(a.mean()),
        median_abs=float(np.median(a)),
        p90_abs=float(np.percentile(a, 90)),
        max_abs=float(a.max()),
        within_10pct=float(np.count_nonzero(a <= 0.1) / e.size),
        within_25pct=float(np.count_nonzero(a <= 0.25) / e.size),
        histogram=tuple(counts),
    )


def _bucket_label(lo: float, hi: float) -> str:
    if math.isinf(lo):
        return f"< {hi:+.0%}"
    if math.isinf(hi):
        return f"> {lo:+.0%}"
    return f"{lo:+.0%} … {hi:+.0%}"


def is_sequential(point: GridPoint, sequential_random_pct: float = SEQUENTIAL_RANDOM_PCT) -> bool:
    """Whether a grid point is one of the ≈100 % sequential configurations eq. 1 models poorly (§3)."""
    return point.random_pct <= sequential_random_pct


def calibrate(
    points: Sequence[GridPoint], path: str = "grid", *, sequential_random_pct: float = SEQUENTIAL_RANDOM_PCT
) -> Calibration:
    """Derive K1–K5 from a measured grid and report the model's relative error (BASIL §3, Figure 3).

    The constants are derived from the points whose random % is above *sequential_random_pct*
    (all points when there are no others); see the module docstring for why.
    Raises :class:`ValidationError` naming every bad grid point, or the constants no pair could give.
    """
    problems = [p for i, point in enumerate(points) for p in point.problems(f"{path}[{i}]")]
    if not points:
        problems.append(Problem(path, "the grid has no points"))
    problems += number_problems(sequential_random_pct, "sequential_random_pct", minimum=0, maximum=100)
    raise_if_problems(problems, "calibration grid")

    sequential = np.array([is_sequential(p, sequential_random_pct) for p in points], dtype=bool)
    fitted = [p for p, seq in zip(points, sequential, strict=True) if not seq] or list(points)
    ks: list[float] = []
    pairs: list[int] = []
    for index, parameter in enumerate(PARAMETERS, start=1):
        k, n = pairwise_constant(fitted, parameter)
        if n == 0:
            problems.append(
                Problem(
                    path, f"no two points differ in {parameter} alone, so K{index} cannot be derived (eq. 3)"
                )
            )
        ks.append(k)
        pairs.append(n)
    raise_if_problems(problems, "calibration grid")
    constants = WorkloadConstants(ks[0], ks[1], ks[2], ks[3])

    # K5: latency = numerator / K5 (eq. 1), so each point gives K5 = numerator / latency; the median
    # of those ratios is robust to relative noise and to the odd outlier.
    numerator = _numerator(fitted, constants)
    measured = np.array([p.latency_ms for p in fitted], dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = numerator / measured
    ratios = ratios[np.isfinite(ratios) & (ratios > 0)]
    k5 = float(np.median(ratios)) if ratios.size else math.nan
    if not (math.isfinite(k5) and k5 > 0):
        raise_if_problems(
            [
                Problem(
                    path,
                    f"K5 could not be derived (median ratio {k5:g}): the constants {constants} do not fit",
                )
            ],
            "calibration grid",
        )

    errors = relative_errors(points, constants, k5)
    factor = math.nan
    if sequential.any():
        # measured / predicted = 1 / (1 + relative error)
        factor = float(np.median(1.0 / (1.0 + errors[sequential])))
    return Calibration(
        constants=constants,
        k5=k5,
        pairs=(pairs[0], pairs[1], pairs[2], pairs[3]),
        relative_errors=tuple(float(x) for x in errors),
        summary=summarize_errors(errors),
        summary_without_sequential=summarize_errors(errors[~sequential]),
        sequential_points=int(np.count_nonzero(sequential)),
        sequential_factor=factor,
    )


def _numerator(points: Sequence[GridPoint], constants: WorkloadConstants) -> np.ndarray:
    return load_metric_array(
        [p.oio for p in points],
        [p.io_size_kb for p in points],
        [p.read_pct for p in points],
        [p.random_pct for p in points],
        constants,
    )


GRID_COLUMNS = ("oio", "io_size_kb", "read_pct", "random_pct", "latency_ms")


def grid_from_rows(rows: Sequence[object], path: str = "grid") -> list[GridPoint]:
    """Grid points from decoded rows (CSV records or JSON objects); every bad field is reported.

    Each row needs exactly the columns of :data:`GRID_COLUMNS`; numbers may be given as strings
    (as CSV gives them). Unknown columns are errors, so a misspelt column is never silently dropped.
    """
    problems: list[Problem] = []
    points: list[GridPoint] = []
    for i, row in enumerate(rows):
        at = f"{path}[{i}]"
        if not isinstance(row, Mapping):
            problems.append(Problem(at, "must be an object with " + ", ".join(GRID_COLUMNS)))
            continue
        values: dict[str, float] = {}
        for column in GRID_COLUMNS:
            if column not in row or row[column] in (None, ""):
                problems.append(Problem(f"{at}.{column}", "missing required field"))
                continue
            value = row[column]
            try:
                if isinstance(value, bool) or not isinstance(value, int | float | str):
                    raise ValueError
                values[column] = float(value)
            except ValueError:
                problems.append(Problem(f"{at}.{column}", f"must be a number, got {value!r}"))
        for column in row:
            if column not in GRID_COLUMNS:
                problems.append(
                    Problem(f"{at}.{column}", f"unknown field (allowed: {', '.join(GRID_COLUMNS)})")
                )
        if len(values) == len(GRID_COLUMNS):
            point = GridPoint(**values)
            problems += point.problems(at)
            points.append(point)
    if not rows:
        problems.append(Problem(path, "the grid has no points"))
    raise_if_problems(problems, "calibration grid")
    return points
