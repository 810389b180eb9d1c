"""Mergeable quantile sketches kept in each sample rollup, so percentiles over days need no raw samples.

BASIL's workload model uses the 90th percentile of each workload parameter over about a day (§3,
§6.1), but raw 20 s samples are kept only for hours. A percentile cannot be rebuilt from per-bucket
percentiles, so every 5-minute and hourly rollup keeps a histogram per parameter on fixed bins:

- quantities that span orders of magnitude (OIO, IO size, latency) on logarithmic bins whose
  representative value is within ``ALPHA`` = 1 % of any value in the bin (the DDSketch construction,
  bin i covering (m·γ^(i-1), m·γ^i] with γ = (1+α)/(1-α));
- percentages on 0.5-point bins (error at most 0.25 points).

Because the bins are fixed, merging two sketches is adding counts: the hourly rollup is the exact sum
of its 5-minute sketches and a day's percentile is read from 24-288 of them. A bucket's sketch is
stored sparse (only non-empty bins) as little-endian (uint16 key, uint32 count) pairs, with
key = parameter × 1024 + bin: a 5-minute bucket of 15 samples takes at most 360 bytes.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

ALPHA = 0.01
_GAMMA = (1 + ALPHA) / (1 - ALPHA)
_LOG_GAMMA = math.log(_GAMMA)
BINS_PER_PARAM = 1024
MAX_PARAMS = 64  # keys are uint16
_ENTRY = np.dtype([("key", "<u2"), ("count", "<u4")])

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True)
class Scale:
    """How one parameter's values map to bins: ``log`` above ``minimum`` (below it: bin 0) or ``linear``."""

    kind: str
    minimum: float = 0.01
    step: float = 0.5

    def bins(self, values: FloatArray) -> IntArray:
        """Bin index of each value (values must be finite)."""
        if self.kind == "linear":
            raw = np.rint(np.clip(values, 0.0, None) / self.step)
        else:
            safe = np.maximum(values, self.minimum)
            raw = np.where(
                values < self.minimum, 0, np.ceil(np.log(safe / self.minimum) / _LOG_GAMMA - 1e-9) + 1
            )
        result: IntArray = np.clip(raw, 0, BINS_PER_PARAM - 1).astype(np.int64)
        return result

    def value(self, bins: IntArray) -> FloatArray:
        """The representative value of each bin (within α of every value that falls into it)."""
        b = bins.astype(np.float64)
        if self.kind == "linear":
            linear: FloatArray = b * self.step
            return linear
        upper = self.minimum * np.power(_GAMMA, b - 1)
        result: FloatArray = np.where(bins == 0, 0.0, 2.0 * upper / (_GAMMA + 1.0))
        return result


@dataclass(frozen=True)
class SketchSpec:
    """The parameters one kind of sketch tracks, in key order."""

    names: tuple[str, ...]
    scales: tuple[Scale, ...]

    def index(self, name: str) -> int:
        return self.names.index(name)


LOG_OIO = Scale("log", minimum=0.01)
LOG_KB = Scale("log", minimum=0.1)
LOG_MS = Scale("log", minimum=0.01)
PERCENT = Scale("linear", step=0.5)

# BASIL §3's four workload parameters, per virtual disk.
DISK_SKETCH = SketchSpec(("oio", "io_size_kb", "read_pct", "random_pct"), (LOG_OIO, LOG_KB, PERCENT, PERCENT))
# Per (host, datastore): read latency (the device model's y) and the IOPS-weighted total latency.
HOST_DATASTORE_SKETCH = SketchSpec(("read_latency_ms", "latency_ms"), (LOG_MS, LOG_MS))


def grouped_sketches(spec: SketchSpec, groups: IntArray, columns: Sequence[FloatArray]) -> dict[int, bytes]:
    """One encoded sketch per group id: ``columns[p][i]`` is sample i's value of parameter p (NaN: none)."""
    keys_parts: list[IntArray] = []
    group_parts: list[IntArray] = []
    for p, (scale, column) in enumerate(zip(spec.scales, columns, strict=True)):
        present = np.isfinite(column)
        keys_parts.append(scale.bins(column[present]) + p * BINS_PER_PARAM)
        group_parts.append(groups[present])
    return _encode_groups(np.concatenate(group_parts), np.concatenate(keys_parts), None)


def merge_grouped(groups: IntArray, blobs: Sequence[bytes]) -> dict[int, bytes]:
    """Merge encoded sketches by group: the sketch of group g is the sum of every blob tagged g."""
    decoded = [np.frombuffer(blob, dtype=_ENTRY) for blob in blobs]
    sizes = np.fromiter((len(d) for d in decoded), dtype=np.int64, count=len(decoded))
    if not decoded or sizes.sum() == 0:
        return {int(g): b"" for g in np.unique(groups)}
    entries = np.concatenate(decoded)
    expanded = np.repeat(groups, sizes)
    merged = _encode_groups(expanded, entries["key"].astype(np.int64), entries["count"].astype(np.int64))
    for g in np.unique(groups):
        merged.setdefault(int(g), b"")
    return merged


