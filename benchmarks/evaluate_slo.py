"""The SLO goal against the balance goal and against no moves, on the lab's physics (issue 15).

Scenario family: ``lab/scenarios/slo-tiers.yaml`` (SSD, FC and SATA datastores; three priority
groups tagged ``basil-slo/gold|silver|bronze``; diurnal and on/off workloads), one configuration per
seed (the seed redraws every workload's OIO within its range). Each policy runs a simulated day: the
pod is measured as vCenter would report it (``build/basil-evaluate measure``) until the first round,
``--first-round-min`` minutes in (10 by default: the service's first round comes with the first
workload models, about ten minutes after collection starts; 60 gives the first round after an hour),
then one round per hour, each recommending from everything measured so far; its moves are applied
(instantly: the copy's own IO is not charged, to either goal) and the next hour is measured. Both
goals get the same budget per round (``--max-moves``, ``--max-gb``) and the same constraints.

Figures, per policy over all seeds and hours, from the measured counters (``virtualDisk.readLatencyUS``):
- per group the mean read response time (IOPS-weighted) and the fraction of 20 s intervals whose
  group response time is within the DRT;
- the total damage: per window and disk Σ (RT − DRT)²/DRT over the disks above their DRT (the paper's
  damage with its one-hour time unit, a shorter window counting its share of an hour), summed over
  the day; per group and in total.

A fourth policy, ``slo+sioc``, is the SLO goal with ``priority_queues`` (the M/M/1 model with
priorities) and SIOC on every pod datastore (threshold 30 ms, vSphere's default) with each disk at
its group's shares, as the SRP job sets them: how far the lab's proportional-share SIOC gives the
priority the model assumes.

Targets (reported, not asserted): damage more than 6× lower than the balance goal's; the gold group
within its DRT in ≥ 95 % of intervals; no group's damage made worse by more than gold gains.

Run: ``make evaluate-slo`` or ``.venv/bin/python benchmarks/evaluate_slo.py [--seeds 1,2,3]
[--hours 24] [--first-round-min 10] [--policies none,balance,slo,slo+sioc] [--json out.json]``;
``--smoke`` is two hours of one seed.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))

from basil.core.balancer import recommend
from basil.core.params import BalancerParams
from basil.core.plan import Plan
from basil.core.slo import PriorityGroup, SloParams, assign_groups, damage_of, group_shares, recommend_slo
from basil.core.snapshot import Snapshot
from evaluation.labtool import ROOT, LabTool, Placement, Source, Window
from evaluation.observe import Observations, snapshot

SCENARIO = "lab/scenarios/slo-tiers.yaml"
CATEGORY = "basil-slo"
DRT_MS = {"gold": 2.0, "silver": 15.0, "bronze": 40.0}
HOUR = 180  # 20 s intervals
POLICIES = ("none", "balance", "slo", "slo+sioc")
SIOC_MS = 30.0  # slo+sioc: SIOC's congestion threshold on every pod datastore (vSphere's default)


@dataclass
class Tally:
    """One policy's figures, accumulated over seeds and hours."""

    rt_weighted: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    rt_iops: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    within: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    intervals: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    damage: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    # The same after the first round: the window before it is measured before any round, the same for
    # every policy.
    later_damage: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    later_within: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    later_intervals: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    moves: int = 0
    gb: float = 0.0
    seconds: float = 0.0  # time spent recommending

    def as_dict(self) -> dict[str, Any]:
        return {
            "groups": {
                g: {
                    "drt_ms": DRT_MS[g],
                    "mean_rt_ms": self.mean_rt(g),
                    "within_drt": self.within_fraction(g),
                    "damage": self.damage[g],
                    "damage_after_first_hour": self.later_damage[g],
                    "within_drt_after_first_hour": self.later_within_fraction(g),
                }
                for g in DRT_MS
            },
            "damage": self.total_damage,
            "damage_after_first_hour": sum(self.later_damage.values()),
            "moves": self.moves,
            "gb": self.gb,
            "recommend_seconds": self.seconds,
        }

    def mean_rt(self, g: str) -> float | None:
        return self.rt_weighted[g] / self.rt_iops[g] if self.rt_iops[g] > 0 else None

    def within_fraction(self, g: str) -> float | None:
        return self.within[g] / self.intervals[g] if self.intervals[g] else None

    def later_within_fraction(self, g: str) -> float | None:
        return self.later_within[g] / self.later_intervals[g] if self.later_intervals[g] else None

    @property
    def later_total(self) -> float:
        return sum(self.later_damage.values())

    @property
    def total_damage(self) -> float:
        return sum(self.damage.values())


