"""BASIL's load balancer (§5, Algorithm 1): Storage vMotions that equalize N_j = ΣL_i / P_j in each pod.

``plan = recommend(snapshot, params)``: a strategy over plain data that fetches nothing. Per pod,
while the imbalance f = σ/μ of the normalized loads is above the threshold, the most loaded
datastore is paired with the least loaded one and a subset of its units, chosen by approximate
subset sum (Przydatek's RGLI, §5 [16]) to land as close as possible to the load that equalizes the
pair, moves across. Every single move is accepted only if the pod's f, recomputed from all its N,
strictly falls and its target ends below the source's N before the move (σ/μ alone would also
reward piling load onto a slow datastore, which raises μ). When the extreme pair yields nothing,
the next pairs are tried (most loaded sources against least loaded targets) up to
``max_pair_attempts`` pairs that have eligible units; when none helps, the pod is done.

Choices the paper leaves open, made here:
- The unit is one VM's disks on one datastore (see :mod:`basil.core.constraints`); a unit moves at
  most once per round, so a round cannot ping-pong within itself.
- When no subset fits under the pair's equalizing load, the single eligible unit that lowers f the
  most is moved instead (an overshoot can still reduce σ).
- Budgets (moves, GB) are for the round over all pods; at each step the pod with the highest
  imbalance goes first, so a small budget is spent where it matters most.
- Datastores in maintenance are left out of the balance entirely.
- Candidate order (§5): the first RGLI trial follows it, and among trials within
  ``subset_tolerance`` of the best sum the one that moves the fewest GB (``load_per_gb``) or the
  least current IOPS (``least_disturbance``) wins; moves within a step are applied in that order.
"""

from __future__ import annotations

import gc
import math
import random
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from itertools import compress, repeat
from operator import attrgetter, is_not
from typing import TypedDict

import numpy as np

from basil.core.constraints import Budget, PlacementState, Unit, build_unit_columns
from basil.core.normalized_load import Models, imbalance, resolve_models
from basil.core.params import (
    OBJECTIVE_AUTO,
    OBJECTIVE_THROUGHPUT,
    ORDER_LOAD_PER_GB,
    REASON_BALANCE_IO,
    SEARCH_PAIRWISE,
    BalancerParams,
)
from basil.core.plan import (
    STOP_BALANCED,
    STOP_BUDGET_GB,
    STOP_BUDGET_MOVES,
    STOP_SEARCH_LIMIT,
    Move,
    Pinned,
    Plan,
    PodState,
)
from basil.core.pod_round import PodRound
from basil.core.predictive import disk_demands
from basil.core.search import BestMoveSearch, pod_objective
from basil.core.snapshot import Datastore, Snapshot
from basil.core.subset_sum import approximate_subset_sum
from basil.core.workload_model import FLAG_TEXT
from basil.errors import raise_if_problems

# A move must lower f by more than floating-point noise to count as lowering it.
_EPSILON = 1e-12
# Fields read for every disk or unit of a round, each in one pass (C loops, no Python step per item).
_size_of = attrgetter("size_gb")
_flags_of = attrgetter("flags")


@dataclass(frozen=True, slots=True)
class _Pair:
    """A source (x, the rank_x-th most loaded) and a target (y, the rank_y-th least loaded)."""

    x: int
    y: int
    rank_x: int
    rank_y: int
    source: str
    target: str


@dataclass(slots=True)
class _Step:
    moves: list[Move]
    had_candidates: bool  # some unit on the source may go to the target (within budget or not)
    budget_blocked: bool = False  # some unit was eligible but over the remaining budget


