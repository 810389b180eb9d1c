"""Calibration: K1–K4 by the pairwise-ratio median (eq. 2–3), K5 by least squares, Figure 3 errors."""

from __future__ import annotations

import csv
import math

import pytest

from basil.core.calibration import (
    GridPoint,
    calibrate,
    grid_from_rows,
    pairwise_constant,
    summarize_errors,
)
from basil.core.workload_model import WorkloadConstants
from basil.errors import ValidationError

from .builders import EXAMPLES, product_form_grid

TRUE = WorkloadConstants(k1=2.0, k2=24.0, k3=0.3, k4=0.8)
TRUE_K5 = 40.0


def test_eq3_by_hand_for_one_pair() -> None:
    # Latency 30 at OIO 10 and 20 at OIO 5: 30/20 = (K1 + 10)/(K1 + 5) gives K1 = 5.
    points = [GridPoint(10, 8, 50, 50, 30.0), GridPoint(5, 8, 50, 50, 20.0)]
    k1, pairs = pairwise_constant(points, "oio")
    assert pairs == 1
    assert k1 == pytest.approx(5.0)


def test_pairs_must_differ_in_that_parameter_only() -> None:
    points = [GridPoint(10, 8, 50, 50, 30.0), GridPoint(5, 16, 50, 50, 20.0)]
    assert pairwise_constant(points, "oio")[1] == 0


def test_exact_product_form_grid_gives_back_its_constants() -> None:
    points = product_form_grid(TRUE, TRUE_K5)
    result = calibrate(points)
    c = result.constants
    assert (c.k1, c.k2, c.k3, c.k4) == pytest.approx((TRUE.k1, TRUE.k2, TRUE.k3, TRUE.k4), rel=1e-9)
    assert result.k5 == pytest.approx(TRUE_K5, rel=1e-9)
    # The 600 points above 0 % random: 120 groups of 5 OIO values give 10 pairs each, 100 groups of
    # 6 IO sizes 15 each, 120 groups of 5 read % 10 each, 150 groups of 4 random % 6 each.
    assert result.pairs == (1200, 1500, 1200, 900)
    assert result.sequential_factor == pytest.approx(1.0)
    assert result.summary.max_abs == pytest.approx(0.0, abs=1e-9)


def test_noisy_grid_recovers_constants_roughly_and_reports_small_errors() -> None:
    points = product_form_grid(TRUE, TRUE_K5, noise=0.03, seed=11)
    result = calibrate(points)
    c = result.constants
    assert c.k1 == pytest.approx(TRUE.k1, abs=0.5)
    assert c.k2 == pytest.approx(TRUE.k2, rel=0.1)
    assert c.k3 == pytest.approx(TRUE.k3, abs=0.05)
    assert c.k4 == pytest.approx(TRUE.k4, abs=0.1)
    assert result.k5 == pytest.approx(TRUE_K5, rel=0.1)
    assert result.summary.points == 750
    assert result.summary.median_abs < 0.05
    assert result.summary.within_10pct > 0.9


def test_sequential_anomaly_shows_in_the_error_with_and_without_those_points() -> None:
    # The paper found eq. 1 over-predicts 100 % sequential latency; mimic it and check that the
    # summary without those points is the better one (Figure 3 (a) against (b)).
    points = product_form_grid(TRUE, TRUE_K5, noise=0.02, sequential_factor=0.4, seed=3)
    result = calibrate(points)
    assert result.sequential_points == 150
    assert result.summary_without_sequential.points == 600
    assert result.summary_without_sequential.p90_abs < result.summary.p90_abs
    assert result.summary.max_abs > 0.5
    assert len(result.relative_errors) == 750


@pytest.mark.parametrize(
    ("constants", "k5", "noise", "sequential_factor", "seed"),
    [
        pytest.param(TRUE, TRUE_K5, 0.05, 0.45, 2010, id="bundled-grid-recipe"),
        pytest.param(WorkloadConstants(1.0, 32.0, 0.25, 1.0), 12.0, 0.05, 0.3, 7, id="defaults-strong-seq"),
        pytest.param(WorkloadConstants(4.0, 16.0, 0.6, 0.5), 90.0, 0.08, 0.6, 99, id="noisier"),
    ],
)
def test_known_constants_are_recovered_within_10_percent(
    constants: WorkloadConstants, k5: float, noise: float, sequential_factor: float, seed: int
) -> None:
    # Synthetic grids with the paper's sequential anomaly (eq. 1 over-predicts ≈100 % sequential
    # latency) and relative noise: every constant within 10 %, and the anomaly measured, not absorbed.
    points = product_form_grid(constants, k5, noise=noise, sequential_factor=sequential_factor, seed=seed)
    result = calibrate(points)
    c = result.constants
    got = (c.k1, c.k2, c.k3, c.k4, result.k5)
    want = (constants.k1, constants.k2, constants.k3, constants.k4, k5)
    for name, g, w in zip(("K1", "K2", "K3", "K4", "K5"), got, want, strict=True):
        assert abs(g - w) <= 0.1 * w, f"{name} = {g:.4g}, generated with {w:.4g}"
    assert result.sequential_factor == pytest.approx(sequential_factor, rel=0.1)


