"""Quantile sketches: accuracy against exact quantiles, exact merging, compact encoding."""

from __future__ import annotations

import numpy as np
import pytest

from basil.store.sketch import (
    ALPHA,
    DISK_SKETCH,
    Histogram,
    grouped_quantiles,
    grouped_sketches,
    merge_grouped,
)


def _columns(rng: np.random.Generator, n: int) -> list[np.ndarray]:
    return [
        rng.lognormal(1.0, 1.2, n),  # OIO, orders of magnitude apart
        rng.choice([4.0, 8.0, 16.0, 64.0, 256.0], n) * rng.uniform(0.9, 1.1, n),
        rng.uniform(0, 100, n),
        rng.beta(2, 5, n) * 100,
    ]


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
@pytest.mark.parametrize("q", [0.5, 0.9, 0.99])
def test_quantiles_are_within_the_sketch_error(seed: int, q: float) -> None:
    rng = np.random.default_rng(seed)
    columns = _columns(rng, 5000)
    histogram = Histogram(DISK_SKETCH)
    histogram.add_values(columns)
    for name, column in zip(DISK_SKETCH.names, columns, strict=True):
        exact = float(np.quantile(column, q, method="lower"))
        estimate = histogram.quantile(name, q)
        assert estimate is not None
        if name in ("read_pct", "random_pct"):
            assert abs(estimate - exact) <= 0.25 + 1e-9
        else:
            assert abs(estimate - exact) <= ALPHA * exact + 1e-12


def test_merging_is_exact() -> None:
    rng = np.random.default_rng(7)
    a, b = _columns(rng, 300), _columns(rng, 500)
    whole = grouped_sketches(
        DISK_SKETCH, np.zeros(800, dtype=np.int64), [np.r_[x, y] for x, y in zip(a, b, strict=True)]
    )
    parts = [
        grouped_sketches(DISK_SKETCH, np.zeros(n, dtype=np.int64), cols)[0]
        for n, cols in ((300, a), (500, b))
    ]
    merged = merge_grouped(np.zeros(2, dtype=np.int64), parts)
    assert merged[0] == whole[0]


def test_missing_values_are_left_out() -> None:
    histogram = Histogram(DISK_SKETCH)
    nan = float("nan")
    histogram.add_values(
        [np.array([1.0, 2.0]), np.array([nan, 8.0]), np.array([nan, nan]), np.array([50.0, 50.0])]
    )
    assert [histogram.count(n) for n in DISK_SKETCH.names] == [2, 1, 0, 2]
    assert histogram.quantile("read_pct", 0.9) is None
    assert histogram.quantile("random_pct", 0.9) == 50.0


def test_zero_and_tiny_values_fall_in_the_zero_bin() -> None:
    histogram = Histogram(DISK_SKETCH)
    histogram.add_values(
        [np.array([0.0, 0.001, 0.0]), np.array([1.0] * 3), np.array([0.0] * 3), np.array([100.0] * 3)]
    )
    assert histogram.quantile("oio", 0.99) == 0.0
    assert histogram.quantile("random_pct", 0.5) == 100.0


def test_grouped_quantiles_match_one_histogram_per_group() -> None:
    rng = np.random.default_rng(11)
    groups = rng.integers(0, 50, 4000)
    columns = _columns(rng, 4000)
    sketches = grouped_sketches(DISK_SKETCH, groups, columns)
    result = grouped_quantiles(DISK_SKETCH, sketches, 0.9)
    for group in (0, 17, 49):
        histogram = Histogram(DISK_SKETCH)
        histogram.add_blob(sketches[group])
        for p, name in enumerate(DISK_SKETCH.names):
            assert result[group][p] == (histogram.quantile(name, 0.9), histogram.count(name))


def test_a_five_minute_bucket_stays_small() -> None:
    rng = np.random.default_rng(5)
    blob = grouped_sketches(DISK_SKETCH, np.zeros(15, dtype=np.int64), _columns(rng, 15))[0]
    assert len(blob) <= 200  # compressed; plain (key, count) pairs would take up to 360


def test_quantile_rejects_out_of_range() -> None:
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        Histogram(DISK_SKETCH).quantile("oio", 90)