class _PodBalancer(PodRound):
    """Algorithm 1 for one pod, with its own normalized loads, units and seeded RNG."""

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
        self.S = np.zeros(len(self.names), dtype=np.float64)
        self.movable: list[list[Unit]] = [[] for _ in self.names]
        for unit in units:
            i = self.position.get(unit.datastore)
            if i is None:
                continue
            self.S[i] += unit.load
            if unit.pinned is None:
                self.movable[i].append(unit)
        order = params.candidate_order
        for pool in self.movable:
            pool.sort(key=lambda u: (u.preference(order), u.index))
        self.N = self.S / self.P  # BASIL eq. 5
        self.f = imbalance(self.N)
        self._resum()
        self.before = self.pod_state()
        self.version = [0] * len(self.names)
        self.failed: set[tuple[int, int, int, int]] = set()  # pairs with no eligible unit, per version
        self.rng = random.Random(f"{params.seed}/{name}")
        self.finish_if_too_few()

    def pod_state(self) -> PodState:
        return PodState(self.f, {n: float(v) for n, v in zip(self.names, self.N, strict=True)})

    # --- Algorithm 1 -----------------------------------------------------------------------------

    def step(self, first_number: int) -> list[Move]:
        """One iteration of Algorithm 1's loop; marks the pod done when it cannot go on."""
        threshold = self.params.imbalance_threshold
        if self.f <= threshold:
            self._finish(STOP_BALANCED, f"imbalance {self.f:.3f} is at or below the threshold {threshold:g}")
            return []
        if self.budget.out_of_moves:
            self._finish(STOP_BUDGET_MOVES, "the round's move budget is spent")
            return []
        order = np.argsort(self.N, kind="stable").tolist()
        attempts = 0
        budget_blocked = False
        for rank_x, x in enumerate(reversed(order)):
            if not self.movable[x]:
                continue
            for rank_y, y in enumerate(order):
                if self.N[y] >= self.N[x]:
                    break
                key = (x, y, self.version[x], self.version[y])
                if key in self.failed:
                    continue
                pair = _Pair(x, y, rank_x, rank_y, self.names[x], self.names[y])
                result = self._pair(pair, first_number)
                if result.moves:
                    return result.moves
                budget_blocked = budget_blocked or result.budget_blocked
                if not result.had_candidates:
                    # Eligibility depends only on the two datastores' contents, so it holds until
                    # either changes (their versions); budget-blocked pairs are not cached.
                    self.failed.add(key)
                    continue
                attempts += 1
                if attempts >= self.params.max_pair_attempts:
                    self._finish(
                        STOP_SEARCH_LIMIT,
                        f"{attempts} datastore pairs with eligible disks tried without lowering the "
                        f"imbalance {self.f:.3f} (threshold {threshold:g})",
                    )
                    return []
        self._finish_without_move(budget_blocked)
        return []

    def _finish_without_move(self, budget_blocked: bool) -> None:
        threshold = self.params.imbalance_threshold
        if budget_blocked:
            self._finish(
                STOP_BUDGET_GB, "the disks that could still lower the imbalance exceed the round's GB budget"
            )
            return
        self._finish_no_improving_move(
            f"no eligible disk lowers the imbalance {self.f:.3f} any further (threshold {threshold:g})"
        )

    def _pair(self, pair: _Pair, first_number: int) -> _Step:
        """PairWiseRecommendMigration(d_x, d_y): units from x to y that lower f."""
        candidates, budget_blocked = self._candidates(pair)
        if not candidates:
            return _Step([], budget_blocked, budget_blocked)
        moves: list[Move] = []
        for unit in self._subset(pair, candidates):
            if not (self.state.allows(unit, pair.target) and self.budget.allows(unit)):
                continue  # an earlier unit of the subset used the room or the budget
            move = self._move_if_better(unit, pair, first_number + len(moves))
            if move is not None:
                moves.append(move)
        if not moves:
            # Nothing fits under the equalizing load (or none of it helped): the single unit that
            # lowers f the most, if any, judged by the incremental formula and confirmed exactly.
            best = self._best_single(pair, candidates)
            move = self._move_if_better(best, pair, first_number) if best is not None else None
            moves = [move] if move is not None else []
        return _Step(moves, True, budget_blocked)

    def _candidates(self, pair: _Pair) -> tuple[list[Unit], bool]:
        """Units on x allowed on y, in candidate order; and whether the budget blocked any."""
        candidates: list[Unit] = []
        budget_blocked = False
        for unit in self.movable[pair.x]:
            if self.state.allows(unit, pair.target):
                if self.budget.allows(unit):
                    candidates.append(unit)
                else:
                    budget_blocked = True
        return candidates, budget_blocked

    def _subset(self, pair: _Pair, candidates: list[Unit]) -> list[Unit]:
        """RGLI subset of *candidates* closest to the pair's equalizing load, in candidate order."""
        x, y = pair.x, pair.y
        Px, Py = float(self.P[x]), float(self.P[y])
        # The load whose move equalizes the pair: (S_x − Δ)/P_x = (S_y + Δ)/P_y  (BASIL eq. 5).
        equalizing = (float(self.S[x]) * Py - float(self.S[y]) * Px) / (Px + Py)
        count_limit = len(candidates)
        if self.budget.moves is not None:
            count_limit = min(count_limit, self.budget.moves)
        if self.new[y]:
            count_limit = min(count_limit, 1)  # §6.3: one workload at a time onto a datastore without a model
        size_limit = self.state.room(pair.target)
        if self.budget.gb is not None:
            size_limit = min(size_limit, self.budget.gb + 1e-9)
        conflicts: dict[int, frozenset[int]] = {}
        for i, u in enumerate(candidates):
            # Anti-affinity is symmetric, so each clashing pair is found from both sides.
            if u.conflicts:
                clash = frozenset(j for j, v in enumerate(candidates) if v.vm in u.conflicts)
                if clash:
                    conflicts[i] = clash
        least_disturbance = self.params.candidate_order != ORDER_LOAD_PER_GB

        def cost(indices: Sequence[int]) -> tuple[float, ...]:
            if least_disturbance:
                unknown = sum(1 for i in indices if candidates[i].iops is None)
                return (float(unknown), sum(candidates[i].iops or 0.0 for i in indices))
            return (sum(candidates[i].size_gb for i in indices),)

        choice = approximate_subset_sum(
            [u.load for u in candidates],
            equalizing,
            self.rng,
            trials=self.params.subset_trials,
            preferred_order=range(len(candidates)),
            sizes=[u.size_gb for u in candidates],
            size_limit=size_limit,
            count_limit=count_limit,
            conflicts=conflicts,
            cost=cost,
            tolerance=self.params.subset_tolerance,
        )
        return [candidates[i] for i in choice.indices]  # ascending index = candidate order

    def _best_single(self, pair: _Pair, candidates: list[Unit]) -> Unit | None:
        best: Unit | None = None
        best_f = self.f
        for unit in candidates:
            trial_f = self._incremental_imbalance(pair.x, pair.y, unit.load)
            target_after = float(self.N[pair.y]) + unit.load / float(self.P[pair.y])
            if trial_f < best_f - _EPSILON and target_after < float(self.N[pair.x]):
                best, best_f = unit, trial_f
        return best

    def _incremental_imbalance(self, x: int, y: int, load: float) -> float:
        """f after moving *load* from x to y, from the running sums ΣN and ΣN² (O(1))."""
        nx_old, ny_old = float(self.N[x]), float(self.N[y])
        nx = nx_old - load / float(self.P[x])
        ny = ny_old + load / float(self.P[y])
        total = self._total + (nx - nx_old) + (ny - ny_old)
        squares = self._squares + (nx * nx - nx_old * nx_old) + (ny * ny - ny_old * ny_old)
        d = len(self.names)
        if total <= 0:
            return 0.0
        mean = total / d
        variance = max(squares / d - mean * mean, 0.0)
        return math.sqrt(variance) / mean

    def _resum(self) -> None:
        # Re-anchored from the array after every accepted move, so the O(1) updates never drift.
        self._total = float(self.N.sum())
        self._squares = float(np.dot(self.N, self.N))

    def _move_if_better(self, unit: Unit, pair: _Pair, number: int) -> Move | None:
        """Apply *unit*'s move if the pod's f, recomputed from every N, strictly falls.

        f = σ/μ also falls when μ merely rises, and moving load onto a slower datastore raises μ
        (ΣN grows by L/P_y − L/P_x). So a move must also leave its target below the level its
        source had: it relieves a hot spot without making a hotter one.
        """
        x, y = pair.x, pair.y
        before = (float(self.N[x]), float(self.N[y]), self.f)
        self.N[x] = (self.S[x] - unit.load) / self.P[x]
        self.N[y] = (self.S[y] + unit.load) / self.P[y]
        f_after = imbalance(self.N)
        if not (f_after < before[2] - _EPSILON and self.N[y] < before[0]):
            self.N[x], self.N[y] = before[0], before[1]
            return None
        self.S[x] -= unit.load
        self.S[y] += unit.load
        self.f = f_after
        self._resum()
        self.movable[x].remove(unit)
        self.version[x] += 1
        self.version[y] += 1
        self.state.apply(unit, pair.source, pair.target)
        self.budget.spend(unit)
        self.moves += 1
        self.gb += unit.size_gb
        return self._describe(unit, pair, number, before)

    def _describe(self, unit: Unit, pair: _Pair, number: int, before: tuple[float, float, float]) -> Move:
        source, target = pair.source, pair.target
        nx_before, ny_before, f_before = before
        nx_after, ny_after = float(self.N[pair.x]), float(self.N[pair.y])
        disk_loads = tuple(self.models.disks[d].load for d in unit.disks)
        sizes = tuple(self.disk_sizes[d] for d in unit.disks)
        if len(unit.disks) == 1:
            what = f"disk {unit.disks[0]}"
        else:
            what = f"{len(unit.disks)} disks ({', '.join(unit.disks)})"
        src_rank = "the most loaded" if pair.rank_x == 0 else f"the {_ordinal(pair.rank_x + 1)} most loaded"
        tgt_rank = "the least loaded" if pair.rank_y == 0 else f"the {_ordinal(pair.rank_y + 1)} least loaded"
        reason = (
            f"Move {what} of VM {unit.vm} ({unit.size_gb:.1f} GB, L = {unit.load:.4g}) "
            f"from {source} to {target}: "
            f"{source} is {src_rank} datastore of pod {self.name} (N {nx_before:.4g} → {nx_after:.4g}) and "
            f"{target} is {tgt_rank} (N {ny_before:.4g} → {ny_after:.4g}); "
            f"the pod's imbalance f = σ/μ falls from {f_before:.3f} to {self.f:.3f}."
        )
        if self.new[pair.y]:
            reason += (
                f" {target} has no device model yet: its N uses the pod's stand-in P = "
                f"{self.models.stand_in[self.name]:.3g} and it receives one unit this round (BASIL §6.3)."
            )
        flags = sorted({flag for d in unit.disks for flag in self.models.disks[d].flags})
        for flag in flags:
            reason += f" Note: {FLAG_TEXT[flag]}."
        return Move(
            number=number,
            pod=self.name,
            vm=unit.vm,
            disks=unit.disks,
            disk_sizes_gb=sizes,
            disk_loads=disk_loads,
            source=source,
            target=target,
            size_gb=unit.size_gb,
            load=unit.load,
            source_n_before=nx_before,
            source_n_after=nx_after,
            target_n_before=ny_before,
            target_n_after=ny_after,
            imbalance_before=f_before,
            imbalance_after=self.f,
            target_new=self.new[pair.y],
            reason_code=REASON_BALANCE_IO,
            reason=reason,
        )


