"""Algorithm 2 (the divvy) and the S-divvy: worked cases and properties that must hold for any input."""

from __future__ import annotations

import math
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from basil.srp.divvy import divvy, divvy_shares, divvy_with_demand

INF = math.inf
TOL = 1e-6


def close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=TOL)


@pytest.mark.parametrize(
    ("capacity", "r", "lim", "s", "expected"),
    [
        pytest.param(1200, [0, 0], [INF, INF], [3, 1], [900, 300], id="shares-only"),
        pytest.param(900, [400, 0], [600, 400], [1, 2], [500, 400], id="limit-binds-B"),
        pytest.param(900, [400, 0], [400, 600], [1, 2], [400, 500], id="reservation-binds-A"),
        pytest.param(300, [0, 0], [400, 100], [1, 1], [200, 100], id="figure3-F-reservation"),
        pytest.param(2300, [0, 0], [INF, 500], [3, 1], [1800, 500], id="figure3-root-limit"),
        pytest.param(100, [80, 80], [INF, INF], [1, 1], [80, 80], id="reservations-exceed-capacity"),
        pytest.param(1000, [0, 0], [100, 200], [1, 1], [100, 200], id="limits-below-capacity"),
        pytest.param(INF, [0, 10], [50, INF], [1, 1], [50, INF], id="infinite-capacity"),
        pytest.param(0, [0, 0], [10, 10], [1, 1], [0, 0], id="zero-capacity"),
        pytest.param(600, [100, 100, 100], [INF, INF, INF], [1, 1, 4], [100, 100, 400], id="two-at-r"),
    ],
)
def test_divvy_worked_cases(
    capacity: float, r: list[float], lim: list[float], s: list[float], expected: list[float]
) -> None:
    got = divvy(capacity, r, lim, s)
    assert len(got) == len(expected)
    for g, e in zip(got, expected, strict=True):
        assert (math.isinf(g) and math.isinf(e)) or close(g, e), (got, expected)


def test_divvy_of_nothing_is_empty() -> None:
    assert divvy(100, [], [], []) == []


@st.composite
def children(draw: st.DrawFn, max_size: int = 12) -> tuple[list[float], list[float], list[float]]:
    n = draw(st.integers(min_value=1, max_value=max_size))
    r, lim, s = [], [], []
    for _ in range(n):
        reservation = draw(st.sampled_from([0.0, 0.0, 50.0, 100.0]) | st.floats(0, 1000))
        if draw(st.booleans()):
            limit = INF
        else:
            limit = reservation + draw(st.sampled_from([0.0, 100.0]) | st.floats(0, 2000))
        r.append(reservation)
        lim.append(limit)
        s.append(draw(st.sampled_from([500.0, 1000.0, 2000.0]) | st.floats(1, 5000)))
    return r, lim, s


capacities = st.floats(0, 20000) | st.sampled_from([0.0, 100.0, 1000.0])


@settings(max_examples=300, deadline=None)
@given(kids=children(), capacity=capacities)
def test_every_child_between_reservation_and_limit(
    kids: tuple[list[float], list[float], list[float]], capacity: float
) -> None:
    r, lim, s = kids
    for a, lo, hi in zip(divvy(capacity, r, lim, s), r, lim, strict=True):
        assert lo - TOL <= a <= hi + TOL


@settings(max_examples=300, deadline=None)
@given(kids=children(), capacity=capacities)
def test_capacity_fully_handed_out_when_limits_allow(
    kids: tuple[list[float], list[float], list[float]], capacity: float
) -> None:
    r, lim, s = kids
    total = math.fsum(divvy(capacity, r, lim, s))
    if math.fsum(r) <= capacity:
        # All of it when the limits can take it, otherwise every child sits at its limit.
        assert close(total, min(capacity, math.fsum(lim))) or total == min(capacity, math.fsum(lim))
    else:
        assert close(total, math.fsum(r)), "reservations come first even above the capacity"


@settings(max_examples=300, deadline=None)
@given(kids=children(), capacity=capacities)
def test_children_strictly_between_bounds_share_in_proportion(
    kids: tuple[list[float], list[float], list[float]], capacity: float
) -> None:
    r, lim, s = kids
    got = divvy(capacity, r, lim, s)
    levels = [a / si for a, lo, hi, si in zip(got, r, lim, s, strict=True) if lo + TOL < a < hi - TOL]
    for level in levels:
        assert math.isclose(level, levels[0], rel_tol=1e-7), levels
    # And the water level is right: a child held at its reservation would be below it on shares,
    # a child held at its limit above it.
    if levels and math.fsum(r) <= capacity:
        for a, lo, hi, si in zip(got, r, lim, s, strict=True):
            if close(a, lo) and not close(a, hi):
                assert lo / si >= levels[0] * (1 - 1e-7) - TOL
            if close(a, hi) and not close(a, lo):
                assert hi / si <= levels[0] * (1 + 1e-7) + TOL


