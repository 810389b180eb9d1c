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
stored sparse (only non-empty bins, key = parameter × 1024 + bin, keys ascending) as a version byte
and the zlib-compressed little-endian uint16 key deltas followed by the uint16 counts: about 100
bytes for a 5-minute bucket of 15 samples and 250 for an hour of 180, 3-7 times less than plain
(key, count) pairs, which matters at 6,000 disks × 288 buckets a day.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

ALPHA = 0.01
_GAMMA = (1 + ALPHA) / (1 - ALPHA)
_LOG_GAMMA = math.log(_GAMMA)
BINS_PER_PARAM = 1024
MAX_PARAMS = 64  # keys are uint16
_FORMAT = b"\x01"
_MAX_COUNT = 0xFFFF  # per bin and bucket: an hour holds 180 samples of a disk at vCenter's 20 s

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


def encode(keys: IntArray, counts: IntArray) -> bytes:
    """The stored form of a sparse sketch (*keys* ascending and distinct)."""
    if len(keys) == 0:
        return b""
    if counts.max() > _MAX_COUNT:
        raise ValueError(f"a sketch bin holds {int(counts.max())} samples; at most {_MAX_COUNT} fit a bucket")
    deltas = np.diff(keys, prepend=0).astype("<u2")
    return _FORMAT + zlib.compress(deltas.tobytes() + counts.astype("<u2").tobytes(), 1)


def decode(blob: bytes) -> tuple[IntArray, IntArray]:
    """(keys, counts) of a stored sketch."""
    if not blob:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty
    if blob[:1] != _FORMAT:
        raise ValueError(f"unknown sketch format {blob[:1]!r}")
    raw = np.frombuffer(zlib.decompress(blob[1:]), dtype="<u2")
    half = len(raw) // 2
    keys: IntArray = np.cumsum(raw[:half].astype(np.int64))
    counts: IntArray = raw[half:].astype(np.int64)
    return keys, counts


def _decode_all(blobs: Sequence[bytes]) -> tuple[IntArray, IntArray, IntArray]:
    """Concatenated keys and counts of many sketches, and how many entries each had (one pass of numpy)."""
    payloads = []
    for blob in blobs:
        if blob and blob[:1] != _FORMAT:
            raise ValueError(f"unknown sketch format {blob[:1]!r}")
        payloads.append(np.frombuffer(zlib.decompress(blob[1:]), dtype="<u2") if blob else None)
    sizes = np.fromiter(
        (0 if p is None else len(p) // 2 for p in payloads), dtype=np.int64, count=len(payloads)
    )
    present = [p for p in payloads if p is not None]
    if not present:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, sizes
    deltas = np.concatenate([p[: len(p) // 2] for p in present]).astype(np.int64)
    counts: IntArray = np.concatenate([p[len(p) // 2 :] for p in present]).astype(np.int64)
    # Keys are delta-coded per sketch: a running sum that restarts at each sketch's first entry.
    running = np.cumsum(deltas)
    starts = np.cumsum(sizes[sizes > 0]) - sizes[sizes > 0]
    offsets = np.repeat(running[starts] - deltas[starts], sizes[sizes > 0])
    keys: IntArray = running - offsets
    return keys, counts, sizes


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
    keys, counts, sizes = _decode_all(blobs)
    if len(keys) == 0:
        return {int(g): b"" for g in np.unique(groups)}
    merged = _encode_groups(np.repeat(groups, sizes), keys, counts)
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
    keys_all = unique % (MAX_PARAMS * BINS_PER_PARAM)
    for start, end in zip(starts.tolist(), ends.tolist(), strict=True):
        out[int(unique_groups[start])] = encode(keys_all[start:end], summed[start:end])
    return out


class Histogram:
    """A decoded, dense sketch: counts per bin for every parameter of a :class:`SketchSpec`."""

    def __init__(self, spec: SketchSpec) -> None:
        self.spec = spec
        self.counts = np.zeros(len(spec.names) * BINS_PER_PARAM, dtype=np.int64)

    def add_blob(self, blob: bytes) -> None:
        keys, counts = decode(blob)
        np.add.at(self.counts, keys, counts)

    def add_blobs(self, blobs: Sequence[bytes]) -> None:
        keys, counts, _sizes = _decode_all(blobs)
        self.counts += np.bincount(keys, weights=counts, minlength=len(self.counts)).astype(np.int64)

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


def quantiles_by_group(
    spec: SketchSpec, groups: IntArray, blobs: Sequence[bytes], n_groups: int, q: float, *, chunk: int = 512
) -> list[list[tuple[float | None, int]]]:
    """For groups 0..n_groups-1: (q-quantile, count) of every parameter over all blobs of the group.

    ``groups[i]`` (ascending) is the group of ``blobs[i]``. The merge happens on dense histograms,
    *chunk* groups at a time: no sort of the entries, linear in their number.
    """
    if not 0.0 <= q <= 1.0:
        raise ValueError(f"quantile must lie in [0, 1], got {q}")
    if len(groups) > 1 and np.any(np.diff(groups) < 0):
        raise ValueError("groups must be in ascending order")
    names = len(spec.names)
    width = names * BINS_PER_PARAM
    empty: list[tuple[float | None, int]] = [(None, 0)] * names
    result = [list(empty) for _ in range(n_groups)]
    keys, counts, sizes = _decode_all(blobs)
    if len(keys) == 0:
        return result
    owner = np.repeat(groups, sizes)
    bounds = np.searchsorted(owner, np.arange(0, n_groups + chunk, chunk))
    for c, first in enumerate(range(0, n_groups, chunk)):
        lo, hi = bounds[c], bounds[c + 1]
        if lo == hi:
            continue
        size = min(chunk, n_groups - first)
        cells = (owner[lo:hi] - first) * width + keys[lo:hi]
        hist = np.bincount(cells, weights=counts[lo:hi], minlength=size * width).reshape(size, names, -1)
        cumulative = np.cumsum(hist, axis=2)
        totals = cumulative[:, :, -1].astype(np.int64)
        ranks = np.floor(q * np.maximum(totals - 1, 0))
        bins = np.argmax(cumulative > ranks[:, :, None], axis=2)
        values = np.stack([spec.scales[p].value(bins[:, p]) for p in range(names)], axis=1)
        for g in np.flatnonzero(totals.sum(axis=1)).tolist():
            result[first + g] = [
                (float(values[g, p]), int(totals[g, p])) if totals[g, p] > 0 else (None, 0)
                for p in range(names)
            ]
    return result


def grouped_quantiles(
    spec: SketchSpec, blobs_by_group: dict[int, bytes], q: float
) -> dict[int, list[tuple[float | None, int]]]:
    """For each group's sketch: (q-quantile, count) of every parameter, in ``spec.names`` order."""
    ids = sorted(blobs_by_group)
    found = quantiles_by_group(
        spec, np.arange(len(ids), dtype=np.int64), [blobs_by_group[g] for g in ids], len(ids), q
    )
    return dict(zip(ids, found, strict=True))
