"""Seeded configurations of each scenario family, every policy run on each, scored on the physics."""

from __future__ import annotations

import random
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .labtool import LabTool, Placement, Source
from .policies import POLICIES, Context, Outcome, Policy, Prediction, Settings

# Skews: a start placement from the scenario's description and the configuration's seed.
Skew = Callable[[dict[str, Any], int, float], Placement]


def _fits(description: dict[str, Any], headroom_pct: float) -> Callable[[Placement, str, str], bool]:
    stores = {d["name"]: d for d in description["datastores"]}
    sizes = {d["id"]: d["size_gb"] for d in description["disks"]}
    hosts = {d["id"]: d["host"] for d in description["disks"]}

    def fits(where: Placement, disk: str, ds: str) -> bool:
        s = stores[ds]
        used = sum(sizes[d] for d, x in where.items() if x == ds)
        room = s["capacity_gb"] * (1 - headroom_pct / 100.0) - s["fixed_gb"] - used
        return hosts[disk] in s["hosts"] and sizes[disk] <= room and not s["maintenance"]

    return fits


def pile_on(choose: Callable[[list[dict[str, Any]], int], list[str]], share: float = 1.0) -> Skew:
    """A skewed start: a share of the disks moved onto the datastores *choose* picks (where they fit)."""

    def skew(description: dict[str, Any], seed: int, headroom_pct: float) -> Placement:
        rng = random.Random(seed)
        hot = choose(description["datastores"], seed)
        fits = _fits(description, headroom_pct)
        where = {d["id"]: d["datastore"] for d in description["disks"]}
        moved: Placement = {}
        for d in description["disks"]:
            if rng.random() >= share:
                continue
            for ds in rng.sample(hot, len(hot)):
                if where[d["id"]] != ds and fits(where, d["id"], ds):
                    where[d["id"]] = moved[d["id"]] = ds
                    break
        return moved

    return skew


def _one_lun(stores: list[dict[str, Any]], seed: int) -> list[str]:
    return [stores[seed % len(stores)]["name"]]


def _slowest_tier(stores: list[dict[str, Any]], seed: int) -> list[str]:
    return [s["name"] for s in stores if s["kind"] == "sata7k"][:1]


def _two_hot(stores: list[dict[str, Any]], seed: int) -> list[str]:
    return [s["name"] for s in random.Random(seed).sample([s for s in stores if not s["maintenance"]], 2)]


@dataclass(frozen=True, slots=True)
class Family:
    """A scenario family: how a seed becomes a scenario and a start, and which targets it counts for."""

    name: str
    source: Callable[[int], Source]
    seeds: Sequence[int]
    smoke_seeds: Sequence[int]
    exhaustive: bool
    group: str  # "paper", "hetero" or "large": which target line the family feeds
    skew: Skew | None = None
    about: str = ""


FAMILIES: Sequence[Family] = (
    Family(
        "paper-6.2",
        lambda seed: Source(file="lab/scenarios/basil-6.2.yaml", seed=seed),
        range(1, 11),
        (1,),
        True,
        "paper",
        about="BASIL §6.2: Tables 2-3's placement; the seed varies OIO draws and noise",
    ),
    Family(
        "paper-6.3",
        lambda seed: Source(file="lab/scenarios/basil-6.3.yaml", seed=seed),
        range(1, 11),
        (),
        True,
        "paper",
        about="BASIL §6.3: all eight workloads on the 6-disk LUN, two new empty LUNs",
    ),
    Family(
        "paper-6.4",
        lambda seed: Source(family="random", seed=seed),
        range(1, 101),
        (2,),
        True,
        "paper",
        about="BASIL §6.4: eight random Table 1 workloads placed at random on the 3-, 6- and 9-disk LUNs",
    ),
    Family(
        "skewed-6.4",
        lambda seed: Source(family="random", seed=seed),
        range(1001, 1031),
        (),
        True,
        "paper",
        skew=pile_on(_one_lun),
        about="§6.4 workloads, all started on one LUN (which one rotates with the seed)",
    ),
    Family(
        "hetero",
        lambda seed: Source(family="hetero", seed=seed),
        range(1, 61),
        (3,),
        True,
        "hetero",
        about="SSD RAID 5, FC RAID 5, SATA RAID 6 (+ one more half the time); Table 1 and sequential streams",
    ),
    Family(
        "hetero-skewed",
        lambda seed: Source(family="hetero", seed=seed),
        range(2001, 2031),
        (),
        True,
        "hetero",
        skew=pile_on(_slowest_tier),
        about="heterogeneous pods started with every disk on the SATA RAID 6 datastore",
    ),
    Family(
        "large",
        lambda seed: Source(family="large", seed=seed, stores=20, workloads=200),
        range(1, 9),
        (),
        False,
        "large",
        skew=pile_on(_two_hot, share=0.5),
        about="20 mixed datastores (one in five seen by 3 of 4 hosts, one in maintenance), 200 disks, "
        "half of them piled on two",
    ),
)