def vm_groups(path: Path) -> dict[str, str]:
    """Each VM's group, from its ``basil-slo/<group>`` tag in the scenario."""
    scenario = yaml.safe_load(path.read_text(encoding="utf-8"))
    out: dict[str, str] = {}
    for vm in scenario["vms"]:
        for tag in vm.get("tags", []):
            category, _, name = tag.partition("/")
            if category == CATEGORY:
                out[vm["name"]] = name
    return out


def slo_params() -> SloParams:
    return SloParams(groups=tuple(PriorityGroup(g, drt) for g, drt in DRT_MS.items()))


def score_hour(
    measured: Mapping[str, Any], group_of: Mapping[str, str], tally: Tally, *, first: bool, hours: float = 1.0
) -> dict[str, float]:
    """Add one measured window of *hours* to *tally* (*first*: the window before any round); return
    each disk's read latency (ms) over it. Damage counts per hour (the paper's time unit), so a
    shorter window's counts for its share of an hour."""
    lat: dict[str, float] = defaultdict(float)
    iops: dict[str, float] = defaultdict(float)
    for interval in measured["intervals"]:
        g_lat: dict[str, float] = defaultdict(float)
        g_iops: dict[str, float] = defaultdict(float)
        for d in interval["disks"]:
            group = group_of.get(d["id"])
            if group is None or d["read_iops"] <= 0:
                continue
            ms = d["read_latency_us"] / 1000.0
            g_lat[group] += d["read_iops"] * ms
            g_iops[group] += d["read_iops"]
            lat[d["id"]] += d["read_iops"] * ms
            iops[d["id"]] += d["read_iops"]
        for group, total in g_iops.items():
            rt = g_lat[group] / total
            tally.intervals[group] += 1
            tally.within[group] += rt <= DRT_MS[group]
            if not first:
                tally.later_intervals[group] += 1
                tally.later_within[group] += rt <= DRT_MS[group]
            tally.rt_weighted[group] += g_lat[group]
            tally.rt_iops[group] += total
    hourly = {disk: lat[disk] / iops[disk] for disk in iops if iops[disk] > 0}
    for disk, rt in hourly.items():
        group = group_of[disk]
        tally.damage[group] += damage_of(rt, DRT_MS[group]) * hours
        if not first:
            tally.later_damage[group] += damage_of(rt, DRT_MS[group]) * hours
    return hourly


Recommender = Callable[[Snapshot, dict[str, float], BalancerParams], Plan]


def balance_policy(snap: Snapshot, _measured: dict[str, float], params: BalancerParams) -> Plan:
    return recommend(snap, params)


def make_slo_policy(vms: Mapping[str, str], *, priority: bool = False) -> Recommender:
    slo = dataclasses.replace(slo_params(), priority_queues=priority)

    def policy(snap: Snapshot, measured: dict[str, float], params: BalancerParams) -> Plan:
        tags = {vm: [f"{CATEGORY}/{g}"] for vm, g in vms.items()}
        membership = assign_groups(slo, snap, vm_tags=tags)
        return recommend_slo(snap, params, slo, membership, measured_ms=measured).plan

    return policy


