"""What the evaluation compares: one entry of ``POLICIES`` per policy.

A policy gets a configuration's context (the lab, the pod's description, the start placement) and
returns the placements it ends in, one :class:`Outcome` per reported stage (Basil: one per round).
Adding a policy is one entry, for instance ``BasilRounds("basil-throughput",
BalancerParams(objective="throughput"), rounds=3)``.

- ``start``: no moves.
- ``naive``: the latency-greedy script an administrator writes: move the busiest disk (IOPS) from the
  highest-latency to the lowest-latency datastore (vCenter's datastore latency, whole ms), measure,
  keep going while the spread (highest − lowest latency) falls; a move that does not lower it is
  undone and ends the run. Same space headroom and host visibility as Basil.
- ``basil``: ``basil.core.balancer.recommend`` (default parameters: the ``auto`` objective, which
  picks throughput for pods of mixed tiers and BASIL's N-equalisation otherwise) on the snapshot built
  from what was measured, moves applied, the pod measured again, for each round; every round sees all
  samples so far.
- ``basil-normalized``: the same with ``objective="normalized_load"`` (BASIL's N-equalisation, as in
  the paper, for every pod).
- ``basil-throughput``: the same with ``objective="throughput"`` (the predictive objective).
- ``best``: the exhaustive best placement by the physics' total IOPS (small pods only).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from basil.core.balancer import recommend
from basil.core.params import OBJECTIVE_NORMALIZED_LOAD, OBJECTIVE_THROUGHPUT, BalancerParams
from basil.core.plan import Plan

from .labtool import LabTool, Placement, Window
from .observe import Observations, datastore_latency_us, read_oio, snapshot


@dataclass(frozen=True, slots=True)
class Settings:
    """Lengths of the measurement windows (20 s intervals) and the shared constraints."""

    round_intervals: int = 30  # each Basil round measures 10 minutes
    naive_intervals: int = 6  # the naive script measures 2 minutes after each move
    naive_max_steps: int = 40
    warmup: int = 9  # intervals simulated before a window after a change (write caches settle)
    headroom_pct: float = 10.0  # BalancerParams' default; the naive policy and the best honour it too
    truth: Window = field(default_factory=lambda: Window(start=300, intervals=30, warmup=15))  # scored here


@dataclass(frozen=True, slots=True)
class Context:
    """One configuration: the lab for its scenario, the pod, where its disks start."""

    tool: LabTool
    description: dict[str, Any]
    start: Placement
    settings: Settings
    exhaustive: bool

    def where(self, placement: Placement) -> Placement:
        """Every active disk's datastore under *placement*."""
        return {d["id"]: placement.get(d["id"], d["datastore"]) for d in self.description["disks"]}


@dataclass(frozen=True, slots=True)
class Prediction:
    """A datastore's read latency after a round's moves: predicted, and then measured (ms)."""

    policy: str
    round: int
    datastore: str
    kind: str
    predicted_ms: float
    measured_ms: float
    source: str = "line"  # "effects": the plan's predicted datastore latency; "line": its device fit
    line_ms: float | None = None  # the device fit's line at the disks' measured read OIO, for comparison

    @property
    def line_error(self) -> float | None:
        return None if self.line_ms is None else abs(self.line_ms - self.measured_ms) / self.measured_ms

    @property
    def error(self) -> float:
        return abs(self.predicted_ms - self.measured_ms) / self.measured_ms


@dataclass(slots=True)
class Outcome:
    """Where a policy left the pod after one stage, and what it took."""

    policy: str
    placement: Placement
    moves: int
    predictions: list[Prediction] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


class Policy(Protocol):
    @property
    def name(self) -> str: ...

    def applies(self, ctx: Context) -> bool: ...

    def run(self, ctx: Context) -> list[Outcome]: ...


# A predictor turns a plan and the placement after it into predicted read latency (ms) per datastore,
# each with where it came from ("effects" or "line").
Predictor = Callable[[Plan, Placement, dict[str, Any]], dict[str, tuple[float, str]]]