@dataclass(slots=True)
class Scored:
    """One outcome scored on the physics' truth window."""

    policy: str
    moves: int
    total_iops: float
    avg_latency_ms: float
    worst_disk_change_pct: float  # the largest latency increase of one disk against the start


@dataclass(slots=True)
class ConfigResult:
    family: str
    seed: int
    group: str
    disks: int
    datastores: int
    scored: dict[str, Scored] = field(default_factory=dict)
    predictions: list[Prediction] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def gain_pct(self, policy: str) -> float:
        """Total IOPS against the start, in per cent."""
        return 100.0 * (self.scored[policy].total_iops / self.scored["start"].total_iops - 1.0)

    def latency_reduction_pct(self, policy: str) -> float:
        return 100.0 * (1.0 - self.scored[policy].avg_latency_ms / self.scored["start"].avg_latency_ms)

    def of_best(self, policy: str) -> float | None:
        best = self.scored.get("best")
        return None if best is None else self.scored[policy].total_iops / best.total_iops


def run_config(
    family: Family, seed: int, settings: Settings, policies: Sequence[Policy] = POLICIES
) -> ConfigResult:
    tool = LabTool(family.source(seed))
    description = tool.describe()
    start = family.skew(description, seed, settings.headroom_pct) if family.skew else {}
    ctx = Context(tool, description, start, settings, family.exhaustive)
    result = ConfigResult(
        family.name, seed, family.group, len(description["disks"]), len(description["datastores"])
    )
    outcomes: list[Outcome] = []
    for policy in policies:
        if policy.applies(ctx):
            outcomes.extend(policy.run(ctx))
    truths = tool.score([o.placement for o in outcomes], settings.truth)
    base = next(t for o, t in zip(outcomes, truths, strict=True) if o.policy == "start")
    for o, t in zip(outcomes, truths, strict=True):
        worst = max(
            (
                100.0 * (t["disks"][d]["latency_ms"] / b["latency_ms"] - 1.0)
                for d, b in base["disks"].items()
                if b["latency_ms"] > 0 and t["disks"][d]["latency_ms"] > 0
            ),
            default=0.0,
        )
        result.scored[o.policy] = Scored(o.policy, o.moves, t["total_iops"], t["avg_latency_ms"], worst)
        result.predictions.extend(o.predictions)
        result.notes.extend(f"{o.policy}: {n}" for n in o.notes)
    return result


def check(results: Sequence[ConfigResult]) -> list[str]:
    """Invariants of a report that can fail: the exhaustive best is at least every other policy's total
    IOPS on its configuration, every configuration has its start and every policy's figures are finite
    and positive. Returns the violations."""
    problems: list[str] = []
    for r in results:
        where = f"{r.family} seed {r.seed}"
        if "start" not in r.scored:
            problems.append(f"{where}: no start placement scored")
        for s in r.scored.values():
            if not (s.total_iops > 0 and s.avg_latency_ms > 0):
                problems.append(
                    f"{where}: {s.policy} has total IOPS {s.total_iops}, latency {s.avg_latency_ms}"
                )
        best = r.scored.get("best")
        if best is None:
            continue
        for s in r.scored.values():
            if s.total_iops > best.total_iops * (1 + 1e-9):
                problems.append(
                    f"{where}: {s.policy} reaches {s.total_iops:.1f} IOPS, above the exhaustive best "
                    f"{best.total_iops:.1f}"
                )
    return problems


