"""BASIL's workload model (§3, eq. 1): four workload parameters per virtual disk and the load metric L.

Per-disk samples of outstanding IOs, IO size, read % and random % are reduced to their 90th
percentiles over a window (§6.1: storage workloads are bursty, the mean under-states them), and
L = (K1 + OIO)(K2 + IOsize)(K3 + read%/100)(K4 + random%/100), the numerator of eq. 1, is the load a
workload puts on whatever device holds it. Workloads for which the paper found the linear model poor
(≈100 % sequential, ≈100 % writes) are flagged, not hidden.

Every disk also gets a class, the part of the paper's caveats a balancer can act on (§3, §5
"Discussion"): ``sequential`` (at most 25 % random at the 90th percentile, i.e. ≥ 75 % sequential,
the paper's "decision support" line), ``write_heavy`` (at most 30 % reads), ``bursty`` (90th
percentile OIO at least twice the median: eq. 1 on the 90th percentile over-states its steady
load), or ``random`` (what eq. 1 models well). A disk can have several of these traits; the class is
the first in that order. Sequential streams matter most: consolidated with random ones they lose
their locality (the lab's physics interleaves streams; the paper measured the throughput loss), so
their L, computed for the stream as it runs alone, holds only where it stays isolated, and a
balancer can keep them apart (``sequential`` per disk).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from basil.errors import Problem

# Flags for workloads where eq. 1 is known to predict latency poorly (§3, Figure 3 and 5).
FLAG_SEQUENTIAL = "mostly_sequential"
FLAG_WRITES = "mostly_writes"

CLASS_RANDOM = "random"
CLASS_SEQUENTIAL = "sequential"
CLASS_WRITE_HEAVY = "write_heavy"
CLASS_BURSTY = "bursty"
CLASS_UNKNOWN = "unknown"  # no workload parameters (a load given as a number)
CLASS_ORDER = (CLASS_SEQUENTIAL, CLASS_WRITE_HEAVY, CLASS_BURSTY)

FLAG_TEXT = {
    FLAG_SEQUENTIAL: "≈100 % sequential: the linear model over-predicts its latency (BASIL §3)",
    FLAG_WRITES: "≈100 % writes: cached writes make the linear model unreliable (BASIL §3)",
}


def _finite(value: float) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def number_problems(
    value: float,
    path: str,
    *,
    minimum: float | None = None,
    maximum: float | None = None,
    exclusive_minimum: bool = False,
) -> list[Problem]:
    """Problems with one number: not finite, or outside [minimum, maximum] (minimum exclusive if asked)."""
    if not _finite(value):
        return [Problem(path, f"must be a finite number, got {value!r}")]
    if minimum is not None:
        if exclusive_minimum and value <= minimum:
            return [Problem(path, f"must be greater than {minimum:g}, got {value:g}")]
        if not exclusive_minimum and value < minimum:
            return [Problem(path, f"must be at least {minimum:g}, got {value:g}")]
    if maximum is not None and value > maximum:
        return [Problem(path, f"must be at most {maximum:g}, got {value:g}")]
    return []


@dataclass(frozen=True, slots=True)
class WorkloadParams:
    """The four workload parameters of §3: outstanding IOs, IO size (KB), read % and random % (0–100)."""

    oio: float
    io_size_kb: float
    read_pct: float
    random_pct: float

    def problems(self, path: str) -> list[Problem]:
        return [
            *number_problems(self.oio, f"{path}.oio", minimum=0),
            *number_problems(self.io_size_kb, f"{path}.io_size_kb", minimum=0),
            *number_problems(self.read_pct, f"{path}.read_pct", minimum=0, maximum=100),
            *number_problems(self.random_pct, f"{path}.random_pct", minimum=0, maximum=100),
        ]

    def as_list(self) -> list[float]:
        return [self.oio, self.io_size_kb, self.read_pct, self.random_pct]


@dataclass(frozen=True, slots=True)
class WorkloadSample:
    """One observation of a virtual disk's workload; ``time`` is seconds since the epoch, if known."""

    oio: float
    io_size_kb: float
    read_pct: float
    random_pct: float
    time: float | None = None
    read_oio: float | None = None  # outstanding reads alone (virtualDisk.readOIO), when collected

    def problems(self, path: str) -> list[Problem]:
        found = WorkloadParams(self.oio, self.io_size_kb, self.read_pct, self.random_pct).problems(path)
        if self.time is not None:
            found += number_problems(self.time, f"{path}.time")
        if self.read_oio is not None:
            found += number_problems(self.read_oio, f"{path}.read_oio", minimum=0)
        return found