def linear_fit_prediction(plan: Plan, after: Placement, last: dict[str, Any]) -> dict[str, tuple[float, str]]:
    """Basil's device model read literally: latency = intercept + slope × the datastore's read OIO after
    the moves, each disk bringing its mean read OIO of the last window (BASIL §4). Datastores without a
    usable fit get no prediction."""
    oio = read_oio(last)
    total: dict[str, float] = {}
    for disk, ds in after.items():
        total[ds] = total.get(ds, 0.0) + oio.get(disk, 0.0)
    out: dict[str, tuple[float, str]] = {}
    for name, model in plan.datastores.items():
        fit = model.fit
        if fit is None or not fit.ok or fit.slope is None or fit.intercept is None:
            continue
        out[name] = (fit.intercept + fit.slope * total.get(name, 0.0), "line")
    return out


def plan_prediction(plan: Plan, after: Placement, last: dict[str, Any]) -> dict[str, tuple[float, str]]:
    """The balancer's own prediction where its moves carry one: per datastore, the predicted latency
    after the last move that touched it (``Move.datastore_effects``, basil.core.predictive). Datastores
    without it fall back to :func:`linear_fit_prediction`."""
    out = linear_fit_prediction(plan, after, last)
    for move in plan.moves:
        for effect in move.datastore_effects:
            if effect.latency_ms_after > 0:
                out[effect.datastore] = (effect.latency_ms_after, "effects")
    return out


@dataclass(frozen=True, slots=True)
class NoMoves:
    name: str = "start"

    def applies(self, ctx: Context) -> bool:
        return True

    def run(self, ctx: Context) -> list[Outcome]:
        return [Outcome(self.name, dict(ctx.start), 0)]


@dataclass(frozen=True, slots=True)
class BasilRounds:
    """Basil's recommendation applied round after round; one outcome per round ("basil r2")."""

    name: str = "basil"
    params: BalancerParams = field(default_factory=BalancerParams)
    rounds: int = 3
    predict: Predictor = plan_prediction

    def applies(self, ctx: Context) -> bool:
        return True

    def run(self, ctx: Context) -> list[Outcome]:
        s = ctx.settings
        kinds = {d["name"]: d["kind"] for d in ctx.description["datastores"]}
        placement = dict(ctx.start)
        seen = Observations()
        last = ctx.tool.measure(placement, Window(start=0, intervals=s.round_intervals, warmup=0))
        seen.add(last, ctx.where(placement))
        moves = 0
        outcomes: list[Outcome] = []
        for r in range(1, self.rounds + 1):
            plan = recommend(snapshot(ctx.description, placement, seen), self.params)
            after = ctx.where(placement)
            touched: set[str] = set()
            for move in plan.moves:
                touched |= {move.source, move.target}
                for disk in move.disks:
                    after[disk] = move.target
            predicted = self.predict(plan, after, last)
            line = linear_fit_prediction(plan, after, last)
            moves += len(plan.moves)
            placement = after
            last = ctx.tool.measure(
                placement, Window(start=r * s.round_intervals, intervals=s.round_intervals, warmup=s.warmup)
            )
            measured = datastore_latency_us(last, ctx.where(placement))
            predictions = [
                Prediction(
                    self.name,
                    r,
                    ds,
                    kinds.get(ds, ""),
                    predicted[ds][0],
                    measured[ds] / 1000.0,
                    predicted[ds][1],
                    line[ds][0] if ds in line else None,
                )
                for ds in sorted(touched)
                if ds in predicted and measured.get(ds, 0.0) > 0
            ]
            seen.add(last, ctx.where(placement))
            notes = [f"round {r}: {len(plan.moves)} moves, {p.stop}" for p in plan.pods]
            outcomes.append(Outcome(f"{self.name} r{r}", dict(placement), moves, predictions, notes))
        return outcomes


