"""Przydatek's randomized greedy with local improvement (RGLI) for the pairwise subset sum."""

from __future__ import annotations

import itertools
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from basil.core.subset_sum import approximate_subset_sum


def best_subset_sum(values: list[float], target: float) -> float:
    """Brute force optimum, for checking on small instances."""
    best = 0.0
    for r in range(len(values) + 1):
        for combo in itertools.combinations(values, r):
            total = sum(combo)
            if best < total <= target:
                best = total
    return best


def test_finds_an_exact_subset() -> None:
    choice = approximate_subset_sum([8, 6, 5, 3, 1], 14, random.Random(0))
    assert choice.total == pytest.approx(14)
    assert sum([8, 6, 5, 3, 1][i] for i in choice.indices) == pytest.approx(14)


def test_local_improvement_swaps_in_a_larger_item() -> None:
    # Greedy in the given order takes 5 first and then nothing fits but 4; the swap phase replaces
    # 4 by the unchosen item that fills the gap best (5 + 6 = 11 = target).
    choice = approximate_subset_sum([5, 4, 6], 11, random.Random(0), trials=1, preferred_order=[0, 1, 2])
    assert choice.total == pytest.approx(11)
    assert choice.indices == (0, 2)


def test_nothing_fits() -> None:
    choice = approximate_subset_sum([5, 7], 3, random.Random(0))
    assert choice.indices == ()
    assert choice.total == 0.0


@pytest.mark.parametrize("target", [0.0, -1.0])
def test_non_positive_target_chooses_nothing(target: float) -> None:
    assert approximate_subset_sum([1, 2], target, random.Random(0)).indices == ()


def test_zero_values_are_never_chosen() -> None:
    choice = approximate_subset_sum([0.0, 3.0, 0.0], 5, random.Random(0))
    assert choice.indices == (1,)


def test_count_limit() -> None:
    choice = approximate_subset_sum([1, 1, 1, 1], 4, random.Random(0), count_limit=2)
    assert len(choice.indices) == 2


def test_size_limit_is_a_second_capacity() -> None:
    # The best value sum (9 = 4 + 5) needs 30 GB and 5 + 3 needs 21; with 20 GB allowed, 4 + 3 is best.
    values = [4.0, 5.0, 3.0]
    sizes = [10.0, 20.0, 1.0]
    choice = approximate_subset_sum(values, 9, random.Random(0), sizes=sizes, size_limit=20)
    assert choice.indices == (0, 2)
    assert choice.total == pytest.approx(7.0)


def test_conflicting_items_are_not_chosen_together() -> None:
    conflicts = {0: frozenset({1}), 1: frozenset({0})}
    choice = approximate_subset_sum([5, 5, 2], 10, random.Random(0), conflicts=conflicts)
    assert not {0, 1} <= set(choice.indices)
    assert choice.total == pytest.approx(7)


def test_cost_breaks_ties_within_the_tolerance() -> None:
    # Items 0 and 1 both fill the target; item 1 costs less, so it wins.
    costs = [10.0, 1.0]
    choice = approximate_subset_sum(
        [10.0, 10.0], 10, random.Random(0), cost=lambda idx: (sum(costs[i] for i in idx),), tolerance=0.0
    )
    assert choice.indices == (1,)


def test_tolerance_lets_a_cheaper_slightly_smaller_subset_win() -> None:
    values = [10.0, 9.8]
    costs = [100.0, 1.0]

    def cost(idx: tuple[int, ...] | list[int]) -> tuple[float, ...]:
        return (sum(costs[i] for i in idx),)

    strict = approximate_subset_sum(values, 10, random.Random(0), cost=cost, tolerance=0.0, trials=8)
    loose = approximate_subset_sum(values, 10, random.Random(0), cost=cost, tolerance=0.05, trials=8)
    assert strict.indices == (0,)
    assert loose.indices == (1,)


def test_same_seed_same_answer() -> None:
    rng_values = random.Random(42)
    values = [rng_values.uniform(1, 100) for _ in range(40)]
    a = approximate_subset_sum(values, 777.7, random.Random(5))
    b = approximate_subset_sum(values, 777.7, random.Random(5))
    assert a == b


def test_close_to_optimal_on_random_instances() -> None:
    # Przydatek reports small errors for RGLI on random instances; compare with brute force.
    rng = random.Random(2024)
    ratios = []
    for _ in range(60):
        values = [rng.uniform(1, 100) for _ in range(rng.randint(3, 12))]
        target = rng.uniform(0.2, 0.8) * sum(values)
        best = best_subset_sum(values, target)
        got = approximate_subset_sum(values, target, random.Random(rng.random())).total
        assert got <= best + 1e-9
        ratios.append(got / best if best else 1.0)
    assert min(ratios) >= 0.75
    assert sum(ratios) / len(ratios) >= 0.97


@settings(max_examples=200, deadline=None)
@given(
    values=st.lists(st.floats(min_value=0, max_value=1000, allow_nan=False), min_size=0, max_size=25),
    target=st.floats(min_value=-10, max_value=5000, allow_nan=False),
    count_limit=st.one_of(st.none(), st.integers(min_value=0, max_value=10)),
    size_limit=st.floats(min_value=0, max_value=500, allow_nan=False),
    seed=st.integers(min_value=0, max_value=2**32),
)
def test_never_exceeds_any_limit(
    values: list[float], target: float, count_limit: int | None, size_limit: float, seed: int
) -> None:
    sizes = [v % 97 for v in values]
    conflicts = {i: frozenset({i + 1}) for i in range(0, len(values) - 1, 3)}
    conflicts.update({i + 1: frozenset({i}) for i in range(0, len(values) - 1, 3)})
    choice = approximate_subset_sum(
        values,
        target,
        random.Random(seed),
        sizes=sizes,
        size_limit=size_limit,
        count_limit=count_limit,
        conflicts=conflicts,
    )
    chosen = set(choice.indices)
    assert len(chosen) == len(choice.indices)
    assert sum(values[i] for i in chosen) == pytest.approx(choice.total)
    assert choice.total <= max(target, 0.0) + 1e-6
    assert sum(sizes[i] for i in chosen) <= size_limit + 1e-6
    if count_limit is not None:
        assert len(chosen) <= count_limit
    for i in chosen:
        assert not conflicts.get(i, frozenset()) & chosen