class _PodArgs(TypedDict):
    """What both kinds of pod round are built from."""

    name: str
    members: Sequence[Datastore]
    units: Sequence[Unit]
    models: Models
    state: PlacementState
    budget: Budget
    params: BalancerParams
    disk_sizes: Mapping[str, float]


def _ordinal(n: int) -> str:
    suffix = "th" if 11 <= n % 100 <= 13 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


class _CollectorPause:
    """Python's cyclic garbage collector paused while rounds run (see :func:`_collector_paused`)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.rounds = 0  # rounds running with the collector paused
        self.was_enabled = False


_PAUSE = _CollectorPause()


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector while a round runs. A round allocates a few objects
    per disk (units, models, demands) that live until it ends and form no garbage cycles; with the
    collector on, each batch of them triggers a pass over every object alive, the snapshot's too
    (a third of the time of a round on 40,000 disks). Reference counting still frees everything;
    the collector resumes (as it was before the first of concurrent rounds) when the last one ends."""
    with _PAUSE.lock:
        if _PAUSE.rounds == 0:
            _PAUSE.was_enabled = gc.isenabled()
            gc.disable()
        _PAUSE.rounds += 1
    try:
        yield
    finally:
        with _PAUSE.lock:
            _PAUSE.rounds -= 1
            if _PAUSE.rounds == 0 and _PAUSE.was_enabled:
                gc.enable()