@dataclass(frozen=True, slots=True)
class WorkloadConstants:
    """K1–K4 of eq. 1.

    The paper publishes no values, only that they "lie in a narrow range even when measured across
    devices". The defaults come from the physics of a random-access disk array, to be replaced by
    ``basil model calibrate`` on a measured grid: K1 = 1 (the IO in service adds to the queue),
    K2 = 32 KB (positioning cost expressed as KB transferred), K3 = 0.25 (cached writes are several
    times cheaper than reads), K4 = 1 (a fully random workload costs about twice a sequential one).
    """

    k1: float = 1.0
    k2: float = 32.0
    k3: float = 0.25
    k4: float = 1.0

    def problems(self, path: str) -> list[Problem]:
        return [
            p
            for name in ("k1", "k2", "k3", "k4")
            for p in number_problems(getattr(self, name), f"{path}.{name}")
        ]


@dataclass(frozen=True, slots=True)
class WorkloadModelParams:
    """How samples become a workload model: which percentile, over which window, which flags."""

    constants: WorkloadConstants = field(default_factory=WorkloadConstants)
    percentile: float = 90.0  # §6.1: the 90th percentile, not the mean
    window_hours: float = 24.0
    sequential_random_pct: float = 5.0  # random % at or below this: flagged ≈100 % sequential
    writes_read_pct: float = 5.0  # read % at or below this: flagged ≈100 % writes
    sequential_class_random_pct: float = 25.0  # class "sequential": ≥ 75 % sequential
    write_heavy_read_pct: float = 30.0  # class "write_heavy": ≥ 70 % writes
    burst_ratio: float = 2.0  # class "bursty": 90th percentile OIO ≥ this × the median

    def validate(self, path: str = "workload_model") -> list[Problem]:
        return [
            *self.constants.problems(path),
            *number_problems(self.percentile, f"{path}.percentile", minimum=0, maximum=100),
            *number_problems(self.window_hours, f"{path}.window_hours", minimum=0, exclusive_minimum=True),
            *number_problems(
                self.sequential_random_pct, f"{path}.sequential_random_pct", minimum=0, maximum=100
            ),
            *number_problems(self.writes_read_pct, f"{path}.writes_read_pct", minimum=0, maximum=100),
            *number_problems(
                self.sequential_class_random_pct,
                f"{path}.sequential_class_random_pct",
                minimum=0,
                maximum=100,
            ),
            *number_problems(
                self.write_heavy_read_pct, f"{path}.write_heavy_read_pct", minimum=0, maximum=100
            ),
            *number_problems(self.burst_ratio, f"{path}.burst_ratio", minimum=1),
        ]


@dataclass(frozen=True, slots=True)
class WorkloadClass:
    """Where eq. 1 stands for a disk: its class, all its traits, and the OIO burst ratio behind ``bursty``."""

    name: str  # CLASS_RANDOM, CLASS_SEQUENTIAL, CLASS_WRITE_HEAVY, CLASS_BURSTY or CLASS_UNKNOWN
    traits: tuple[str, ...] = ()
    burst_ratio: float | None = None  # 90th percentile OIO / median OIO, when the median is known

    @property
    def sequential(self) -> bool:
        return CLASS_SEQUENTIAL in self.traits


UNKNOWN_CLASS = WorkloadClass(CLASS_UNKNOWN)