def run_policy(
    tool: LabTool,
    description: dict[str, Any],
    policy: str,
    vms: Mapping[str, str],
    *,
    hours: int,
    params: BalancerParams,
    tally: Tally,
    first_round: int = HOUR,
) -> None:
    group_of = {d["id"]: vms[d["vm"]] for d in description["disks"] if d["vm"] in vms}
    recommenders: dict[str, Recommender] = {
        "balance": balance_policy,
        "slo": make_slo_policy(vms),
        "slo+sioc": make_slo_policy(vms, priority=True),
    }
    shares: dict[str, int] | None = None
    sioc: dict[str, float] | None = None
    if policy == "slo+sioc":  # the groups' shares, as the SRP job sets them (basil.app.slo_shares)
        by_group, _ = group_shares(slo_params())
        shares = {disk: by_group[group] for disk, group in group_of.items()}
        sioc = {ds["name"]: SIOC_MS for ds in description["datastores"]}
    placement: Placement = {}
    seen = Observations()
    for h, (start, length) in enumerate(windows(hours, first_round)):
        last = start + length >= hours * HOUR
        window = Window(start=start, intervals=length, warmup=9)
        where = {d["id"]: placement.get(d["id"], d["datastore"]) for d in description["disks"]}
        measured = tool.measure(placement, window, shares=shares, sioc_ms=sioc)
        seen.add(measured, where)
        hourly = score_hour(measured, group_of, tally, first=h == 0, hours=length / HOUR)
        if policy == "none" or last:
            continue
        snap = snapshot(description, placement, seen)
        started = time.perf_counter()
        plan = recommenders[policy](snap, {d.id: hourly[d.id] for d in snap.disks if d.id in hourly}, params)
        tally.seconds += time.perf_counter() - started
        for move in plan.moves:
            for disk in move.disks:
                placement[disk] = move.target
            tally.moves += 1
            tally.gb += move.size_gb


def windows(hours: int, first_round: int) -> list[tuple[int, int]]:
    """The measured windows (start, intervals) of a day: the first ends at the first round (*first_round*
    intervals in), the next each last an hour (one round each, the same budget), the last what is left."""
    out = [(0, min(first_round, hours * HOUR))]
    start = out[0][1]
    while start < hours * HOUR:
        out.append((start, min(HOUR, hours * HOUR - start)))
        start += HOUR
    return out


def evaluate(
    seeds: Sequence[int],
    hours: int,
    params: BalancerParams,
    *,
    progress: bool = True,
    first_round: int = HOUR,
    policies: Sequence[str] = POLICIES,
) -> dict[str, Tally]:
    vms = vm_groups(ROOT / SCENARIO)
    tallies = {p: Tally() for p in policies}
    for seed in seeds:
        tool = LabTool(Source(file=SCENARIO, seed=seed))
        description = tool.describe()
        for policy in policies:
            started = time.perf_counter()
            run_policy(
                tool,
                description,
                policy,
                vms,
                hours=hours,
                params=params,
                tally=tallies[policy],
                first_round=first_round,
            )
            if progress:
                print(f"  seed {seed}: {policy} done in {time.perf_counter() - started:.0f} s", flush=True)
    return tallies


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f} %"