def _encode_groups(groups: IntArray, keys: IntArray, counts: IntArray | None) -> dict[int, bytes]:
    if len(keys) == 0:
        return {int(g): b"" for g in np.unique(groups)}
    combined = groups * (MAX_PARAMS * BINS_PER_PARAM) + keys
    unique, inverse = np.unique(combined, return_inverse=True)
    summed = (
        np.bincount(inverse, weights=counts).astype(np.int64) if counts is not None else np.bincount(inverse)
    )
    unique_groups = unique // (MAX_PARAMS * BINS_PER_PARAM)
    starts = np.flatnonzero(np.r_[True, unique_groups[1:] != unique_groups[:-1]])
    ends = np.r_[starts[1:], len(unique)]
    out: dict[int, bytes] = {}
    for start, end in zip(starts, ends, strict=True):
        entries = np.empty(end - start, dtype=_ENTRY)
        entries["key"] = unique[start:end] % (MAX_PARAMS * BINS_PER_PARAM)
        entries["count"] = summed[start:end]
        out[int(unique_groups[start])] = entries.tobytes()
    return out


class Histogram:
    """A decoded, dense sketch: counts per bin for every parameter of a :class:`SketchSpec`."""

    def __init__(self, spec: SketchSpec) -> None:
        self.spec = spec
        self.counts = np.zeros(len(spec.names) * BINS_PER_PARAM, dtype=np.int64)

    def add_blob(self, blob: bytes) -> None:
        entries = np.frombuffer(blob, dtype=_ENTRY)
        np.add.at(self.counts, entries["key"].astype(np.int64), entries["count"].astype(np.int64))

    def add_blobs(self, blobs: Sequence[bytes]) -> None:
        if not blobs:
            return
        entries = np.frombuffer(b"".join(blobs), dtype=_ENTRY)
        self.counts += np.bincount(
            entries["key"].astype(np.int64), weights=entries["count"], minlength=len(self.counts)
        ).astype(np.int64)

    def add_values(self, columns: Sequence[FloatArray]) -> None:
        blob = grouped_sketches(self.spec, np.zeros(len(columns[0]), dtype=np.int64), columns).get(0, b"")
        self.add_blob(blob)

    def count(self, name: str) -> int:
        p = self.spec.index(name)
        return int(self.counts[p * BINS_PER_PARAM : (p + 1) * BINS_PER_PARAM].sum())

    def quantile(self, name: str, q: float) -> float | None:
        """The q-quantile (0 ≤ q ≤ 1) of parameter *name*: the value of rank ⌊q·(n−1)⌋; None if empty."""
        if not 0.0 <= q <= 1.0:
            raise ValueError(f"quantile must lie in [0, 1], got {q}")
        p = self.spec.index(name)
        counts = self.counts[p * BINS_PER_PARAM : (p + 1) * BINS_PER_PARAM]
        total = int(counts.sum())
        if total == 0:
            return None
        rank = math.floor(q * (total - 1))
        cumulative = np.cumsum(counts)
        bin_index = int(np.searchsorted(cumulative, rank, side="right"))
        return float(self.spec.scales[p].value(np.array([bin_index], dtype=np.int64))[0])


def grouped_quantiles(
    spec: SketchSpec, blobs_by_group: dict[int, bytes], q: float
) -> dict[int, list[tuple[float | None, int]]]:
    """For each group's sketch: (q-quantile, count) of every parameter, in ``spec.names`` order.

    Vectorized over all groups at once (a recommendation round reads thousands of disks).
    """
    if not 0.0 <= q <= 1.0:
        raise ValueError(f"quantile must lie in [0, 1], got {q}")
    groups = np.fromiter(blobs_by_group, dtype=np.int64, count=len(blobs_by_group))
    result: dict[int, list[tuple[float | None, int]]] = {
        int(g): [(None, 0)] * len(spec.names) for g in groups
    }
    decoded = [np.frombuffer(blobs_by_group[int(g)], dtype=_ENTRY) for g in groups]
    sizes = np.fromiter((len(d) for d in decoded), dtype=np.int64, count=len(decoded))
    if sizes.sum() == 0:
        return result
    entries = np.concatenate(decoded)
    group_of = np.repeat(groups, sizes)
    keys = entries["key"].astype(np.int64)
    counts = entries["count"].astype(np.int64)
    # Entries are sorted by key inside each blob, so (group, parameter) segments are contiguous.
    segment_id = group_of * MAX_PARAMS + keys // BINS_PER_PARAM
    starts = np.flatnonzero(np.r_[True, segment_id[1:] != segment_id[:-1]])
    totals = np.add.reduceat(counts, starts)
    cumulative = np.cumsum(counts)
    before = cumulative[starts] - counts[starts]
    ranks = np.floor(q * (totals - 1)).astype(np.int64)
    hit = np.searchsorted(cumulative, before + ranks, side="right")
    params = keys[starts] // BINS_PER_PARAM
    bins = keys[hit] % BINS_PER_PARAM
    values = np.zeros(len(starts), dtype=np.float64)
    for p, scale in enumerate(spec.scales):
        mask = params == p
        values[mask] = scale.value(bins[mask])
    for group, p, value, total in zip(
        group_of[starts].tolist(), params.tolist(), values.tolist(), totals.tolist(), strict=True
    ):
        result[group][p] = (value, total)
    return result
