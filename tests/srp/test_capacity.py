"""Array queue depth control (SRP eq. 4), array IOPS by Little's law (eq. 5) and host queue depths (eq. 6)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from basil.errors import ValidationError
from basil.srp.capacity import (
    ArrayState,
    array_iops,
    host_queue_depths,
    next_queue_depth,
    queue_depth_for_iops,
)
from basil.srp.params import SrpParams


def saturated_array_latency_ms(queue_depth: float, throughput_iops: float) -> float:
    """A simple array model: it completes a fixed number of IOs per second whatever the queue, so by
    Little's law the latency is the queue depth over the throughput (seconds, here in ms)."""
    return queue_depth / throughput_iops * 1000.0


def test_one_step_of_eq4() -> None:
    params = SrpParams(latency_threshold_ms=20, gamma=0.5, queue_depth_min=1, queue_depth_max=1000)
    # Latency twice the threshold: Q(t+1) = 0.5 × 64 + 0.5 × (20/40) × 64 = 48.
    assert next_queue_depth(ArrayState(64, 40), params) == pytest.approx(48)
    # Latency half of it: 0.5 × 64 + 0.5 × 2 × 64 = 96.
    assert next_queue_depth(ArrayState(64, 10), params) == pytest.approx(96)


@settings(max_examples=200, deadline=None)
@given(
    gamma=st.floats(0.05, 1.0),
    start=st.floats(4, 1024),
    throughput=st.floats(500, 20000),
    threshold=st.sampled_from([5.0, 20.0, 30.0]),
)
def test_controller_converges_to_the_threshold_and_stays_in_bounds(
    gamma: float, start: float, throughput: float, threshold: float
) -> None:
    params = SrpParams(latency_threshold_ms=threshold, gamma=gamma, queue_depth_min=4, queue_depth_max=1024)
    q = start
    for _ in range(400):
        q = next_queue_depth(ArrayState(q, saturated_array_latency_ms(q, throughput)), params)
        assert params.queue_depth_min <= q <= params.queue_depth_max
    target = queue_depth_for_iops(throughput, threshold)  # the Q at which latency equals L_c
    if params.queue_depth_min <= target <= params.queue_depth_max:
        assert saturated_array_latency_ms(q, throughput) == pytest.approx(threshold, rel=1e-3)
    else:
        assert q == pytest.approx(min(max(target, params.queue_depth_min), params.queue_depth_max))


def test_bounds_hold_against_extreme_latencies() -> None:
    params = SrpParams(gamma=1.0, queue_depth_min=8, queue_depth_max=64)
    assert next_queue_depth(ArrayState(32, 0.001), params) == 64
    assert next_queue_depth(ArrayState(32, 1e6), params) == 8


def test_an_idle_interval_keeps_the_queue_depth() -> None:
    assert next_queue_depth(ArrayState(40, 0.0), SrpParams()) == 40


def test_array_state_is_checked() -> None:
    with pytest.raises(ValidationError) as caught:
        next_queue_depth(ArrayState(-1, math.nan), SrpParams())
    assert {p.field for p in caught.value.problems} == {"queue_depth", "latency_ms"}


def test_array_iops_is_littles_law_in_seconds() -> None:
    # 36 outstanding IOs at 30 ms each complete 36 / 0.030 = 1200 per second (eq. 5).
    assert array_iops(36, 30) == pytest.approx(1200)
    assert queue_depth_for_iops(1200, 30) == pytest.approx(36)


def test_host_queue_depth_by_entitlement() -> None:
    got = host_queue_depths(90, {"h1": 1200, "h2": 600})
    assert got == pytest.approx({"h1": 60, "h2": 30})


def test_hosts_share_equally_when_nothing_is_entitled() -> None:
    assert host_queue_depths(10, {"h1": 0, "h2": 0}) == {"h1": 5, "h2": 5}
    assert host_queue_depths(10, {}) == {}


@settings(max_examples=200, deadline=None)
@given(
    q=st.floats(1, 4096),
    entitlements=st.dictionaries(st.text(min_size=1, max_size=5), st.floats(0, 1e5), min_size=1, max_size=30),
)
def test_host_queue_depths_sum_to_q(q: float, entitlements: dict[str, float]) -> None:
    got = host_queue_depths(q, entitlements)
    assert set(got) == set(entitlements)
    assert math.fsum(got.values()) == pytest.approx(q, rel=1e-9)
    assert all(v >= 0 for v in got.values())