def report(
    tallies: Mapping[str, Tally], seeds: Sequence[int], hours: int, params: BalancerParams
) -> list[str]:
    lines = [
        f"SLO evaluation on {SCENARIO}: seeds {', '.join(map(str, seeds))}, {hours} h each, "
        f"budget per hourly round {params.max_moves} moves / {params.max_gb:g} GB",
        "",
        f"{'policy':<8} {'group':<7} {'DRT ms':>6} {'mean RT ms':>10} {'within DRT':>10} {'damage':>12}",
    ]
    for policy, t in tallies.items():
        for g, drt in DRT_MS.items():
            lines.append(
                f"{policy:<8} {g:<7} {drt:>6g} {_ms(t.mean_rt(g)):>10} {_pct(t.within_fraction(g)):>10} "
                f"{t.damage[g]:>12.4g}"
            )
        lines.append(
            f"{policy:<8} {'total':<7} {'':>6} {'':>10} {'':>10} {t.total_damage:>12.4g}   "
            f"({t.moves} moves, {t.gb:.0f} GB, {t.seconds:.2f} s recommending)"
        )
    lines += ["", "After the first round (the window before it is measured before any round, alike for all):"]
    for policy, t in tallies.items():
        lines.append(
            f"{policy:<8} damage {t.later_total:>10.4g}; within DRT "
            + ", ".join(f"{g} {_pct(t.later_within_fraction(g))}" for g in DRT_MS)
        )
    slo, bal = tallies["slo"], tallies["balance"]
    later = bal.later_total / slo.later_total if slo.later_total > 0 else float("inf")
    ratio = bal.total_damage / slo.total_damage if slo.total_damage > 0 else float("inf")
    gold = slo.within_fraction("gold")
    gain = bal.damage["gold"] - slo.damage["gold"]
    worse = {g: slo.damage[g] - bal.damage[g] for g in DRT_MS if g != "gold"}
    lines += [
        "",
        f"target: total damage > 6x lower than the balance goal: {ratio:.1f}x "
        f"({'met' if ratio > 6 else 'not met'})",
        f"        after the first round: {later:.1f}x ({'met' if later > 6 else 'not met'})",
        f"target: gold within its DRT in >= 95 % of intervals: {_pct(gold)} "
        f"({'met' if gold is not None and gold >= 0.95 else 'not met'})",
        "target: no group's damage worse than the balance goal's by more than gold gains "
        f"({gain:.4g}): "
        + ", ".join(f"{g} {d:+.4g}" for g, d in worse.items())
        + f" ({'met' if all(d <= max(gain, 0.0) for d in worse.values()) else 'not met'})",
    ]
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", default="1,2,3", help="comma-separated scenario seeds")
    parser.add_argument("--hours", type=int, default=24, help="simulated hours per seed and policy")
    parser.add_argument("--max-moves", type=int, default=2, help="moves per hourly round (both goals)")
    parser.add_argument("--max-gb", type=float, default=500.0, help="GB per hourly round (both goals)")
    parser.add_argument(
        "--first-round-min",
        type=float,
        default=10.0,
        help="minutes of samples before the first round (the service's first round comes with the first "
        "models, about 10 min after collection starts; 60: the first round after an hour, as before)",
    )
    parser.add_argument("--policies", default=",".join(POLICIES), help="comma-separated policies to run")
    parser.add_argument("--smoke", action="store_true", help="two hours of one seed")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args(argv)
    seeds = [1] if args.smoke else [int(s) for s in args.seeds.split(",")]
    hours = 2 if args.smoke else args.hours
    params = BalancerParams(max_moves=args.max_moves, max_gb=args.max_gb)
    started = time.perf_counter()
    first_round = max(1, round(args.first_round_min * 60 / 20))
    policies = [p for p in args.policies.split(",") if p]
    unknown = sorted(set(policies) - set(POLICIES))
    if unknown or not {"balance", "slo"} <= set(policies):
        parser.error(
            f"--policies: must include balance and slo, of {', '.join(POLICIES)}; unknown: {unknown}"
        )
    tallies = evaluate(seeds, hours, params, first_round=first_round, policies=policies)
    print(f"first round after {first_round * 20 / 60:g} min of samples, then one round per hour")
    for line in report(tallies, seeds, hours, params):
        print(line)
    took = time.perf_counter() - started
    print(f"\n{len(seeds)} seed(s) × {hours} h × {len(policies)} policies in {took:.0f} s")
    if args.json:
        args.json.write_text(
            json.dumps({p: t.as_dict() for p, t in tallies.items()}, indent=2, allow_nan=False) + "\n",
            encoding="utf-8",
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