def _latencies(measured: dict[str, Any]) -> tuple[dict[str, float], dict[str, float]]:
    """Per datastore its latency as vCenter's counters give it (ms, IOPS-weighted over hosts and
    intervals, 0 when idle), and per disk its mean IOPS."""
    lat: dict[str, float] = {}
    iops: dict[str, float] = {}
    disk_iops: dict[str, float] = {}
    for interval in measured["intervals"]:
        for h in interval["hosts"]:
            ds = h["datastore"]
            lat[ds] = (
                lat.get(ds, 0.0)
                + h["read_iops"] * h["read_latency_ms"]
                + (h["write_iops"] * h["write_latency_ms"])
            )
            iops[ds] = iops.get(ds, 0.0) + h["read_iops"] + h["write_iops"]
        for d in interval["disks"]:
            disk_iops[d["id"]] = disk_iops.get(d["id"], 0.0) + d["read_iops"] + d["write_iops"]
    return {ds: lat[ds] / iops[ds] if iops[ds] else 0.0 for ds in lat}, disk_iops


@dataclass(frozen=True, slots=True)
class NaiveLatencyGreedy:
    name: str = "naive"

    def applies(self, ctx: Context) -> bool:
        return True

    def run(self, ctx: Context) -> list[Outcome]:
        s = ctx.settings
        stores = {d["name"]: d for d in ctx.description["datastores"] if not d["maintenance"]}
        disks = {d["id"]: d for d in ctx.description["disks"]}
        placement = ctx.where(ctx.start)
        k = s.naive_intervals
        lat, busy = _latencies(ctx.tool.measure(placement, Window(start=0, intervals=k, warmup=0)))

        def spread(lat: dict[str, float]) -> float:
            values = [lat.get(ds, 0.0) for ds in stores]
            return max(values) - min(values)

        moves = 0
        for step in range(1, s.naive_max_steps + 1):
            ranked = sorted(stores, key=lambda ds: (lat.get(ds, 0.0), ds))
            source, target = ranked[-1], ranked[0]
            used = sum(disks[d]["size_gb"] for d, ds in placement.items() if ds == target)
            free = stores[target]["capacity_gb"] - stores[target]["fixed_gb"] - used
            floor = stores[target]["capacity_gb"] * s.headroom_pct / 100.0
            candidates = sorted(
                (d for d, ds in placement.items() if ds == source),
                key=lambda d: (-busy.get(d, 0.0), d),
            )
            pick = next(
                (
                    d
                    for d in candidates
                    if disks[d]["host"] in stores[target]["hosts"] and free - disks[d]["size_gb"] >= floor
                ),
                None,
            )
            if pick is None or source == target:
                break
            trial = dict(placement)
            trial[pick] = target
            new_lat, new_busy = _latencies(
                ctx.tool.measure(trial, Window(start=step * k, intervals=k, warmup=s.warmup))
            )
            if spread(new_lat) >= spread(lat):
                break  # the move did not narrow the spread: undo it (it was never kept) and stop
            placement, lat, busy = trial, new_lat, new_busy
            moves += 1
        return [Outcome(self.name, placement, moves)]


@dataclass(frozen=True, slots=True)
class ExhaustiveBest:
    name: str = "best"

    def applies(self, ctx: Context) -> bool:
        return ctx.exhaustive

    def run(self, ctx: Context) -> list[Outcome]:
        answer = ctx.tool.best(ctx.settings.truth, ctx.settings.headroom_pct)
        placement: Placement = answer["best"]["placement"]
        start = ctx.where(ctx.start)
        moved = sum(1 for d, ds in placement.items() if start.get(d) != ds)
        return [Outcome(self.name, placement, moved, notes=[f"{answer['placements']} placements compared"])]


POLICIES: Sequence[Policy] = (
    NoMoves(),
    NaiveLatencyGreedy(),
    BasilRounds(rounds=3),
    BasilRounds("basil-normalized", BalancerParams(objective=OBJECTIVE_NORMALIZED_LOAD), rounds=3),
    BasilRounds("basil-throughput", BalancerParams(objective=OBJECTIVE_THROUGHPUT), rounds=3),
    ExhaustiveBest(),
)