def test_bundled_grid_recovers_the_constants_it_was_made_with() -> None:
    with (EXAMPLES / "calibration-grid.csv").open(encoding="utf-8", newline="") as f:
        result = calibrate(grid_from_rows(list(csv.DictReader(f))))
    assert result.constants.k4 == pytest.approx(TRUE.k4, rel=0.1)
    assert result.k5 == pytest.approx(TRUE_K5, rel=0.1)
    assert result.summary_without_sequential.median_abs < 0.06


def test_summary_histogram_counts_every_point_once() -> None:
    errors = [-0.6, -0.3, -0.1, 0.0, 0.1, 0.2, 0.4, 0.9]
    summary = summarize_errors(errors)
    assert sum(n for _, n in summary.histogram) == len(errors)
    assert dict(summary.histogram) == {
        "< -50%": 1,
        "-50% … -25%": 1,
        "-25% … -10%": 0,
        "-10% … +10%": 3,
        "+10% … +25%": 1,
        "+25% … +50%": 1,
        "> +50%": 1,
    }
    assert summary.within_10pct == pytest.approx(3 / 8)
    assert summary.max_abs == pytest.approx(0.9)


def test_grid_without_varying_pairs_names_the_constant() -> None:
    points = [GridPoint(4, 8, 50, 50, 10.0), GridPoint(8, 8, 50, 50, 15.0)]
    with pytest.raises(ValidationError) as err:
        calibrate(points)
    text = str(err.value)
    assert "K2" in text
    assert "K3" in text
    assert "K4" in text
    assert "K1 cannot" not in text


def test_bad_grid_points_are_all_reported() -> None:
    points = [GridPoint(4, 8, 50, 50, 0.0), GridPoint(-1, 8, 150, 50, math.nan)]
    with pytest.raises(ValidationError) as err:
        calibrate(points)
    fields = {p.field for p in err.value.problems}
    assert fields == {"grid[0].latency_ms", "grid[1].oio", "grid[1].read_pct", "grid[1].latency_ms"}


def test_rows_from_csv_or_json_become_points() -> None:
    rows: list[object] = [
        {"oio": "4", "io_size_kb": "8", "read_pct": "50", "random_pct": "100", "latency_ms": "3.5"},
        {"oio": 8, "io_size_kb": 8, "read_pct": 50, "random_pct": 100, "latency_ms": 6.0},
    ]
    assert grid_from_rows(rows) == [GridPoint(4, 8, 50, 100, 3.5), GridPoint(8, 8, 50, 100, 6.0)]


def test_bad_rows_name_their_fields() -> None:
    rows: list[object] = [
        {"oio": "4", "io_size_kb": "8", "read_pct": "50", "random_pct": "100"},
        {"oio": "x", "io_size_kb": 8, "read_pct": 50, "random_pct": 100, "latency_ms": 6.0, "iops": 10},
        "not a row",
    ]
    with pytest.raises(ValidationError) as err:
        grid_from_rows(rows)
    fields = {p.field for p in err.value.problems}
    assert fields == {"grid[0].latency_ms", "grid[1].oio", "grid[1].iops", "grid[2]"}


def test_bundled_example_grid_is_the_documented_synthetic_grid() -> None:
    # examples/calibration-grid.csv (used in the README) is product_form_grid(K = 2, 24, 0.3, 0.8;
    # K5 = 40; 5 % noise; 100 % sequential latencies × 0.45; seed 2010), latencies to 3 decimals.
    with (EXAMPLES / "calibration-grid.csv").open(encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    expected = product_form_grid(TRUE, TRUE_K5, noise=0.05, sequential_factor=0.45, seed=2010)
    assert len(rows) == len(expected) == 750
    for row, point in zip(rows, expected, strict=True):
        assert float(row["oio"]) == point.oio
        assert float(row["io_size_kb"]) == point.io_size_kb
        assert float(row["read_pct"]) == point.read_pct
        assert float(row["random_pct"]) == point.random_pct
        assert row["latency_ms"] == f"{point.latency_ms:.3f}"