def classify_workload(
    w: WorkloadParams, params: WorkloadModelParams, median_oio: float | None = None
) -> WorkloadClass:
    """The class of a workload from its percentile parameters (and its median OIO, for burstiness)."""
    traits: list[str] = []
    if w.random_pct <= params.sequential_class_random_pct:
        traits.append(CLASS_SEQUENTIAL)
    if w.read_pct <= params.write_heavy_read_pct:
        traits.append(CLASS_WRITE_HEAVY)
    ratio: float | None = None
    if median_oio is not None and w.oio > 0:
        ratio = w.oio / median_oio if median_oio > 0 else math.inf
        if ratio >= params.burst_ratio:
            traits.append(CLASS_BURSTY)
    name = next((c for c in CLASS_ORDER if c in traits), CLASS_RANDOM)
    return WorkloadClass(name, tuple(traits), ratio)


@dataclass(frozen=True, slots=True)
class WorkloadModel:
    """A disk's modelled workload: the percentile parameters, how many samples fed them, flags and class."""

    params: WorkloadParams
    samples_used: int
    flags: tuple[str, ...]
    workload_class: WorkloadClass = UNKNOWN_CLASS
    mean_oio: float | None = None  # the mean over the window (what a device line is fitted against)
    mean_read_oio: float | None = None  # the mean outstanding reads, when every sample has them


def load_metric(w: WorkloadParams, k: WorkloadConstants) -> float:
    """The load metric L of a workload: the numerator of BASIL eq. 1."""
    return (
        (k.k1 + w.oio) * (k.k2 + w.io_size_kb) * (k.k3 + w.read_pct / 100.0) * (k.k4 + w.random_pct / 100.0)
    )


def load_metric_array(
    oio: npt.ArrayLike,
    io_size_kb: npt.ArrayLike,
    read_pct: npt.ArrayLike,
    random_pct: npt.ArrayLike,
    k: WorkloadConstants,
) -> npt.NDArray[np.float64]:
    """Eq. 1's numerator for many workloads at once (used by calibration and large snapshots)."""
    o = np.asarray(oio, dtype=np.float64)
    s = np.asarray(io_size_kb, dtype=np.float64)
    r = np.asarray(read_pct, dtype=np.float64)
    x = np.asarray(random_pct, dtype=np.float64)
    result: npt.NDArray[np.float64] = (k.k1 + o) * (k.k2 + s) * (k.k3 + r / 100.0) * (k.k4 + x / 100.0)
    return result


def workload_flags(w: WorkloadParams, params: WorkloadModelParams) -> tuple[str, ...]:
    """Flags for workloads where the paper found eq. 1 a poor predictor (§3)."""
    flags: list[str] = []
    if w.random_pct <= params.sequential_random_pct:
        flags.append(FLAG_SEQUENTIAL)
    if w.read_pct <= params.writes_read_pct:
        flags.append(FLAG_WRITES)
    return tuple(flags)


def samples_in_window(
    samples: Sequence[WorkloadSample], window_hours: float, now: float | None
) -> list[WorkloadSample]:
    """The samples inside the window that ends at *now* (or at the newest sample when *now* is None).

    Samples without a time cannot be placed in a window and are all kept.
    """
    timed = [s.time for s in samples if s.time is not None]
    if not timed:
        return list(samples)
    end = now if now is not None else max(timed)
    start = end - window_hours * 3600.0
    return [s for s in samples if s.time is None or start <= s.time <= end]


def model_workload(
    samples: Sequence[WorkloadSample], params: WorkloadModelParams, now: float | None = None
) -> WorkloadModel | None:
    """Reduce a disk's samples to its workload model: each parameter's percentile over the window (§6.1).

    Returns None when no sample falls inside the window.
    """
    used = samples_in_window(samples, params.window_hours, now)
    if not used:
        return None
    table = np.array([[s.oio, s.io_size_kb, s.read_pct, s.random_pct] for s in used], dtype=np.float64)
    p = np.percentile(table, params.percentile, axis=0)
    w = WorkloadParams(float(p[0]), float(p[1]), float(p[2]), float(p[3]))
    median_oio = float(np.median(table[:, 0]))
    reads = [s.read_oio for s in used]
    return WorkloadModel(
        params=w,
        samples_used=len(used),
        flags=workload_flags(w, params),
        workload_class=classify_workload(w, params, median_oio),
        mean_oio=float(table[:, 0].mean()),
        mean_read_oio=float(np.mean([r for r in reads if r is not None])) if None not in reads else None,
    )
