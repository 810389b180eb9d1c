"""What the error of the predicted post-move datastore latency is made of: Basil's default policy on
seeded configurations of the evaluation's families, two rounds, every touched datastore broken down
by family, round, device kind, role (source, target, both), filled or left with one disk, sequential
streams on it, fitted or not, reads or none after the moves.

The prediction and the measurement are exactly the evaluation's (``evaluation.policies``: the plan's
``Move.datastore_effects``, the disks' IOPS-weighted ``virtualDisk.readLatencyUS`` over the round's
window). Each cell is the median error, the median predicted/measured and the count.

    nice .venv/bin/python benchmarks/prediction_errors.py hetero:1-30 hetero-skewed:1-15 paper-6.4:1-30
    nice .venv/bin/python benchmarks/prediction_errors.py --rows OUT.json ...   # every row, as JSON
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from basil.core.balancer import recommend
from basil.core.params import BalancerParams
from evaluation import harness
from evaluation.labtool import LabTool, Window
from evaluation.observe import Observations, datastore_latency_us, read_oio, snapshot
from evaluation.policies import Context, Settings, plan_prediction

Row = dict[str, Any]


def run(family: harness.Family, seed: int, rounds: int = 2) -> list[Row]:
    """The touched datastores of each round of Basil (default parameters) on one configuration."""
    s = Settings()
    tool = LabTool(family.source(seed))
    description = tool.describe()
    start = family.skew(description, seed, s.headroom_pct) if family.skew else {}
    ctx = Context(tool, description, start, s, family.exhaustive)
    kinds = {d["name"]: d["kind"] for d in description["datastores"]}
    placement = dict(start)
    seen = Observations()
    last = tool.measure(placement, Window(start=0, intervals=s.round_intervals, warmup=0))
    seen.add(last, ctx.where(placement))
    rows: list[Row] = []
    for r in range(1, rounds + 1):
        snap = snapshot(description, placement, seen)
        sequential = {
            d.id: statistics.mean(x.random_pct for x in d.samples) < 50 for d in snap.disks if d.samples
        }
        plan = recommend(snap, BalancerParams())
        before = ctx.where(placement)
        after = dict(before)
        roles: dict[str, set[str]] = {}
        for move in plan.moves:
            roles.setdefault(move.source, set()).add("source")
            roles.setdefault(move.target, set()).add("target")
            for disk in move.disks:
                after[disk] = move.target
        predicted = plan_prediction(plan, after, last)
        placement = after
        last = tool.measure(
            placement, Window(start=r * s.round_intervals, intervals=s.round_intervals, warmup=s.warmup)
        )
        measured = datastore_latency_us(last, after)
        reads = read_oio(last)
        for ds in sorted(roles):
            if ds not in predicted or measured.get(ds, 0.0) <= 0:
                continue
            on_before = [d for d, x in before.items() if x == ds]
            on_after = [d for d, x in after.items() if x == ds]
            model = plan.datastores.get(ds)
            rows.append(
                {
                    "family": family.name,
                    "seed": seed,
                    "round": r,
                    "datastore": ds,
                    "kind": kinds[ds],
                    "role": "+".join(sorted(roles[ds])),
                    "disks_before": len(on_before),
                    "disks_after": len(on_after),
                    "sequential": any(sequential.get(d, False) for d in on_after),
                    "fitted": model is not None and model.source == "fitted",
                    "reads_after": sum(reads.get(d, 0.0) for d in on_after),
                    "predicted_ms": predicted[ds][0],
                    "measured_ms": measured[ds] / 1000.0,
                }
            )
        seen.add(last, ctx.where(placement))
    return rows


def _cell(rows: Sequence[Row]) -> str:
    if not rows:
        return "–"
    error = statistics.median(abs(r["predicted_ms"] - r["measured_ms"]) / r["measured_ms"] for r in rows)
    ratio = statistics.median(r["predicted_ms"] / r["measured_ms"] for r in rows)
    return f"{100.0 * error:.1f} % ({ratio:.2f}, {len(rows)})"


GROUPS: Sequence[tuple[str, Callable[[Row], bool]]] = (
    ("round 1", lambda r: r["round"] == 1),
    ("round 2", lambda r: r["round"] == 2),
    ("SSD", lambda r: r["kind"] == "ssd"),
    ("FC", lambda r: r["kind"] == "fc15k"),
    ("SATA", lambda r: r["kind"] == "sata7k"),
    ("source only", lambda r: r["role"] == "source"),
    ("target only", lambda r: r["role"] == "target"),
    ("source and target", lambda r: r["role"] == "source+target"),
    ("filled (empty before)", lambda r: r["disks_before"] == 0),
    ("left with one disk", lambda r: r["disks_after"] == 1),
    ("a sequential stream on it after", lambda r: r["sequential"]),
    ("no sequential stream", lambda r: not r["sequential"]),
    ("no credible fit", lambda r: not r["fitted"]),
    ("no reads after the moves", lambda r: r["reads_after"] < 0.5),
)


def table(rows: Sequence[Row]) -> list[str]:
    lines = ["| datastores touched | median error (predicted/measured, count) |", "| --- | --- |"]
    lines.append(f"| all | {_cell(rows)} |")
    for family in sorted({r["family"] for r in rows}):
        lines.append(f"| {family} | {_cell([r for r in rows if r['family'] == family])} |")
    for label, keep in GROUPS:
        chosen = [r for r in rows if keep(r)]
        if chosen:
            lines.append(f"| {label} | {_cell(chosen)} |")
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("specs", nargs="+", help="FAMILY:FIRST-LAST, e.g. hetero:1-30")
    parser.add_argument("--rows", type=Path, help="write every row to this JSON file")
    args = parser.parse_args(argv)
    families = {f.name: f for f in harness.FAMILIES}
    rows: list[Row] = []
    for spec in args.specs:
        name, _, span = spec.partition(":")
        first, _, last = span.partition("-")
        if name not in families or not first.isdigit() or not (last or first).isdigit():
            parser.error(f"{spec!r}: want FAMILY:FIRST-LAST with FAMILY one of {', '.join(families)}")
        for seed in range(int(first), int(last or first) + 1):
            rows.extend(run(families[name], seed))
    if args.rows is not None:
        args.rows.write_text(json.dumps(rows, indent=1), encoding="utf-8")
    print("\n".join(table(rows)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
