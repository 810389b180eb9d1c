"""Approximate subset sum for pairwise migrations (BASIL §5 cites Przydatek's algorithm [16]).

Balancing two datastores perfectly means choosing disks whose loads add up to a target without
exceeding it: subset sum, NP-complete. Przydatek's "randomized greedy with local improvement" (RGLI)
runs a few independent trials, each with two phases: (1) take the items in random order and keep
each one that still fits; (2) for each kept item, swap in the largest unchosen item that fits in
its place and raises the sum. The best trial wins. Determinism comes from the caller's seeded RNG.

Beyond the textbook problem the balancer needs side constraints (a second capacity for GB, a cap on
the number of items, pairs that may not be chosen together), a preferred order for the first trial
(the candidate order of §5) and a cost to choose between trials that come within a tolerance of
the best sum. Those are all optional here.
"""

from __future__ import annotations

import bisect
import math
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

Cost = Callable[[Sequence[int]], tuple[float, ...]]


@dataclass(frozen=True, slots=True)
class SubsetChoice:
    """Chosen item indices (ascending), their value sum, and how many trials ran."""

    indices: tuple[int, ...]
    total: float
    trials_run: int


@dataclass(slots=True)
class _Limits:
    values: Sequence[float]
    target: float
    sizes: Sequence[float] | None
    size_limit: float
    count_limit: int
    conflicts: Mapping[int, frozenset[int]]


def _fits_with(
    limits: _Limits, chosen: set[int], total: float, size: float, *, item: int, leaving: int | None
) -> bool:
    """Whether *item* can join *chosen* (with *leaving* taken out) within every limit."""
    value = limits.values[item]
    new_total = total + value - (limits.values[leaving] if leaving is not None else 0.0)
    if new_total > limits.target:
        return False
    if limits.sizes is not None:
        new_size = size + limits.sizes[item] - (limits.sizes[leaving] if leaving is not None else 0.0)
        if new_size > limits.size_limit:
            return False
    clashes = limits.conflicts.get(item)
    if clashes:
        others = chosen - {leaving} if leaving is not None else chosen
        if not clashes.isdisjoint(others):
            return False
    return True


def _trial(limits: _Limits, order: Sequence[int], min_gain: float) -> tuple[list[int], float]:
    # Phase 1: greedy in the given order, keeping each item that still fits.
    chosen_order: list[int] = []
    chosen: set[int] = set()
    total = 0.0
    size = 0.0
    for item in order:
        if len(chosen_order) >= limits.count_limit:
            break
        if _fits_with(limits, chosen, total, size, item=item, leaving=None):
            chosen_order.append(item)
            chosen.add(item)
            total += limits.values[item]
            if limits.sizes is not None:
                size += limits.sizes[item]

    # Phase 2: local improvement. For each chosen item, the largest unchosen item that may replace
    # it without overshooting the target; unchosen items are kept sorted by value for bisection.
    # A swap must gain more than *min_gain* (the caller's tolerance), so an item chosen for the
    # caller's preference is not traded for a negligible gain.
    unchosen = sorted((limits.values[i], i) for i in order if i not in chosen)
    for position, item in enumerate(chosen_order):
        if not unchosen:
            break
        room = limits.target - total + limits.values[item]
        hi = bisect.bisect_right(unchosen, (room, math.inf))
        for j in range(hi - 1, -1, -1):
            value, candidate = unchosen[j]
            if value <= limits.values[item] + min_gain:
                break
            if _fits_with(limits, chosen, total, size, item=candidate, leaving=item):
                del unchosen[j]
                bisect.insort(unchosen, (limits.values[item], item))
                chosen.discard(item)
                chosen.add(candidate)
                chosen_order[position] = candidate
                total += value - limits.values[item]
                if limits.sizes is not None:
                    size += limits.sizes[candidate] - limits.sizes[item]
                break
    return chosen_order, total


def approximate_subset_sum(
    values: Sequence[float],
    target: float,
    rng: random.Random,
    *,
    trials: int = 8,
    preferred_order: Sequence[int] | None = None,
    sizes: Sequence[float] | None = None,
    size_limit: float = math.inf,
    count_limit: int | None = None,
    conflicts: Mapping[int, frozenset[int]] | None = None,
    cost: Cost | None = None,
    tolerance: float = 0.0,
) -> SubsetChoice:
    """A subset of *values* whose sum is as large as possible without exceeding *target* (RGLI).

    The first trial follows *preferred_order* when given, the others a random permutation drawn from
    *rng*. Sums within ``tolerance * target`` of each other count as equally good: phase 2 makes no
    swap that gains less, and among trials within it of the best the one with the lowest *cost*
    (then the larger sum, fewer items, lower indices) is returned. With ``tolerance=0`` this is
    Przydatek's RGLI. Items with a value of
    zero or less never help and are never chosen.
    """
    n = len(values)
    useful = [i for i in range(n) if values[i] > 0]
    if target <= 0 or not useful or trials < 1:
        return SubsetChoice((), 0.0, 0)
    limits = _Limits(
        values=values,
        target=target,
        sizes=sizes,
        size_limit=size_limit,
        count_limit=n if count_limit is None else count_limit,
        conflicts=conflicts or {},
    )
    if limits.count_limit <= 0:
        return SubsetChoice((), 0.0, 0)
    useful_set = set(useful)
    results: list[tuple[tuple[int, ...], float]] = []
    for t in range(trials):
        if t == 0 and preferred_order is not None:
            order = [i for i in preferred_order if i in useful_set]
        else:
            order = list(useful)
            rng.shuffle(order)
        chosen, total = _trial(limits, order, tolerance * target)
        results.append((tuple(sorted(chosen)), total))
        # A trial that lands on the target cannot be beaten on sum; without a cost to compare, it
        # ends the search. The preferred-order trial also ends it when within the tolerance: it is
        # then as good as any later one and follows the caller's preference.
        exact = total >= target * (1.0 - 1e-12)
        if (exact and cost is None) or (
            t == 0 and preferred_order is not None and total >= target * (1.0 - tolerance)
        ):
            break
    best = max(total for _, total in results)
    good = [r for r in results if r[1] >= best - tolerance * target]

    def rank(result: tuple[tuple[int, ...], float]) -> tuple[tuple[float, ...], float, int, tuple[int, ...]]:
        indices, total = result
        return (cost(indices) if cost is not None else ()), -total, len(indices), indices

    indices, total = min(good, key=rank)
    return SubsetChoice(indices, total, len(results))
