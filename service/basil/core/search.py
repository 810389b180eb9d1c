"""Best-move-first search over every datastore pair of a pod, for both objectives of the balancer.

Each step takes the single move (one unit to one datastore) that improves the pod's objective the
most, over all sources and targets allowed by the hard constraints and the round's budgets, not
only the most and least loaded pair. When no single move improves it, swaps (a unit from x to y and
one from y to x, whose net effect is a load difference finer than any unit) are tried as local
improvement. A unit moves at most once per round.

Objectives:

- ``normalized_load`` (BASIL §5): lower f = σ/μ of N_j = ΣL/P_j (eq. 5). Moving a load ℓ from x to
  y changes ΣN by γℓ and ΣN² by αℓ + βℓ² (α = 2(N_y/P_y − N_x/P_x), β = 1/P_x² + 1/P_y²,
  γ = 1/P_y − 1/P_x), so f² + 1 = d·ΣN²/(ΣN)² is a ratio of a quadratic to the square of a line in ℓ.
  Its stationary point is ℓ* = (2γΣN² − αΣN)/(2βΣN − αγ), and in s = 1/ΣN' it is a quadratic, so
  over the loads of a source's units its minimum lies next to ℓ* or at the smallest or largest
  unit. Per pair, the continuous minimum over [smallest, largest] unit is a lower bound on f for
  every unit of that pair: pairs are visited in the order of that bound (a K×D array, vectorised)
  and the visit stops once no remaining pair's bound beats the best move found, which makes each
  step the exact best single move over the pairs considered. Up to ``_FULL_PAIRS`` datastores every
  pair is considered; above, the sources with the highest N and the highest gradient
  w_j = (N_j·ΣN − ΣN²)/P_j (moving ℓ from x to y changes f² by about 2dℓ(w_y − w_x)/(ΣN)³), and
  the targets with the lowest N and the lowest w, which is where the best move lies unless the pod
  is tiny; when they yield no move, four times as many are considered (once) before the round says
  no move helps. In such large pods a step also takes further moves from its
  pair order on datastores the step has not touched, each re-evaluated exactly and only while it gains at
  least ``_BATCH_RATIO`` of the step's best move. As in Algorithm 1, a move must also leave its
  target below its source's N before the move (f alone would also reward piling load onto a slow
  datastore).
- ``throughput`` (basil.core.predictive): raise the pod's predicted total IOPS by at least
  ``min_gain_pct``, which cuts its IOPS-weighted latency as much, with the fairness rule: no disk's
  predicted latency may exceed max(start × (1 + fairness_pct/100), start + fairness_ms, the pod's
  IOPS-weighted latency at the start), the start being its latency at the beginning of the round.
  Pairs are ordered by the gain of moving the continuous optimum amount of typical IO between them
  (equal marginal IOPS per IO on both sides), plus, for datastores holding sequential streams, the
  emptiest targets (isolating a stream gives back its sequential benefit); every pair of a pod of
  up to ``_EXACT_PAIRS`` datastores, and the best few of a larger one, are evaluated exactly. Above
  ``_FULL_PAIRS`` datastores the pairs are drawn from the sources with the highest N and the lowest
  marginal IOPS (where a unit's IO costs least) and the targets with the lowest N and the highest.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from itertools import chain, repeat
from operator import attrgetter, is_, is_not
from typing import cast

import numpy as np
import numpy.typing as npt

from basil.core.constraints import Budget, PlacementState, Unit, UnitColumns
from basil.core.normalized_load import Models, imbalance
from basil.core.params import (
    OBJECTIVE_AUTO,
    OBJECTIVE_NORMALIZED_LOAD,
    OBJECTIVE_THROUGHPUT,
    ORDER_LOAD_PER_GB,
    REASON_BALANCE_IO,
    BalancerParams,
)
from basil.core.plan import (
    KIND_MOVE,
    KIND_SWAP,
    STOP_BALANCED,
    STOP_BUDGET_GB,
    STOP_BUDGET_MOVES,
    STOP_NO_GAIN,
    STOP_NO_IMPROVING_MOVE,
    STOP_PREDICTED_LOSS,
    DatastoreEffect,
    DiskEffect,
    Move,
    PodOutcome,
    PodState,
)
from basil.core.pod_round import PodRound
from basil.core.predictive import (
    DiskDemand,
    DiskDemands,
    PredictiveState,
    allowed_latency,
    device_lines,
    latency_of,
    positioning_share,
    write_extra,
)
from basil.core.snapshot import Datastore
from basil.core.workload_model import FLAG_TEXT

Array = npt.NDArray[np.float64]

_EPSILON = 1e-12
_datastore_of = attrgetter("datastore")
_UNIT_COLUMNS = ("load", "disks", "size_gb", "iops", "pinned")  # the unit fields read as columns
# Below this f, f from ΣN and ΣN² carries rounding errors of its own size: the pod counts as even.
_F_FLOOR = 1e-4
_FULL_PAIRS = 64  # up to this many datastores, every source is paired with every target
_SOURCES = 12  # above it: this many sources by N and as many by gradient
_TARGETS = 24  # and this many targets by N and as many by gradient
# Rows of BestMoveSearch's per-datastore table a pair's target contributes (N, N/P, 1/P, 1/P², P).
_TARGET_ROWS = np.array([0, 1, 2, 3, 6], dtype=np.int64)[:, None]
_PAIRS_AT_ONCE = 128  # pairs taken from the bound array per partial sort
_SCAN = 24  # units skipped at most while looking for an allowed neighbour
_EXACT_UNITS = 48  # throughput: every unit of a source with at most this many is evaluated
_THROUGHPUT_PAIRS = 8  # throughput: pairs evaluated exactly per step (pods over _EXACT_PAIRS)
_EXACT_PAIRS = 12  # throughput: up to this many datastores every pair is evaluated exactly
_SWAP_PAIRS = 6  # pairs tried for swaps
_SWAP_UNITS = 32  # units per side tried for swaps
_MAX_WIDTH = 4  # large pods: at most this many times _SOURCES and _TARGETS (see _widen)
_BATCH_PER = 50  # pods of more than _FULL_PAIRS datastores: up to d / _BATCH_PER moves per step
_BATCH_RATIO = 0.8  # a further move of a step must gain at least this share of its best move's gain
# normalized_load: a swap (two copies for a net load finer than any unit) must lower f by at least this
# share of f; below it the pod gains nothing it can measure (the no-op swap of two near-identical disks).
SWAP_MARGIN = 0.01
# throughput: a datastore with a fitted line takes load only up to this multiple of the highest OIO the
# line was fitted on (its 90th percentile), or what it holds already: beyond, its prediction is an
# extrapolation (flash lines fitted at shallow queues under-state a deep queue's latency).
EXTRAPOLATION_LIMIT = 2.0
# auto, normalized_load chosen: a move may not leave the pod's predicted total IOPS more than this
# share below the round's start (the evaluation's own bar; the model's resolution is coarser than a
# fraction of a per cent, and a pod saturated everywhere is predicted flat while N-balancing evens it).
GUARD_PCT = 2.0
# auto: a pod of one device kind counts as mixed tiers when its modelled P differ by this factor or more
# (the paper's 3-, 6- and 9-disk LUNs of one kind differ by 3).
AUTO_P_RATIO = 8.0


def pod_objective(members: Sequence[Datastore], models: Models, params: BalancerParams) -> tuple[str, str]:
    """The objective a pod's round optimises, and why.

    A configured ``normalized_load`` or ``throughput`` is used as it is. ``auto`` (the default) picks
    per pod: ``throughput`` when the pod's datastores (not in maintenance) are of mixed tiers, that is
    of two or more configured device kinds, or with modelled P (not new) differing by ``AUTO_P_RATIO``
    or more; ``normalized_load`` otherwise (BASIL's goal, right when datastores differ only in size).
    Under ``auto`` a normalized_load round also stops before a move that would leave the pod's
    predicted total IOPS more than ``GUARD_PCT`` % below its start (a throughput round only moves for
    a predicted gain).
    """
    if params.objective != OBJECTIVE_AUTO:
        return params.objective, "configured"
    active = [ds for ds in members if not ds.maintenance]
    kinds = sorted({ds.device_kind for ds in active if ds.device_kind is not None})
    if len(kinds) >= 2:
        return OBJECTIVE_THROUGHPUT, f"auto: mixed device kinds ({', '.join(kinds)})"
    p = [
        models.datastores[ds.name].effective_performance
        for ds in active
        if ds.name in models.datastores and not models.datastores[ds.name].new
    ]
    p = [v for v in p if v > 0 and math.isfinite(v)]
    if p and max(p) >= AUTO_P_RATIO * min(p):
        return OBJECTIVE_THROUGHPUT, f"auto: P from {min(p):.3g} to {max(p):.3g} (×{AUTO_P_RATIO:g} or more)"
    return OBJECTIVE_NORMALIZED_LOAD, "auto: one tier"


@dataclass(slots=True)
class _Choice:
    gain: float
    unit: int
    x: int
    y: int
    other: int = -1  # the unit coming back from y to x in a swap


# A step's pairs in bound order: (bound, x, y, ideal amount, highest key).
_Row = tuple[float, int, int, float, float]
# A step's candidate pairs: sources, targets, and per pair (5 × K × D) the ideal amount, the two
# ends of its range, the highest key and the bound's gain (one table: rows are read by one gather).
_Pairs = tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], Array]


class Ranking:
    """Datastores ordered by a value that changes for a few of them at a time (N, as moves apply):
    (value, index) pairs kept sorted, so the smallest or largest k are read in O(k) and an update
    costs two bisections instead of a partition of every datastore. Ties: lower index first."""

    def __init__(self, values: Sequence[float], members: Iterable[int]) -> None:
        self.value = list(values)
        self.member = [False] * len(self.value)
        for i in members:
            self.member[i] = True
        self.rows = sorted((self.value[i], i) for i in range(len(self.value)) if self.member[i])

    def update(self, i: int, value: float) -> None:
        """Datastore *i*'s value is now *value*."""
        if self.member[i]:
            rows = self.rows
            del rows[bisect.bisect_left(rows, (self.value[i], i))]
            bisect.insort(rows, (value, i))
        self.value[i] = value

    def discard(self, i: int) -> None:
        """Datastore *i* leaves the ranking (its value is still tracked)."""
        if self.member[i]:
            del self.rows[bisect.bisect_left(self.rows, (self.value[i], i))]
            self.member[i] = False

    def smallest(self, k: int) -> list[int]:
        return [i for _, i in self.rows[:k]]

    def largest_among(self, k: int, member: Sequence[bool]) -> list[int]:
        """The *k* largest of those with *member* set, as :meth:`largest` of a ranking of them alone
        gives them (read from the top down: few are skipped when most are members)."""
        found: list[int] = []
        if k > 0:
            for _, i in reversed(self.rows):
                if member[i]:
                    found.append(i)
                    if len(found) == k:
                        break
        found.reverse()
        return found

    def largest(self, k: int) -> list[int]:
        """The *k* largest, as a set would hold them (of equal values, the higher index first)."""
        return [i for _, i in self.rows[max(len(self.rows) - k, 0) :]] if k > 0 else []


def _top(values: Array, count: int) -> npt.NDArray[np.int64]:
    """Indices of the *count* largest values, largest first (ties: lower index first)."""
    if count <= 0:
        return np.empty(0, dtype=np.int64)
    whole = count >= values.size
    picked = np.arange(values.size) if whole else np.argpartition(-values, count - 1)[:count]
    order: npt.NDArray[np.int64] = picked[np.lexsort((picked, -values[picked]))]
    return order


def pool_order(
    by_rank: npt.NDArray[np.int64],
    movable: npt.NDArray[np.bool_],
    keys: Array,
    src: npt.NDArray[np.int64],
    d: int,
) -> npt.NDArray[np.int64]:
    """The movable units sorted by datastore (*src*, below *d*), key and rank, as
    ``np.lexsort((rank, keys, src))`` over them gives it (*by_rank*: every unit, in rank order; ranks
    are unique, so the order is too): stable sorts of the units in rank order by key and then by
    datastore (as 16-bit codes when they fit, which numpy sorts by radix)."""
    ranked = by_rank[movable[by_rank]]
    by_key = ranked[np.argsort(keys[ranked], kind="stable")]
    codes = src[by_key]
    order: npt.NDArray[np.int64] = by_key[
        np.argsort(codes.astype(np.int16) if d <= 2**15 else codes, kind="stable")
    ]
    return order


def _f_from_sums(total: float, squares: float, d: int) -> float:
    if total <= 0:
        return 0.0
    ratio = squares / total / total
    if not math.isfinite(ratio):
        return 0.0
    return math.sqrt(max(d * ratio - 1.0, 0.0))


class BestMoveSearch(PodRound):
    """One pod's round under the best-move-first search (either objective)."""

    def __init__(
        self,
        *,
        name: str,
        members: Sequence[Datastore],
        units: Sequence[Unit],
        models: Models,
        state: PlacementState,
        budget: Budget,
        params: BalancerParams,
        disk_sizes: Mapping[str, float],
        demands: Mapping[str, DiskDemand],
        guard: bool = False,
        unit_columns: UnitColumns | None = None,
    ) -> None:
        super().__init__(
            name=name,
            members=members,
            models=models,
            state=state,
            budget=budget,
            params=params,
            disk_sizes=disk_sizes,
        )
        self.demands = demands
        self.guard = guard  # stop before a move that predicts the pod below its start (objective auto)
        self.throughput = params.objective == OBJECTIVE_THROUGHPUT
        d = self.d
        self.S: Array = np.zeros(d, dtype=np.float64)
        kinds = {ds.name: ds.device_kind for ds in members}
        devices = {ds.name: ds.spindles for ds in members}
        intercepts, slopes, self.intercept_sources = device_lines(
            models, self.names, [kinds.get(n) for n in self.names], [devices.get(n) for n in self.names]
        )
        self.pred = PredictiveState(intercepts, slopes)
        constants = params.workload_model.constants
        self.pred.extra = [write_extra(kinds.get(n), constants) for n in self.names]
        self.pred.positioning = [positioning_share(kinds.get(n)) for n in self.names]
        self.pred.k4 = constants.k4
        self.units: list[Unit] = []
        self.src: list[int] = []
        self.ua: list[float] = []
        self.ub: list[float] = []
        self.uo: list[float] = []
        self.ul: list[float] = []
        self.uwa: list[float] = []  # write parts of ua and ub (see predictive, "Writes per device kind")
        self.uwb: list[float] = []
        self._load_units(
            units, unit_columns if unit_columns is not None and unit_columns.units is units else None
        )
        self.line = self._line_oio()
        self.pred.anchor(self.line, (sum(self.ua), sum(self.uwa)))
        self.line_max = self._line_limits()
        self.movable = self._movable_pools()
        self.has_units = [bool(pool) for pool in self.movable]  # datastores with movable units
        self.with_units = sum(self.has_units)
        self.batch_size = d // _BATCH_PER if d > _FULL_PAIRS else 0
        self.width = 1  # multiplies _SOURCES and _TARGETS (see _widen)
        self.runners_up: list[_Row] | None = None
        # Large pods under normalized_load: N of every datastore ranked incrementally (the sources with
        # the highest N among those with movable units, the targets with the lowest; see
        # _sources_targets_n).
        self.by_n: Ranking | None = None
        self._per, self.N, self.key_min, self.key_max = self._table()
        # ΣL, P and N per datastore as Python floats too, for the reads and updates of one datastore at
        # a time (a Python float's arithmetic is the same IEEE double arithmetic as numpy's).
        self.s_of: list[float] = self.S.tolist()
        self.p_of: list[float] = self.P.tolist()
        self.n_of: list[float] = self.N.tolist()
        if not self.throughput and d > _FULL_PAIRS:
            self.by_n = Ranking(self.N.tolist(), range(d))
        self._resum()
        self.f = self._exact_f()
        self.cap, self.unit_cap = self._fairness_caps()
        self.iops_now = self.pred.total_iops()
        self.total_oio = sum(self.pred.O)
        self.before = self.pod_state()
        self.iops_before = self.iops_now
        self.latency_before = self.pred.weighted_latency()
        self.swaps = 0
        self.budget_blocked = False
        self.finish_if_too_few()

    def _table(self) -> tuple[Array, Array, Array, Array]:
        """Per-datastore rows the pair bounds gather from: N, 2N/P, 1/P, 1/P², smallest and largest
        movable key, P; and N, key_min and key_max as views of their rows, so the updates of a move
        keep the table current (2N/P is updated with N, by ``_set_s``)."""
        per: Array = np.empty((7, self.d), dtype=np.float64)
        per[2] = 1.0 / self.P
        per[3] = 1.0 / (self.P * self.P)
        per[6] = self.P
        self.key_min, self.key_max = per[4], per[5]
        self.key_min.fill(np.inf)
        self.key_max.fill(-np.inf)
        for j in range(self.d):
            self._bounds(j)
        np.divide(self.S, self.P, out=per[0])
        np.divide(per[0], self.P, out=per[1])
        per[1] *= 2.0
        return per, per[0], per[4], per[5]

    def _set_s(self, j: int, total: float) -> None:
        """Datastore *j*'s ΣL is now *total* (after a move): its N, 2N/P and place in the ranking
        follow, each as the table's whole-row operations compute it (IEEE division and doubling)."""
        self.s_of[j] = total
        self.S[j] = total
        p = self.p_of[j]
        n = total / p
        self.n_of[j] = n
        self.N[j] = n
        self._per[1, j] = n / p * 2.0
        if self.by_n is not None:
            self.by_n.update(j, n)

    def _fairness_caps(self) -> tuple[list[float], list[float]]:
        """Each datastore's cap on its predicted latency (the lowest allowance of any disk that is or
        was on it this round; none while empty) and each unit's own allowance, from where it started."""
        params = self.params
        lat0 = self.pred.latencies()
        pod = self.pred.weighted_latency()
        fair = [allowed_latency(float(v), params.fairness_pct, params.fairness_ms, pod) for v in lat0]
        caps = [fair[j] if self.pred.count[j] > 0 else math.inf for j in range(self.d)]
        return caps, [fair[self.src[u]] for u in range(len(self.units))]

    def _load_units(self, units: Sequence[Unit], given: UnitColumns | None) -> None:
        """This pod's units (movable or not), with their sums for both models; *given*: the columns
        *units* were built from (``build_unit_columns``), or None to read them from the units.

        A unit's sums are its disks' demands added in disk order from 0.0 (as ``unit_sums`` adds
        them), here as bincounts over every disk of the pod, which add in input order the same way."""
        where = list(map(self.position.get, given.datastore if given else map(_datastore_of, units)))
        if None in where:  # units on datastores outside this pod's balance (in maintenance)
            self.units = [u for u, i in zip(units, where, strict=True) if i is not None]
            self.src = [i for i in where if i is not None]
            given = None
        else:
            self.units = list(units)
            self.src = cast("list[int]", where)
        n = len(self.units)
        # The units' fields the search reads for all of them, as columns (a C loop each, or as given).
        if given is not None:
            self.unit_columns = {f: getattr(given, f) for f in _UNIT_COLUMNS if f != "disks"}
            self.unit_columns["disks"] = given.disks
            counts = given.disk_counts
        else:
            self.unit_columns = {f: list(map(attrgetter(f), self.units)) for f in _UNIT_COLUMNS}
            counts = np.fromiter(map(len, self.unit_columns["disks"]), dtype=np.int64, count=n)
        self.unit_load = np.array(self.unit_columns["load"], dtype=np.float64)
        if n:
            owner = np.repeat(np.arange(n, dtype=np.int64), counts)
            demands = self.demands
            if given is not None and isinstance(demands, DiskDemands) and demands.in_order(given.disk_ids):
                # The demands' table is in the snapshot's disk order: the units' disks by position.
                table = demands.table[:, given.disk_positions]
            elif isinstance(demands, DiskDemands):
                table = demands.columns(list(chain.from_iterable(self.unit_columns["disks"])))
            else:
                rows = [demands[disk] for disk in chain.from_iterable(self.unit_columns["disks"])]
                table = np.array([[getattr(r, f) for r in rows] for f in DiskDemands.FLOAT_FIELDS])
            fields = DiskDemands.FLOAT_FIELDS

            def summed(field: str) -> list[float]:
                weights = table[fields.index(field)]
                total: list[float] = np.bincount(owner, weights=weights, minlength=n).tolist()
                return total

            self.ua, self.ub, self.uo = summed("a"), summed("b"), summed("oio")
            self.ul, self.uwa, self.uwb = summed("line_oio"), summed("wa"), summed("wb")
        # Sums per datastore in unit order (bincount adds in input order, as a loop of += would).
        d = self.d
        src = np.array(self.src, dtype=np.int64)
        self.S = np.bincount(src, weights=self.unit_load, minlength=d).astype(np.float64)
        p = self.pred
        p.A = np.bincount(src, weights=self.ua, minlength=d).tolist()
        p.B = np.bincount(src, weights=self.ub, minlength=d).tolist()
        if any(p.extra):
            extra_a = np.bincount(src, weights=self.uwa, minlength=d).tolist()
            extra_b = np.bincount(src, weights=self.uwb, minlength=d).tolist()
            for j, e in enumerate(p.extra):
                if e:
                    p.A[j] += e * extra_a[j]
                    p.B[j] += e * extra_b[j]
        p.O = np.bincount(src, weights=self.uo, minlength=d).tolist()
        p.count = np.bincount(src, weights=counts, minlength=d).astype(int).tolist()

    def _line_oio(self) -> list[float]:
        """Per datastore, its disks' outstanding reads at the start (the device lines' axis)."""
        src = np.array(self.src, dtype=np.int64)
        per: list[float] = np.bincount(src, weights=self.ul, minlength=self.d).tolist()
        return per

    def _line_limits(self) -> list[float]:
        """Per datastore, the most outstanding reads the throughput objective may predict it at: see
        ``EXTRAPOLATION_LIMIT`` (no limit without a fitted OIO range)."""
        limits = [math.inf] * self.d
        for j, name in enumerate(self.names):
            fit = self.models.datastores[name].fit
            if fit is not None and fit.oio_range is not None and fit.oio_range[1] > 0:
                limits[j] = max(EXTRAPOLATION_LIMIT * fit.oio_range[1], self.line[j])
        return limits

    def _movable_pools(self) -> list[list[tuple[float, int, int]]]:
        """Movable units per datastore, sorted by the amount the objective moves (L, or OIO), then by
        the candidate order of §5 (rank), which also breaks ties between equally good moves."""
        n = len(self.units)
        column = self.unit_columns
        load = self.unit_load
        # Rank: the candidate order (Unit.preference, ties by unit index) as one stable lexsort.
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            if self.params.candidate_order == ORDER_LOAD_PER_GB:
                size = np.array(column["size_gb"], dtype=np.float64)
                density = np.where(size > 0, load / np.where(size > 0, size, 1.0), np.inf)
                by_preference = np.lexsort((size, -density))
            else:
                given = list(map(is_not, column["iops"], repeat(None)))
                known = np.array(given, dtype=np.bool_)
                iops = np.array(
                    column["iops"] if all(given) else [0.0 if v is None else v for v in column["iops"]],
                    dtype=np.float64,
                )
                ratio = np.where(known, np.where(load > 0, iops / np.where(load > 0, load, 1.0), np.inf), 0.0)
                by_preference = np.lexsort((-load, ratio, np.where(known, 0.0, 1.0)))
        rank = np.empty(n, dtype=np.int64)
        rank[by_preference] = np.arange(n, dtype=np.int64)
        self.rank = rank.tolist()
        keys = np.array(self.uo, dtype=np.float64) if self.throughput else load
        movable = np.array(list(map(is_, column["pinned"], repeat(None))), dtype=np.bool_)
        src = np.array(self.src, dtype=np.int64)
        # Each pool in (key, rank) order: the pools are consecutive runs of the pool order.
        order = pool_order(by_preference, movable, keys, src, self.d)
        rows = list(zip(keys[order].tolist(), rank[order].tolist(), order.tolist(), strict=True))
        ends = np.cumsum(np.bincount(src[order], minlength=self.d)).tolist()
        return [rows[start:end] for start, end in zip([0, *ends][:-1], ends, strict=True)]

    # --- bookkeeping -----------------------------------------------------------------------------

    def _key(self, uid: int) -> float:
        return self.uo[uid] if self.throughput else self.units[uid].load

    def _exact_f(self) -> float:
        """f from the sums, or, where their rounding matters (small f), from every N."""
        f = _f_from_sums(self.total, self.squares, self.d)
        return imbalance(self.N) if f < 1e-3 else f

    def _resum(self) -> None:
        self.total = float(np.add.reduce(self.N))  # N.sum() without its Python-level wrapper
        self.squares = float(np.dot(self.N, self.N))

    def pod_state(self) -> PodState:
        return PodState(imbalance(self.N), {n: float(v) for n, v in zip(self.names, self.N, strict=True)})

    def outcome(self) -> PodOutcome:
        return replace(
            super().outcome(),
            objective=self.params.objective,
            iops_before=self.iops_before,
            iops_after=self.pred.total_iops(),
            latency_ms_before=self.latency_before,
            latency_ms_after=self.pred.weighted_latency(),
            swaps=self.swaps,
        )

    # --- the step --------------------------------------------------------------------------------

    def step(self, first_number: int) -> list[Move]:
        """The best single move (or swap) of this pod now; marks the pod done when there is none."""
        threshold = self.params.imbalance_threshold
        if not self.throughput and self.f <= threshold:
            self._finish(STOP_BALANCED, f"imbalance {self.f:.3f} is at or below the threshold {threshold:g}")
            return []
        if self.budget.out_of_moves:
            self._finish(STOP_BUDGET_MOVES, "the round's move budget is spent")
            return []
        if not self.throughput and self.f < _F_FLOOR:
            self._finish(
                STOP_NO_IMPROVING_MOVE,
                f"imbalance {self.f:.2g} is below {_F_FLOOR:g}, where rounding is as large as any gain",
            )
            return []
        self.budget_blocked = False
        choice = self._best_move()
        while choice is None and self._widen():
            choice = self._best_move()
        if choice is not None:
            return [] if self._loses(choice) else self._apply_step(choice, first_number)
        swap = self._best_swap()
        if swap is not None:
            return [] if self._loses(swap) else self._apply_swap(swap, first_number)
        self._finish_without_move()
        return []

    def _apply_step(self, choice: _Choice, first_number: int) -> list[Move]:
        moves = [self._apply(choice.unit, choice.x, choice.y, number=first_number)]
        if self.runners_up is not None:
            moves += self._batch(choice.gain, {choice.x, choice.y}, first_number + 1)
        return moves

    def _loses(self, choice: _Choice) -> bool:
        """Under the guard (objective auto, normalized_load chosen): whether *choice* would leave the
        pod's predicted total IOPS below its start; if so the pod's round ends here."""
        if not self.guard or self.throughput:
            return False
        u, v = choice.unit, choice.other
        sums = self._sums(u, v)
        gain = self._iops_gain(choice.x, choice.y, sums, cap_x=math.inf, cap_y=math.inf)
        after = self.iops_now + (gain or 0.0)
        if after >= self.iops_before * (1.0 - GUARD_PCT / 100.0):
            return False
        self._finish(
            STOP_PREDICTED_LOSS,
            f"the next move would lower f to {self.f - choice.gain:.3f} but leave the pod's predicted "
            f"IOPS at {after:.0f}, more than {GUARD_PCT:g} % below the {self.iops_before:.0f} it started "
            "the round with",
        )
        return True

    def _batch(self, first_gain: float, used: set[int], number: int) -> list[Move]:
        """In a large pod, more moves from the same step's pair order: each on datastores no move of
        this step touched, re-evaluated exactly in the current state, and taken only while it gains
        at least ``_BATCH_RATIO`` of the step's best move (so the order stays close to best-first)."""
        moves: list[Move] = []
        floor = _BATCH_RATIO * first_gain
        assert self.runners_up is not None
        for bound, x, y, ideal, high in self.runners_up:
            if len(moves) >= self.batch_size or bound < floor:
                break
            if x in used or y in used or not self.movable[x]:
                continue
            if self.f <= self.params.imbalance_threshold or self.budget.out_of_moves:
                break
            best: _Choice | None = None
            for uid in self._neighbours(x, y, ideal, high, 1):
                g = self._n_gain(x, y, self.units[uid].load)
                if g is not None and g >= floor and self._better(g, uid, best):
                    best = _Choice(g, uid, x, y)
            if best is not None:
                if self._loses(best):
                    break
                moves.append(self._apply(best.unit, x, y, number=number + len(moves)))
                used |= {x, y}
        return moves

    def _min_gain(self) -> float:
        if self.throughput:
            return max(self.params.min_gain_pct / 100.0 * self.iops_now, _EPSILON)
        return _EPSILON

    def _finish_without_move(self) -> None:
        if self.budget_blocked:
            self._finish(
                STOP_BUDGET_GB, "the disks that could still improve the pod exceed the round's GB budget"
            )
            return
        if self.throughput:
            self._finish(
                STOP_NO_GAIN,
                f"no move or swap allowed by the constraints, the fairness rule and the device lines' "
                f"fitted ranges (×{EXTRAPOLATION_LIMIT:g}) raises the pod's "
                f"predicted IOPS ({self.iops_now:.0f}) by {self.params.min_gain_pct:g} % or more",
            )
            return
        threshold = self.params.imbalance_threshold
        self._finish_no_improving_move(
            f"no eligible disk or swap of disks lowers the imbalance {self.f:.3f} any further "
            f"(threshold {threshold:g})"
        )

    # --- constraints -------------------------------------------------------------------------------

    def _allowed(self, uid: int, y: int) -> bool:
        unit = self.units[uid]
        if not self.state.allows(unit, self.names[y]):
            return False
        if not self.budget.allows(unit):
            self.budget_blocked = True
            return False
        return True

    # --- exact gains -------------------------------------------------------------------------------

    def _n_gain(self, x: int, y: int, amount: float) -> float | None:
        """Fall of f when load *amount* goes from x to y (negative amount: from y to x); None when
        the target would end at or above the source's N before the move."""
        nx_old, ny_old = self.n_of[x], self.n_of[y]
        nx = (self.s_of[x] - amount) / self.p_of[x]
        ny = (self.s_of[y] + amount) / self.p_of[y]
        if amount > 0 and ny >= nx_old:
            return None
        if amount < 0 and nx >= ny_old:
            return None
        total = self.total + (nx - nx_old) + (ny - ny_old)
        squares = self.squares + (nx * nx - nx_old * nx_old) + (ny * ny - ny_old * ny_old)
        return self.f - _f_from_sums(total, squares, self.d)

    def _iops_gain(
        self,
        x: int,
        y: int,
        sums: tuple[float, float, float, float, float],
        *,
        cap_x: float,
        cap_y: float,
        reads: float = 0.0,
    ) -> float | None:
        """Predicted IOPS gained when sums (da, db, do, dwa, dwb) and outstanding reads *reads* go from
        x to y; None when a disk on either side would exceed its fairness cap, or a side would be predicted
        beyond its line's limit (``EXTRAPOLATION_LIMIT``)."""
        if reads > 0 and self.line[y] + reads > self.line_max[y]:
            return None
        if reads < 0 and self.line[x] - reads > self.line_max[x]:
            return None
        p = self.pred
        da, db, do, dwa, dwb = sums
        ex, ey = p.extra[x], p.extra[y]
        ax = p.A[x] - (da + ex * dwa if ex else da)
        bx = p.B[x] - (db + ex * dwb if ex else db)
        ay = p.A[y] + (da + ey * dwa if ey else da)
        by = p.B[y] + (db + ey * dwb if ey else db)
        ox, oy = p.O[x] - do, p.O[y] + do
        a_x, s_x, a_y, s_y = p.a[x], p.s[x], p.a[y], p.s[y]
        lx = latency_of(a_x, s_x, ax, bx, ox, share=p.a_pos[x], k4=p.k4)
        ly = latency_of(a_y, s_y, ay, by, oy, share=p.a_pos[y], k4=p.k4)
        if (ox > 0 and lx > cap_x + 1e-9) or (oy > 0 and ly > cap_y + 1e-9):
            return None
        before = p.iops(x) + p.iops(y)
        after = (1000.0 * ox / lx if ox > 0 else 0.0) + (1000.0 * oy / ly if oy > 0 else 0.0)
        return after - before

    def _sums(self, u: int, v: int = -1) -> tuple[float, float, float, float, float]:
        """What goes from x to y when unit *u* moves (and unit *v* comes back, in a swap): the
        differences of their A, B, O and write parts."""
        if v < 0:
            return (self.ua[u], self.ub[u], self.uo[u], self.uwa[u], self.uwb[u])
        return (
            self.ua[u] - self.ua[v],
            self.ub[u] - self.ub[v],
            self.uo[u] - self.uo[v],
            self.uwa[u] - self.uwa[v],
            self.uwb[u] - self.uwb[v],
        )

    def _move_gain(self, uid: int, x: int, y: int) -> float | None:
        if self.throughput:
            cap_y = min(self.cap[y], self.unit_cap[uid])
            sums = self._sums(uid)
            return self._iops_gain(x, y, sums, cap_x=self.cap[x], cap_y=cap_y, reads=self.ul[uid])
        return self._n_gain(x, y, self.units[uid].load)

    def _swap_gain(self, u: int, x: int, v: int, y: int) -> float | None:
        if self.throughput:
            cap_x = min(self.cap[x], self.unit_cap[v])
            cap_y = min(self.cap[y], self.unit_cap[u])
            sums = self._sums(u, v)
            return self._iops_gain(x, y, sums, cap_x=cap_x, cap_y=cap_y, reads=self.ul[u] - self.ul[v])
        amount = self.units[u].load - self.units[v].load
        if amount == 0:
            return None
        gain = self._n_gain(x, y, amount)
        if gain is None or gain < SWAP_MARGIN * self.f:
            return None
        return gain

    # --- candidate pairs ---------------------------------------------------------------------------

    def _widen(self) -> bool:
        """Consider four times as many sources and targets from now on; False when all already are,
        or when the widest set (``_MAX_WIDTH``) is reached: beyond it each step of a large pod's
        tail would cost d² evaluations for gains of a hundredth of a per cent."""
        if self.d <= _FULL_PAIRS or _SOURCES * self.width >= self.d or self.width >= _MAX_WIDTH:
            return False
        self.width *= 4
        return True

    def _sources_targets(self, score: Array, low_is_target: bool) -> tuple[list[int], list[int]]:
        """Every datastore as source and target in small pods; in large ones the likeliest few (more
        once those yield no move: see :meth:`_widen`)."""
        has = self.key_max > -np.inf
        if self.d <= _FULL_PAIRS or _SOURCES * self.width >= self.d:
            return np.flatnonzero(has).tolist(), list(range(self.d))
        count = int(np.count_nonzero(has))
        if count == 0:
            return [], []
        k = min(_SOURCES * self.width, count)
        # Sources: the highest N and the score's other end from the targets' among datastores with
        # movable units, as the lowest of a key for argpartition (+inf for the others). A move of ℓ
        # from x to y changes the objective by about ℓ·(score_y − score_x) in its own direction:
        # normalized_load (w, the gradient of f² per unit moved in) lowers f most from the highest w
        # to the lowest; throughput (marginal IOPS per IO) gains most from the lowest marginal IOPS
        # (where a unit's IO costs least) to the highest.
        low_n = np.where(has, -self.N, np.inf)
        low_s = np.where(has, -score if low_is_target else score, np.inf)
        # Unions as masks: the indices in increasing order, as np.unique would give them, in O(d).
        chosen = np.zeros(self.d, dtype=np.bool_)
        chosen[np.argpartition(low_n, k - 1)[:k]] = True
        chosen[np.argpartition(low_s, k - 1)[:k]] = True
        sources: list[int] = np.flatnonzero(chosen & has).tolist()
        j = min(_TARGETS * self.width, self.d - 1)
        t_score = score if low_is_target else -score
        chosen[:] = False
        chosen[np.argpartition(self.N, j)[: j + 1]] = True
        chosen[np.argpartition(t_score, j)[: j + 1]] = True
        targets: list[int] = np.flatnonzero(chosen).tolist()
        return sources, targets

    def _neighbours(self, x: int, y: int, ideal: float, high: float, per_side: int) -> list[int]:
        """Units of x allowed on y: *per_side* nearest below and above *ideal* (keys ≤ *high*), and the
        smallest and largest of them; among units of equal key, the first in candidate order."""
        pool = self.movable[x]
        end = bisect.bisect_right(pool, (high, math.inf, 0))
        if end == 0:
            return []
        mid = bisect.bisect_left(pool, (ideal, -1, -1), 0, end)
        found: list[int] = []

        def first_of_key(i: int) -> int:
            # The first allowed unit of pool[i]'s key in candidate order (pool[i] itself is allowed).
            key = pool[i][0]
            for j in range(bisect.bisect_left(pool, (key, -1, -1), 0, i), i):
                if self._allowed(pool[j][2], y):
                    return pool[j][2]
            return pool[i][2]

        def scan(indices: range) -> None:
            taken = skipped = 0
            for i in indices:
                uid = pool[i][2]
                if self._allowed(uid, y):
                    found.append(first_of_key(i))
                    taken += 1
                    if taken >= per_side:
                        return
                else:
                    skipped += 1
                    if skipped >= _SCAN:
                        return

        scan(range(mid - 1, -1, -1))
        scan(range(mid, end))
        scan(range(0, end))
        scan(range(end - 1, -1, -1))
        return found

    def _better(self, gain: float, uid: int, best: _Choice | None) -> bool:
        """Higher gain wins; of equal gains (to rounding) the smaller amount moved (less disturbance,
        and Algorithm 1's preference for not overshooting), then the unit first in candidate order."""
        if best is None:
            return True
        tolerance = 1e-12 * max(1.0, abs(best.gain))
        if gain > best.gain + tolerance:
            return True
        if gain < best.gain - tolerance:
            return False
        return (self._key(uid), self.rank[uid]) < (self._key(best.unit), self.rank[best.unit])

    def _best_move(self) -> _Choice | None:
        self.runners_up = None
        if self.throughput:
            return self._best_move_throughput()
        return self._best_move_n()

    def _sources_targets_n(self, w: Array) -> tuple[list[int], list[int]]:
        """:meth:`_sources_targets` for normalized_load (score *w*, low is target), the same sets with
        one partition of every datastore fewer: the highest N among datastores with movable units read
        from an incremental ranking instead of a partition."""
        if self.by_n is None or _SOURCES * self.width >= self.d:
            return self._sources_targets(w, low_is_target=True)
        count = self.with_units
        if count == 0:
            return [], []
        k = min(_SOURCES * self.width, count)
        j = min(_TARGETS * self.width, self.d - 1)
        # The highest w among datastores with movable units: the very partition _sources_targets makes
        # (the same array, so the same choice among ties; while every datastore has movable units,
        # the array is −w itself).
        low_w = -w if count == self.d else np.where(self.key_max > -np.inf, -w, np.inf)
        sources_w = np.argpartition(low_w, k - 1)[:k].tolist()
        sources = sorted({*self.by_n.largest_among(k, self.has_units), *sources_w})
        # The j + 1 lowest N: read from the ranking when they are the only j + 1 values that low (no
        # tie across the cut, so any partition gives the same set), else the partition's choice.
        rows = self.by_n.rows
        if j + 1 >= len(rows) or rows[j][0] < rows[j + 1][0]:
            low_n = self.by_n.smallest(j + 1)
        else:
            low_n = np.argpartition(self.N, j)[: j + 1].tolist()
        targets = sorted({*low_n, *np.argpartition(w, j)[: j + 1].tolist()})
        return sources, targets

    def _pair_bounds_n(self) -> tuple[Array, _Pairs] | None:
        """Per (source, target): the lowest f any amount between its smallest and largest unit could
        reach (a lower bound for every unit), and the amount reaching it."""
        total, squares = self.total, self.squares
        w = (self.N * total - squares) / self.P
        sources, targets = self._sources_targets_n(w)
        if not sources:
            return None
        # Per-datastore terms gathered once per side (each element as the pairwise formulas of the
        # module docstring compute it: α = 2(N_y/P_y − N_x/P_x), β = 1/P_x² + 1/P_y², γ = 1/P_y − 1/P_x;
        # doubling is exact, so 2(a − b) = 2a − 2b and 2βT = β(2T) to the bit).
        per = self._per
        xs, ys = np.array(sources, dtype=np.int64), np.array(targets, dtype=np.int64)
        nx, qx, ix, i2x, lmin, lmax = per[:6, xs][:, :, None]
        ny, qy, iy, i2y, py = per[_TARGET_ROWS, ys][:, None, :]
        alpha = qy - qx
        beta = i2x + i2y
        gamma = iy - ix
        # The per-pair table the step reads its rows from: amounts (ideal, lowest, highest), high, gain.
        table = np.empty((5, len(sources), len(targets)), dtype=np.float64)
        high = np.minimum(lmax, (nx - ny) * py, out=table[3])
        valid = high >= lmin
        valid[xs[:, None] == ys[None, :]] = False
        den = beta * (2.0 * total) - alpha * gamma
        # f² + 1 over d at the stationary point and both ends, in one array (amount[0] the point).
        amount = table[:3]
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            star = np.where(np.abs(den) > 1e-300, (gamma * (2.0 * squares) - alpha * total) / den, lmin)
            top = np.maximum(high, lmin)
            np.minimum(np.maximum(star, lmin, out=star), top, out=amount[0])  # clip to [lmin, top]
            amount[1], amount[2] = lmin, top
            t = gamma * amount
            t += total
            t *= t
            h = alpha * amount
            h += squares
            square = beta * amount
            square *= amount
            h += square
            h /= t
            best = np.minimum(h[0], h[1])
            np.minimum(best, h[2], out=best)
            best *= self.d
            best -= 1.0
            np.maximum(best, 0.0, out=best)
            bound = np.sqrt(best, out=best)
            valid &= np.isfinite(bound)
            gain = np.subtract(self.f, bound, out=table[4])
        gain[~valid] = -np.inf
        return gain, (xs, ys, table)

    @staticmethod
    def _rows(order: npt.NDArray[np.int64], pairs: _Pairs) -> list[_Row]:
        """The pairs at *order* of the flat bound array, as rows (bound, x, y, ideal amount, highest key)."""
        sources, targets, table = pairs
        i, j = np.divmod(order, len(targets))
        star, _, _, high, bound = table.reshape(5, -1)[:, order].tolist()
        return list(zip(bound, sources[i].tolist(), targets[j].tolist(), star, high, strict=True))

    def _best_move_n(self) -> _Choice | None:
        bounds = self._pair_bounds_n()
        if bounds is None:
            return None
        gain, pairs = bounds
        flat = gain.ravel()
        positive = int(np.count_nonzero(flat > _EPSILON))
        if positive == 0:
            return None
        best: _Choice | None = None
        rows: list[_Row] = []  # the pairs in bound order, as far as sorted
        taken = 0
        # The first chunk: as many pairs as the step's runners-up may take (the visit seldom goes
        # past the first two pairs); the order does not depend on the chunks.
        chunk = 4 * self.batch_size or _PAIRS_AT_ONCE
        while taken < positive:
            count = min(chunk, positive - taken)
            chunk = _PAIRS_AT_ONCE
            rows[taken:] = self._rows(_top(flat, taken + count)[taken:], pairs)
            for bound, x, y, ideal, high_key in rows[taken:]:
                if bound <= _EPSILON or (best is not None and bound <= best.gain):
                    if self.batch_size and best is not None:
                        self.runners_up = self._runners_up(flat, rows, best.gain, pairs)
                    return best
                for uid in self._neighbours(x, y, ideal, high_key, 1):
                    g = self._n_gain(x, y, self.units[uid].load)
                    if g is not None and g > _EPSILON and self._better(g, uid, best):
                        best = _Choice(g, uid, x, y)
            taken += count
        return best

    def _runners_up(self, flat: Array, rows: list[_Row], best_gain: float, pairs: _Pairs) -> list[_Row]:
        """The pairs whose bound beats ``_BATCH_RATIO`` of the step's best gain, at most
        4 × batch_size, in bound order: a prefix of the rows already sorted when they reach past it
        (every pair not among them is bounded by the last of them)."""
        floor = _BATCH_RATIO * best_gain
        limit = 4 * self.batch_size
        above = 0
        for row in rows:
            if not row[0] > floor:
                break
            above += 1
        if above < len(rows) or above >= limit:
            return rows[: min(above, limit)]
        keep = min(int(np.count_nonzero(flat > floor)), limit)
        return self._rows(_top(flat, keep), pairs)

    def _throughput_pairs(self) -> tuple[list[tuple[int, int]], dict[tuple[int, int], float]]:
        """Pairs to evaluate exactly, likeliest first, with the continuous ideal amount of OIO."""
        p = self.pred
        lat, slope, big_o, big_b = p.arrays()
        eff = np.maximum(lat - slope * big_o, 1e-9 * lat)  # intercept seen by one more typical IO
        marginal = 1000.0 * eff / (lat * lat)
        sources, targets = self._sources_targets(marginal, low_is_target=False)
        if not sources:
            return [], {}
        xs = np.array(sources, dtype=np.int64)[:, None]
        ys = np.array(targets, dtype=np.int64)[None, :]
        lx, ly = lat[xs], lat[ys]
        sx, sy = slope[xs], slope[ys]
        rx, ry = np.sqrt(eff[xs]), np.sqrt(eff[ys])
        ox, oy = big_o[xs], big_o[ys]
        omax = self.key_max[xs]
        cap = np.array([self.cap[y] for y in targets], dtype=np.float64)[None, :]
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            q = (ry * lx - rx * ly) / (ry * sx + rx * sy)
            q = np.clip(q, 0.0, np.minimum(omax, np.maximum((cap - ly) / sy, 0.0)))
            gain = (
                1000.0 * (ox - q) / (lx - sx * q)
                + 1000.0 * (oy + q) / (ly + sy * q)
                - 1000.0 * ox / lx
                - 1000.0 * oy / ly
            )
        gain = np.where((xs != ys) & np.isfinite(gain), gain, -np.inf)
        flat = gain.ravel()
        # Small pods: every pair exactly; large ones: the likeliest few.
        count = flat.size if self.d <= _EXACT_PAIRS else min(_THROUGHPUT_PAIRS, flat.size)
        top = np.argpartition(-flat, count - 1)[:count] if count < flat.size else np.arange(flat.size)
        top = top[np.argsort(-flat[top], kind="stable")]
        width = len(targets)
        pairs: list[tuple[int, int]] = []
        ideal: dict[tuple[int, int], float] = {}
        for k in top.tolist():
            if not math.isfinite(float(flat[k])):
                continue
            i, j = divmod(k, width)
            pair = (sources[i], targets[j])
            pairs.append(pair)
            ideal[pair] = float(q[i, j])
        # A datastore holding a sequential stream among other IO: its streams alone on the emptiest
        # datastores (where they get their sequential benefit back).
        emptiest = np.argsort(big_o, kind="stable")[:2].tolist()
        for x in sources:
            if big_b[x] > 0 and p.count[x] > 1:
                for y in emptiest:
                    if y != x and (x, y) not in ideal:
                        pairs.append((x, y))
                        ideal[(x, y)] = 0.0
        return pairs, ideal

    def _throughput_units(self, x: int, y: int, ideal: float) -> list[int]:
        pool = self.movable[x]
        if len(pool) <= _EXACT_UNITS:
            return [uid for _, _, uid in pool if self._allowed(uid, y)]
        found = self._neighbours(x, y, ideal, math.inf, 3)
        found += [uid for _, _, uid in pool if self.ub[uid] > 0 and self._allowed(uid, y)][:8]
        return found

    def _best_move_throughput(self) -> _Choice | None:
        pairs, ideal = self._throughput_pairs()
        floor = self._min_gain()
        best: _Choice | None = None
        for x, y in pairs:
            for uid in self._throughput_units(x, y, ideal[(x, y)]):
                g = self._move_gain(uid, x, y)
                if g is not None and g >= floor and self._better(g, uid, best):
                    best = _Choice(g, uid, x, y)
        return best

    # --- swaps ---------------------------------------------------------------------------------------

    def _swap_pairs(self) -> list[tuple[int, int, float]]:
        if self.throughput:
            pairs, ideal = self._throughput_pairs()
            return [(x, y, ideal[(x, y)]) for x, y in pairs[:_SWAP_PAIRS]]
        # Pairs with the widest gap in N first; the net load a swap should move is the amount that
        # equalises the pair, (N_x − N_y)/(1/P_x + 1/P_y).
        total, squares = self.total, self.squares
        sources, targets = self._sources_targets((self.N * total - squares) / self.P, low_is_target=True)
        if not sources:
            return []
        xs = np.array(sources, dtype=np.int64)[:, None]
        ys = np.array(targets, dtype=np.int64)[None, :]
        gap = self.N[xs] - self.N[ys]
        flat = np.where(gap > 0, gap, -np.inf).ravel()
        width = len(targets)
        found = []
        for k in _top(flat, min(_SWAP_PAIRS, flat.size)).tolist():
            if flat[k] > 0:
                x, y = sources[k // width], targets[k % width]
                found.append((x, y, float(flat[k]) / (1.0 / float(self.P[x]) + 1.0 / float(self.P[y]))))
        return found

    def _swap_order(self, u: int, x: int, v: int, y: int) -> tuple[int, int] | None:
        """Which half of the swap goes first so that each vMotion meets the constraints when it runs
        (u first: 0, v first: 1), preferring u first; None when neither order works."""
        if self.new[x] or self.new[y] or not self.budget.allows_pair(self.units[u], self.units[v]):
            return None
        state, ux, vy = self.state, self.units[u], self.units[v]
        nx, ny = self.names[x], self.names[y]
        for first in (0, 1):
            a, b, a_from, a_to = (ux, vy, nx, ny) if first == 0 else (vy, ux, ny, nx)
            if not state.allows(a, a_to):
                continue
            state.apply(a, a_from, a_to)
            ok = state.allows(b, a_from)
            state.apply(a, a_to, a_from)
            if ok:
                return (first, 0)
        return None

    def _best_swap(self) -> _Choice | None:
        best: _Choice | None = None
        floor = self._min_gain()
        for x, y, ideal in self._swap_pairs():
            xs = [uid for _, _, uid in self.movable[x]]
            ys = self.movable[y]
            if not xs or not ys:
                continue
            if len(xs) > _SWAP_UNITS:
                mid = bisect.bisect_left(self.movable[x], (ideal, -1, -1))
                low = max(0, mid - _SWAP_UNITS // 2)
                xs = xs[low : low + _SWAP_UNITS]
            for u in xs:
                if self.throughput or len(ys) <= _SWAP_UNITS:
                    partners = [uid for _, _, uid in ys[:_SWAP_UNITS]]
                else:
                    # v whose key is nearest key(u) − ideal: the net amount moved is then the ideal one.
                    want = self._key(u) - ideal
                    at = bisect.bisect_left(ys, (want, -1, -1))
                    partners = [ys[i][2] for i in range(max(0, at - 2), min(len(ys), at + 2))]
                for v in partners:
                    g = self._swap_gain(u, x, v, y)
                    if g is None or g < floor or (best is not None and g <= best.gain):
                        continue
                    if self._swap_order(u, x, v, y) is None:
                        continue
                    best = _Choice(g, u, x, y, other=v)
        return best

    # --- applying --------------------------------------------------------------------------------------

    def _take(self, uid: int, x: int) -> None:
        pool = self.movable[x]
        pool.pop(bisect.bisect_left(pool, (self._key(uid), self.rank[uid], uid)))
        self._bounds(x)

    def _bounds(self, x: int) -> None:
        """Smallest and largest key of x's movable units (−inf largest: none left)."""
        pool = self.movable[x]
        self.key_min[x] = pool[0][0] if pool else np.inf
        self.key_max[x] = pool[-1][0] if pool else -np.inf
        if not pool and self.has_units[x]:
            self.has_units[x] = False
            self.with_units -= 1

    def _apply_swap(self, choice: _Choice, first_number: int) -> list[Move]:
        u, x, v, y = choice.unit, choice.x, choice.other, choice.y
        order = self._swap_order(u, x, v, y)
        assert order is not None  # checked when the swap was chosen
        self.swaps += 1
        halves = [(u, x, y), (v, y, x)] if order[0] == 0 else [(v, y, x), (u, x, y)]
        moves = []
        for k, (uid, a, b) in enumerate(halves):
            self._take(uid, a)
            moves.append(self._commit(uid, a, b, number=first_number + k, kind=KIND_SWAP))
        return moves

    def _apply(self, uid: int, x: int, y: int, *, number: int) -> Move:
        self._take(uid, x)
        return self._commit(uid, x, y, number=number, kind=KIND_MOVE)

    def _commit(self, uid: int, x: int, y: int, *, number: int, kind: str) -> Move:
        unit = self.units[uid]
        p = self.pred
        nx_before, ny_before, f_before = self.n_of[x], self.n_of[y], self.f
        lat_x0, iops_x0 = p.latency_iops(x)
        lat_y0, iops_y0 = p.latency_iops(y)
        pod_iops0, pod_lat0 = self.iops_now, self._weighted_latency(self.iops_now)
        self._set_s(x, self.s_of[x] - unit.load)
        self._set_s(y, self.s_of[y] + unit.load)
        nx_after, ny_after = self.n_of[x], self.n_of[y]
        self._resum()
        self.f = self._exact_f()
        a, b, o, disks = self.ua[uid], self.ub[uid], self.uo[uid], len(unit.disks)
        wa, wb = self.uwa[uid], self.uwb[uid]
        p.add(x, -a, -b, -o, -disks, wa=-wa, wb=-wb)
        p.add(y, a, b, o, disks, wa=wa, wb=wb)
        self.line[x] -= self.ul[uid]
        self.line[y] += self.ul[uid]
        lat_x1, iops_x1 = p.latency_iops(x)
        lat_y1, iops_y1 = p.latency_iops(y)
        self.iops_now += (iops_x1 + iops_y1) - (iops_x0 + iops_y0)
        self.cap[y] = min(self.cap[y], self.unit_cap[uid])
        self.state.apply(unit, self.names[x], self.names[y])
        self.budget.spend(unit)
        self.moves += 1
        self.gb += unit.size_gb
        effects = (
            DatastoreEffect(self.names[x], nx_before, nx_after, lat_x0, lat_x1, iops_x0, iops_x1, p.count[x]),
            DatastoreEffect(self.names[y], ny_before, ny_after, lat_y0, lat_y1, iops_y0, iops_y1, p.count[y]),
        )
        oio = self._oio(unit.disks)
        disk_effects = tuple(
            [
                DiskEffect(d, lat_x0, lat_y1, 1000.0 * o / lat_x0, 1000.0 * o / lat_y1)
                for d, o in zip(unit.disks, oio, strict=True)
            ]
        )
        pod_lat1 = self._weighted_latency(self.iops_now)
        return Move(
            number=number,
            pod=self.name,
            vm=unit.vm,
            disks=unit.disks,
            disk_sizes_gb=tuple([self.disk_sizes[d] for d in unit.disks]),
            disk_loads=tuple([self.models.disks[d].load for d in unit.disks]),
            source=self.names[x],
            target=self.names[y],
            size_gb=unit.size_gb,
            load=unit.load,
            source_n_before=nx_before,
            source_n_after=nx_after,
            target_n_before=ny_before,
            target_n_after=ny_after,
            imbalance_before=f_before,
            imbalance_after=self.f,
            target_new=self.new[y],
            reason_code=REASON_BALANCE_IO,
            reason=self._reason(
                unit,
                effects,
                kind=kind,
                f_before=f_before,
                pod_iops=(pod_iops0, self.iops_now),
                pod_latency=(pod_lat0, pod_lat1),
                y=y,
            ),
            objective=self.params.objective,
            kind=kind,
            datastore_effects=effects,
            disk_effects=disk_effects,
            pod_iops_before=pod_iops0,
            pod_iops_after=self.iops_now,
            pod_latency_ms_before=pod_lat0,
            pod_latency_ms_after=pod_lat1,
        )

    def _oio(self, disks: Sequence[str]) -> list[float]:
        """The disks' outstanding IOs (their demands' ``oio``), read from the table when there is one."""
        demands = self.demands
        if isinstance(demands, DiskDemands):
            index, item = demands.index, demands.table.item
            return [item(0, index[d]) for d in disks]  # row 0: oio (DiskDemands.FLOAT_FIELDS)
        return [demands[d].oio for d in disks]

    def _weighted_latency(self, iops: float) -> float:
        return 1000.0 * self.total_oio / iops if iops > 0 else 0.0

    def _reason(
        self,
        unit: Unit,
        effects: tuple[DatastoreEffect, DatastoreEffect],
        *,
        kind: str,
        f_before: float,
        pod_iops: tuple[float, float],
        pod_latency: tuple[float, float],
        y: int,
    ) -> str:
        src, tgt = effects
        what = (
            f"disk {unit.disks[0]}"
            if len(unit.disks) == 1
            else f"{len(unit.disks)} disks ({', '.join(unit.disks)})"
        )
        head = (
            f"Move {what} of VM {unit.vm} ({unit.size_gb:.1f} GB, L = {unit.load:.4g}) "
            f"from {src.datastore} to {tgt.datastore}: "
        )
        predicted = (
            f"predicted latency {src.datastore} {src.latency_ms_before:.3g} → {src.latency_ms_after:.3g} ms, "
            f"{tgt.datastore} {tgt.latency_ms_before:.3g} → {tgt.latency_ms_after:.3g} ms; "
            f"pod IOPS {pod_iops[0]:.0f} → {pod_iops[1]:.0f}, IOPS-weighted latency "
            f"{pod_latency[0]:.3g} → {pod_latency[1]:.3g} ms."
        )
        swap = (
            " One half of a swap with the next or previous move: the pair together"
            if kind == KIND_SWAP
            else ""
        )
        if self.throughput:
            gain = pod_iops[1] - pod_iops[0]
            text = head + (
                f"the best move{' of a swap' if kind == KIND_SWAP else ''} over all datastore pairs of pod "
                f"{self.name} for total throughput ({gain:+.0f} IOPS), {predicted} "
                f"Fairness: no disk is predicted above max(its start latency × "
                f"{1 + self.params.fairness_pct / 100:.2f}, start + {self.params.fairness_ms:g} ms, "
                f"the pod's {self.latency_before:.3g} ms at the start); "
                f"N {src.normalized_load_before:.4g} → {src.normalized_load_after:.4g} and "
                f"{tgt.normalized_load_before:.4g} → {tgt.normalized_load_after:.4g}, "
                f"f {f_before:.3f} → {self.f:.3f}."
            )
            if swap:
                text += swap + " raises it."
        else:
            text = head + (
                f"the best single move over all datastore pairs of pod {self.name}"
                f"{' (half of a swap)' if kind == KIND_SWAP else ''}: "
                f"N {src.normalized_load_before:.4g} → {src.normalized_load_after:.4g} "
                f"on {src.datastore} and "
                f"{tgt.normalized_load_before:.4g} → {tgt.normalized_load_after:.4g} on {tgt.datastore}; "
                f"the pod's imbalance f = σ/μ goes from {f_before:.3f} to {self.f:.3f}; {predicted}"
            )
            if swap:
                text += swap + " lowers the imbalance."
        if self.new[y]:
            text += (
                f" {tgt.datastore} has no device model yet: its N uses the pod's stand-in P = "
                f"{self.models.stand_in[self.name]:.3g} and it receives one unit this round (BASIL §6.3)."
            )
        for flag in sorted({flag for d in unit.disks for flag in self.models.disks[d].flags}):
            text += f" Note: {FLAG_TEXT[flag]}."
        return text
