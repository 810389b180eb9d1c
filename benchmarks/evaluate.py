"""Basil's evaluation against the lab's storage physics: seeded scenario families, baselines, rounds.

Runs every policy of ``evaluation.policies.POLICIES`` (no moves, the naive latency-greedy policy,
Basil for one to three rounds, the exhaustive best on small pods) on each seeded configuration of
``evaluation.harness.FAMILIES`` (BASIL §6.2, §6.3, §6.4, skewed §6.4, heterogeneous and skewed
heterogeneous pods with flash and sequential streams, large random pods), scores every placement on
the physics' ground truth and writes report.md, SVG plots and results.json. Prints the issue's
target figures. Needs ``build/basil-evaluate`` (``make lab``).

Run: ``make evaluate`` (full, into build/evaluation) or
``.venv/bin/python benchmarks/evaluate.py --smoke --out /tmp/eval`` (three configurations).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from evaluation import harness
from evaluation.labtool import ROOT
from evaluation.run import evaluate, rewrite


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--smoke", action="store_true", help="three small configurations, short windows")
    parser.add_argument("--out", type=Path, default=ROOT / "build" / "evaluation", help="report directory")
    parser.add_argument("--families", help="comma-separated family names (default: all)")
    parser.add_argument("--limit", type=int, help="at most this many configurations per family")
    parser.add_argument(
        "--seeds",
        help="seeds FIRST-LAST for every chosen family instead of its own (e.g. 61-120: configurations the "
        "rules were not chosen on)",
    )
    parser.add_argument(
        "--report-only", action="store_true", help="rewrite the report from OUT/results.json, run nothing"
    )
    args = parser.parse_args(argv)
    families = args.families.split(",") if args.families else None
    known = {f.name for f in harness.FAMILIES}
    if families is not None and (unknown := sorted(set(families) - known)):
        parser.error(f"--families: unknown {', '.join(unknown)}; known: {', '.join(sorted(known))}")
    seeds: list[int] | None = None
    if args.seeds is not None:
        first, _, last = args.seeds.partition("-")
        try:
            seeds = list(range(int(first), int(last or first) + 1))
        except ValueError:
            parser.error(f"--seeds: want FIRST-LAST (integers), got {args.seeds!r}")
        if not seeds:
            parser.error(f"--seeds: {args.seeds!r} is empty")
    command = "python benchmarks/evaluate.py " + " ".join(argv if argv is not None else sys.argv[1:])
    if args.report_only:
        run = rewrite(args.out)
    else:
        run = evaluate(
            args.out,
            smoke=args.smoke,
            families=families,
            limit=args.limit,
            seeds=seeds,
            command=command.strip(),
        )
    print()
    for line in run.targets.lines:
        print(line)
    if run.problems:
        print(f"\nCONSISTENCY: {len(run.problems)} violations")
        for p in run.problems:
            print(f"  {p}")
    print(f"\n{len(run.results)} configurations in {run.seconds:.0f} s; report: {run.report}")
    return 1 if run.problems else 0


if __name__ == "__main__":
    sys.exit(main())