def median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else float("nan")


@dataclass(frozen=True, slots=True)
class Targets:
    """The issue's target figures, computed from the results (printed, never asserted)."""

    lines: tuple[str, ...]


def basil_policies(results: Sequence[ConfigResult]) -> list[str]:
    """The round-based policies in the results ("basil", "basil-throughput"), in order of appearance."""
    names: list[str] = []
    for r in results:
        for name in r.scored:
            base, _, rnd = name.rpartition(" r")
            if base and rnd.isdigit() and base not in names:
                names.append(base)
    return names


def targets(results: Sequence[ConfigResult], basils: Sequence[str] | None = None) -> Targets:
    lines: list[str] = []
    basils = basil_policies(results) if basils is None else basils
    paper = [r for r in results if r.group == "paper" and "best" in r.scored]
    if paper:
        for basil in basils:
            for policy, label in ((f"{basil} r2", "after two rounds"), (f"{basil} r1", "after one round")):
                if not all(policy in r.scored for r in paper):
                    continue
                within = sum(1 for r in paper if (r.of_best(policy) or 0.0) >= 0.95)
                lines.append(
                    f"paper-like pods: {basil} within 5 % of the best placement {label} in {within} of "
                    f"{len(paper)} configurations ({100.0 * within / len(paper):.0f} %; target ≥ 95 %)"
                )
        within = sum(1 for r in paper if (r.of_best("naive") or 0.0) >= 0.95)
        lines.append(
            f"paper-like pods: naive within 5 % of the best in {within} of {len(paper)} "
            f"({100.0 * within / len(paper):.0f} %)"
        )
    hetero = [r for r in results if r.group == "hetero"]
    families = sorted({r.family for r in hetero})
    groups = [(f, [r for r in hetero if r.family == f]) for f in families]
    groups += [("all heterogeneous", hetero)] if len(families) > 1 else []
    for basil in basils:
        policy = f"{basil} r2"
        for label, rs in groups:
            if not rs or not all(policy in r.scored for r in rs):
                continue
            mine = median([r.gain_pct(policy) for r in rs])
            naive = median([r.gain_pct("naive") for r in rs])
            below = sum(1 for r in rs if r.gain_pct(policy) < -2.0)
            above, none_below = mine > naive, below == 0
            lines.append(
                f"heterogeneous pods ({label}, {len(rs)} configurations): median IOPS gain {policy} "
                f"{mine:+.1f} % against naive {naive:+.1f} % (target: above) — "
                f"{'met' if above else 'NOT met'}; {below} more than 2 % below their start (target 0) — "
                f"{'met' if none_below else 'NOT met'}"
            )
    large = [r for r in results if r.group == "large"]
    for basil in basils:
        policy = f"{basil} r2"
        if not large or not all(policy in r.scored for r in large):
            continue
        below = sum(1 for r in large if r.gain_pct(policy) < -2.0)
        lines.append(
            f"large pods ({len(large)} configurations): median IOPS gain {policy} "
            f"{median([r.gain_pct(policy) for r in large]):+.1f} % against naive "
            f"{median([r.gain_pct('naive') for r in large]):+.1f} %; {below} more than 2 % below their start"
        )
    for basil in basils:
        lines.extend(_prediction_lines(results, basil))
    return Targets(tuple(lines))


def _prediction_lines(results: Sequence[ConfigResult], basil: str) -> list[str]:
    lines: list[str] = []
    errors = [p.error for r in results for p in r.predictions if p.policy == basil]
    if errors:
        e = 100.0 * median(errors)
        lines.append(
            f"median error of the predicted post-move datastore read latency ({basil}): {e:.2f} % over "
            f"{len(errors)} predictions (target ≤ 10 %) — {'met' if e <= 10 else 'NOT met'}"
        )
        line = [
            x for r in results for p in r.predictions if p.policy == basil and (x := p.line_error) is not None
        ]
        if line:
            lines.append(
                f"  for comparison ({basil}): the device fit's line at the read OIO the moved disks had "
                f"before, median error {100.0 * median(line):.2f} % over {len(line)} of them"
            )
    else:
        lines.append(f"median error of the predicted post-move datastore latency ({basil}): no prediction")
    return lines