def recommend(snapshot: Snapshot, params: BalancerParams | None = None) -> Plan:
    """One balancing round over every pod of *snapshot*: the plan of Storage vMotions (BASIL §5).

    Raises :class:`basil.errors.ValidationError` listing every problem of the snapshot or params.
    Same snapshot and params give the same plan.
    """
    with _collector_paused():
        return _recommend(snapshot, params or BalancerParams())


def _units_by_pod(snapshot: Snapshot, units: list[Unit]) -> dict[str, list[Unit]]:
    by_pod: dict[str, list[Unit]] = {}
    pod_of = {ds.name: ds.pod for ds in snapshot.datastores}
    if len(set(pod_of.values())) == 1:  # one pod (the usual case): every unit is in it
        by_pod[next(iter(pod_of.values()))] = units
    else:
        for unit in units:
            by_pod.setdefault(pod_of[unit.datastore], []).append(unit)
    return by_pod


def _recommend(snapshot: Snapshot, params: BalancerParams) -> Plan:
    raise_if_problems([*params.validate(), *snapshot.validate()], "recommendation input")
    models = resolve_models(snapshot, params)
    unit_columns = build_unit_columns(snapshot, models, params)
    units = unit_columns.units
    state = PlacementState(
        snapshot, models, params, disk_columns=(unit_columns.disk_datastores, unit_columns.disk_vms)
    )
    budget = Budget(params.max_moves, params.max_gb)
    sizes = dict(zip(unit_columns.disk_ids, map(_size_of, snapshot.disks), strict=True))

    by_pod = _units_by_pod(snapshot, units)
    demands = disk_demands(models, params.workload_model.constants)
    balancers: list[_PodBalancer | BestMoveSearch] = []
    notes: list[str] = []
    for name, members in snapshot.pods().items():
        objective, why = pod_objective(members, models, params)
        pod_params = params if objective == params.objective else replace(params, objective=objective)
        if params.objective == OBJECTIVE_AUTO and members:
            notes.append(f"pod {name}: objective {objective} ({why})")
        common = _PodArgs(
            name=name,
            members=members,
            units=by_pod.get(name, []),
            models=models,
            state=state,
            budget=budget,
            params=pod_params,
            disk_sizes=sizes,
        )
        if pod_params.search == SEARCH_PAIRWISE and objective != OBJECTIVE_THROUGHPUT:
            balancers.append(_PodBalancer(**common))
        else:
            guard = params.objective == OBJECTIVE_AUTO
            balancers.append(
                BestMoveSearch(**common, demands=demands, guard=guard, unit_columns=unit_columns)
            )

    moves: list[Move] = []
    while True:
        active = [b for b in balancers if not b.done]
        if not active:
            break
        # The pod with the highest imbalance steps first (ties: pod name), so budgets go where needed.
        pod = min(active, key=lambda b: (-b.f, b.name))
        moves.extend(pod.step(len(moves) + 1))

    for name, stand_in in sorted(models.stand_in.items()):
        new = sorted(m.name for m in models.datastores.values() if m.pod == name and m.new)
        if new:
            notes.append(
                f"pod {name}: {', '.join(new)} ha{'s' if len(new) == 1 else 've'} no device model (new); "
                f"N uses the stand-in P = {stand_in:.3g} (median of the pod's models) and each receives "
                "at most one unit per round (BASIL §6.3)"
            )
    for outcome in (b.outcome() for b in balancers):
        if outcome.excluded:
            notes.append(
                f"pod {outcome.pod}: {', '.join(outcome.excluded)} in maintenance, left out of the balance"
            )
    pinned = tuple(
        Pinned(u.vm, u.disks, u.datastore, code, u.pinned_reason)
        for u in compress(units, map(is_not, unit_columns.pinned, repeat(None)))
        if (code := u.pinned) is not None
    )
    flags = list(map(_flags_of, models.disks.values()))
    flagged = dict(sorted(compress(zip(models.disks, flags, strict=True), flags)))  # by disk id
    return Plan(
        moves=tuple(moves),
        pods=tuple(b.outcome() for b in balancers),
        datastores=models.datastores,
        flagged_disks=flagged,
        pinned=pinned,
        notes=tuple(notes),
    )
