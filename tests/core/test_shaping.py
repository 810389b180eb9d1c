"""RTT, the capacity search, Miser and the multi-client estimate (Lu's thesis) against brute force."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from basil.core import shaping
from basil.core.shaping import (
    TIME_TOLERANCE_S,
    CapacityParams,
    capacity_curve,
    capacity_for_fraction,
    fifo_responses,
    merge_arrivals,
    miser_responses,
    multi_client_capacity,
    plan_capacity,
    required_count,
    rtt_admitted,
    rtt_decompose,
)
from basil.core.trace import onoff_pareto_arrivals
from basil.errors import ValidationError


def all_meet_exactly(times_ms: list[int], capacity: int, bound_ms: int) -> bool:
    """Whether every request of *times_ms* meets the bound served FIFO at *capacity*, in exact arithmetic."""
    s = Fraction(1000, capacity)  # service time in ms
    finish = Fraction(-(10**9))
    for t in times_ms:
        finish = max(Fraction(t), finish) + s
        if finish - t > bound_ms:
            return False
    return True


def best_subset_size(times_ms: list[int], capacity: int, bound_ms: int) -> int:
    """The largest set of requests that can all meet the bound (FIFO is optimal for equal deadlines)."""
    for size in range(len(times_ms), 0, -1):
        for subset in itertools.combinations(times_ms, size):
            if all_meet_exactly(list(subset), capacity, bound_ms):
                return size
    return 0


def sequential_rtt(arrivals: list[float], capacity: float, bound_s: float) -> list[bool]:
    """Algorithm 1 request by request: admit when the work ahead plus this request ends within δ."""
    s = 1.0 / capacity
    finish = -math.inf
    kept = []
    for a in arrivals:
        if max(a, finish) + s - a <= bound_s + TIME_TOLERANCE_S:
            finish = max(a, finish) + s
            kept.append(True)
        else:
            kept.append(False)
    return kept


small_traces = st.lists(st.integers(min_value=0, max_value=40), min_size=1, max_size=9).map(sorted)


@settings(max_examples=150, deadline=None)
@given(times_ms=small_traces, capacity=st.integers(min_value=50, max_value=1000), bound_ms=st.integers(1, 20))
def test_rtt_keeps_as_many_requests_as_the_best_subset(
    times_ms: list[int], capacity: int, bound_ms: int
) -> None:
    arrivals = np.asarray(times_ms, dtype=np.float64) / 1000.0
    assert rtt_admitted(arrivals, capacity, bound_ms / 1000.0) == best_subset_size(
        times_ms, capacity, bound_ms
    )


@settings(max_examples=150, deadline=None)
@given(times_ms=small_traces, capacity=st.integers(min_value=50, max_value=1000), bound_ms=st.integers(1, 20))
def test_rtt_primary_class_meets_the_bound(times_ms: list[int], capacity: int, bound_ms: int) -> None:
    arrivals = np.asarray(times_ms, dtype=np.float64) / 1000.0
    primary = rtt_decompose(arrivals, capacity, bound_ms / 1000.0)
    kept = [t for t, keep in zip(times_ms, primary.tolist(), strict=True) if keep]
    assert all_meet_exactly(kept, capacity, bound_ms)


gaps = st.lists(st.floats(min_value=0.0, max_value=0.01, allow_nan=False), min_size=1, max_size=3000)


@settings(max_examples=80, deadline=None)
@given(
    gaps=gaps, capacity=st.floats(min_value=50, max_value=5000), bound_ms=st.sampled_from([1, 2, 5, 10, 50])
)
def test_vectorised_rtt_matches_algorithm_1_step_by_step(
    gaps: list[float], capacity: float, bound_ms: int
) -> None:
    arrivals = np.cumsum(np.asarray(gaps, dtype=np.float64))
    expected = sequential_rtt(arrivals.tolist(), capacity, bound_ms / 1000.0)
    primary = rtt_decompose(arrivals, capacity, bound_ms / 1000.0)
    assert primary.tolist() == expected
    assert rtt_admitted(arrivals, capacity, bound_ms / 1000.0) == sum(expected)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_vectorised_rtt_matches_algorithm_1_on_bursty_traces(seed: int) -> None:
    arrivals = onoff_pareto_arrivals(20_000, seed=seed)
    for capacity in (300.0, 900.0, 1700.0, 2500.0):
        expected = sequential_rtt(arrivals.tolist(), capacity, 0.01)
        assert rtt_decompose(arrivals, capacity, 0.01).tolist() == expected


@pytest.mark.parametrize("fraction", [0.5, 0.9, 0.95, 0.99, 1.0])
def test_capacity_search_is_the_smallest_capacity_within_tolerance(fraction: float) -> None:
    arrivals = onoff_pareto_arrivals(30_000, seed=7)
    found = capacity_for_fraction(arrivals, fraction, 0.01, rel_tol=1e-3)
    need = required_count(fraction, arrivals.size)
    assert rtt_admitted(arrivals, found.capacity, 0.01) >= need
    assert rtt_admitted(arrivals, found.capacity * (1 - 1e-3), 0.01) < need
    if fraction == 1.0:
        assert float(fifo_responses(arrivals, found.capacity).max()) <= 0.01 + TIME_TOLERANCE_S
        assert float(fifo_responses(arrivals, found.capacity * (1 - 1e-3)).max()) > 0.01


@settings(max_examples=40, deadline=None)
@given(
    gaps=st.lists(st.floats(min_value=0.0, max_value=0.02, allow_nan=False), min_size=1, max_size=400),
    fraction=st.floats(min_value=0.05, max_value=1.0),
    bound_ms=st.sampled_from([1, 5, 10]),
)
def test_capacity_search_against_the_simulator(gaps: list[float], fraction: float, bound_ms: int) -> None:
    arrivals = np.cumsum(np.asarray(gaps, dtype=np.float64))
    found = capacity_for_fraction(arrivals, fraction, bound_ms / 1000.0, rel_tol=1e-2)
    need = required_count(fraction, arrivals.size)
    assert sum(sequential_rtt(arrivals.tolist(), found.capacity, bound_ms / 1000.0)) >= need
    assert sum(sequential_rtt(arrivals.tolist(), found.capacity * (1 - 1e-2), bound_ms / 1000.0)) < need


def test_capacity_curve_rises_with_the_fraction_and_has_a_knee() -> None:
    arrivals = onoff_pareto_arrivals(30_000, seed=11)
    curve = capacity_curve(arrivals, [0.9, 0.95, 0.99, 1.0], 0.01)
    capacities = [p.capacity_iops for p in curve]
    assert capacities == sorted(capacities)
    mean_rate = arrivals.size / float(arrivals[-1] - arrivals[0])
    # A bursty trace needs several times its mean rate for 100 % within 10 ms.
    assert capacities[-1] > 3 * mean_rate


def test_all_requests_arriving_together_need_n_over_delta() -> None:
    arrivals = np.zeros(100)
    found = capacity_for_fraction(arrivals, 1.0, 0.01, rel_tol=1e-4)
    assert found.capacity == pytest.approx(100 / 0.01, rel=1e-4)
    half = capacity_for_fraction(arrivals, 0.5, 0.01, rel_tol=1e-4)
    assert half.capacity == pytest.approx(50 / 0.01, rel=1e-4)


def test_miser_keeps_the_primary_class_within_the_bound_with_delta_c_equal_to_c() -> None:
    arrivals = onoff_pareto_arrivals(20_000, seed=5)
    cmin = capacity_for_fraction(arrivals, 0.9, 0.01).capacity
    primary = rtt_decompose(arrivals, cmin, 0.01)
    responses = miser_responses(arrivals, primary, 2 * cmin, 0.01)
    assert float(responses[primary].max()) <= 0.01 + TIME_TOLERANCE_S
    assert float(responses.min()) >= 1 / (2 * cmin) - 1e-12  # every request was served once
    # The overflow is served too, sooner than the same server would if it ran FCFS with it last.
    assert np.all(np.isfinite(responses[~primary]))


def test_miser_without_overflow_is_fifo() -> None:
    arrivals = onoff_pareto_arrivals(5_000, seed=9)
    primary = np.ones(arrivals.size, dtype=np.bool_)
    np.testing.assert_allclose(
        miser_responses(arrivals, primary, 3000.0, 0.01), fifo_responses(arrivals, 3000.0)
    )


def test_miser_gives_the_overflow_the_slack_and_serves_it_by_order_of_arrival() -> None:
    # Three requests at 0: capacity 100 IO/s, δ = 20 ms keeps two; the third overflows and is served
    # once the primary queue has no slack to give, i.e. last, at 30 ms.
    arrivals = np.array([0.0, 0.0, 0.0])
    primary = rtt_decompose(arrivals, 100.0, 0.02)
    assert primary.tolist() == [True, True, False]
    np.testing.assert_allclose(miser_responses(arrivals, primary, 100.0, 0.02), [0.01, 0.02, 0.03])
    # With a 30 ms bound on the primary's deadlines there is slack for the overflow to go first.
    np.testing.assert_allclose(miser_responses(arrivals, primary, 100.0, 0.03), [0.02, 0.03, 0.01])


def test_plan_capacity_reports_the_split_and_the_curve() -> None:
    arrivals = onoff_pareto_arrivals(20_000, seed=2)
    report = plan_capacity(arrivals, CapacityParams(fraction=0.95, bound_ms=10))
    assert report.capacity_iops < report.capacity_full_iops
    assert report.overflow_fraction <= 0.05 + 1e-9
    assert report.primary == rtt_admitted(arrivals, report.capacity_iops, 0.01)
    assert report.miser_capacity_iops == pytest.approx(report.capacity_iops * (1 + 1 / 6))
    fractions = [p.fraction for p in report.curve]
    assert 0.95 in fractions
    assert 1.0 in fractions
    body = report.to_dict()
    assert body["capacity_iops"] == report.capacity_iops
    assert body["miser"]["overflow"]["count"] == report.requests - report.primary  # type: ignore[index]


def test_multi_client_estimate_sums_shaped_capacities_and_simulates_the_merge() -> None:
    first = onoff_pareto_arrivals(10_000, seed=21)
    second = onoff_pareto_arrivals(10_000, seed=22)
    estimate = multi_client_capacity([first, second], 0.9, 0.01)
    assert estimate.estimate_iops == pytest.approx(sum(estimate.individual_iops))
    merged = merge_arrivals([first, second])
    assert estimate.merged_iops == pytest.approx(capacity_for_fraction(merged, 0.9, 0.01).capacity)
    assert estimate.worst_case_sum_iops > estimate.estimate_iops


@pytest.mark.parametrize(
    ("fraction", "bound_ms", "field"),
    [
        pytest.param(0.0, 10.0, "fraction", id="fraction-zero"),
        pytest.param(1.5, 10.0, "fraction", id="fraction-above-one"),
        pytest.param(float("nan"), 10.0, "fraction", id="fraction-nan"),
        pytest.param(0.9, 0.0, "bound_ms", id="bound-zero"),
        pytest.param(0.9, -5.0, "bound_ms", id="bound-negative"),
    ],
)
def test_bad_questions_name_the_field(fraction: float, bound_ms: float, field: str) -> None:
    with pytest.raises(ValidationError) as err:
        capacity_for_fraction(np.array([0.0, 1.0]), fraction, bound_ms / 1000.0)
    assert [p.field for p in err.value.problems] == [field]


@pytest.mark.parametrize(
    ("arrivals", "message"),
    [
        pytest.param(np.array([], dtype=np.float64), "no requests", id="empty"),
        pytest.param(np.array([0.0, math.nan]), "not finite", id="nan"),
        pytest.param(np.array([1.0, 0.0]), "non-decreasing", id="unsorted"),
    ],
)
def test_bad_traces_are_refused(arrivals: np.ndarray, message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        capacity_for_fraction(arrivals, 0.9, 0.01)


@pytest.mark.parametrize("fraction", [0.9, 0.99, 1.0])
def test_capacity_search_aimed_by_a_sample_still_brackets_on_the_whole_trace(
    monkeypatch: pytest.MonkeyPatch, fraction: float
) -> None:
    monkeypatch.setattr(shaping, "_SAMPLE_BLOCK", 512)  # 30,000 requests count as a long trace
    arrivals = onoff_pareto_arrivals(30_000, seed=17)
    found = capacity_for_fraction(arrivals, fraction, 0.01, rel_tol=1e-3)
    need = required_count(fraction, arrivals.size)
    assert rtt_admitted(arrivals, found.capacity, 0.01) >= need
    assert rtt_admitted(arrivals, found.capacity * (1 - 1e-3), 0.01) < need