@settings(max_examples=200, deadline=None)
@given(kids=children(), capacity=capacities, seed=st.integers(0, 2**32 - 1))
def test_order_of_children_does_not_matter(
    kids: tuple[list[float], list[float], list[float]], capacity: float, seed: int
) -> None:
    r, lim, s = kids
    got = divvy(capacity, r, lim, s)
    order = list(range(len(r)))
    random.Random(seed).shuffle(order)
    shuffled = divvy(capacity, [r[i] for i in order], [lim[i] for i in order], [s[i] for i in order])
    for position, i in enumerate(order):
        assert math.isclose(shuffled[position], got[i], rel_tol=1e-9, abs_tol=1e-6)


@settings(max_examples=200, deadline=None)
@given(kids=children(), low=capacities, extra=st.floats(0, 5000))
def test_more_capacity_never_gives_a_child_less(
    kids: tuple[list[float], list[float], list[float]], low: float, extra: float
) -> None:
    r, lim, s = kids
    for a, b in zip(divvy(low, r, lim, s), divvy(low + extra, r, lim, s), strict=True):
        assert b >= a - TOL


@st.composite
def children_with_demand(
    draw: st.DrawFn,
) -> tuple[list[float], list[float], list[float], list[float]]:
    r, lim, s = draw(children())
    # eq. 3 keeps every demand within [r, lim]
    d = [
        lo + draw(st.floats(0, 1)) * ((hi if math.isfinite(hi) else lo + 3000) - lo)
        for lo, hi in zip(r, lim, strict=True)
    ]
    return r, lim, d, s


@settings(max_examples=300, deadline=None)
@given(kids=children_with_demand(), capacity=capacities)
def test_temporary_limits(
    kids: tuple[list[float], list[float], list[float], list[float]], capacity: float
) -> None:
    r, lim, d, s = kids
    got = divvy_with_demand(capacity, r, lim, d, s)
    short = math.fsum(d) < capacity
    for a, lo, hi, demand in zip(got, r, lim, d, strict=True):
        assert a >= lo - TOL
        if short:
            # Enough for every demand: each child gets at least its demand, at most its user limit.
            assert demand - TOL <= a <= hi + TOL
        else:
            # Demand is the temporary limit (§3.2), so capacity flows to where it is used.
            assert a <= demand + TOL
    if math.fsum(r) <= capacity and not short:
        assert close(math.fsum(got), capacity), "demands cover the capacity: all of it is handed out"


@settings(max_examples=200, deadline=None)
@given(kids=children_with_demand(), low=capacities, extra=st.floats(0, 5000))
def test_temporary_limits_keep_allocation_monotone_in_capacity(
    kids: tuple[list[float], list[float], list[float], list[float]], low: float, extra: float
) -> None:
    # This is what makes a VM's dynamic reservation <= entitlement <= dynamic limit.
    r, lim, d, s = kids
    small = divvy_with_demand(low, r, lim, d, s)
    large = divvy_with_demand(low + extra, r, lim, d, s)
    for a, b in zip(small, large, strict=True):
        assert b >= a - TOL


def test_paper_rule_alone_could_put_a_limit_below_a_reservation() -> None:
    # Why the demand becomes a temporary reservation when every demand fits (see divvy_with_demand):
    # with the user limits alone, a child with few shares gets little however much it demands.
    r, u, d, s = [0.0, 0.0], [INF, INF], [50.0, 10.0], [1.0, 1000.0]
    paper_l_divvy = divvy(100, r, u, s)  # sum of demands 60 < 100: the paper switches to user limits
    r_divvy = divvy(60, r, d, s)  # sum of demands 60 >= 60: demand is the temporary limit
    assert paper_l_divvy[0] < r_divvy[0]
    ours = divvy_with_demand(100, r, u, d, s)
    assert ours[0] >= divvy_with_demand(60, r, u, d, s)[0] == pytest.approx(50)


@pytest.mark.parametrize(
    ("parent", "shares", "expected"),
    [
        pytest.param(1000, [3, 1], [750, 250], id="figure3-root"),
        pytest.param(250, [1000, 1000], [125, 125], id="figure3-F"),
        pytest.param(750, [1, 2], [250, 500], id="figure3-E"),
    ],
)
def test_divvy_shares(parent: float, shares: list[float], expected: list[float]) -> None:
    assert divvy_shares(parent, shares) == pytest.approx(expected)


@settings(max_examples=100, deadline=None)
@given(parent=st.floats(1, 10000), shares=st.lists(st.floats(1, 5000), min_size=1, max_size=20))
def test_divvy_shares_adds_up_in_proportion(parent: float, shares: list[float]) -> None:
    got = divvy_shares(parent, shares)
    assert math.isclose(math.fsum(got), parent, rel_tol=1e-9)
    for g, s in zip(got, shares, strict=True):
        assert math.isclose(g / s, got[0] / shares[0], rel_tol=1e-9)
