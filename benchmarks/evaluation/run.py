"""One evaluation run: every family's seeded configurations, the checks, the targets and the report."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from . import harness, report
from .labtool import Window
from .policies import POLICIES, BasilRounds, Policy, Settings

SMOKE_SETTINGS = Settings(
    round_intervals=15, naive_intervals=6, naive_max_steps=12, warmup=6, truth=Window(120, 9, 6)
)


@dataclass(frozen=True, slots=True)
class Run:
    results: list[harness.ConfigResult]
    problems: list[str]
    targets: harness.Targets
    report: Path
    seconds: float


def smoke_policies() -> Sequence[Policy]:
    """The full table with Basil cut to two rounds."""
    return tuple(
        BasilRounds(p.name, p.params, rounds=2) if isinstance(p, BasilRounds) else p for p in POLICIES
    )


def evaluate(
    out_dir: Path,
    *,
    smoke: bool = False,
    families: Sequence[str] | None = None,
    limit: int | None = None,
    seeds: Sequence[int] | None = None,
    command: str = "",
    progress: bool = True,
) -> Run:
    settings = SMOKE_SETTINGS if smoke else Settings()
    policies = smoke_policies() if smoke else POLICIES
    t0 = time.perf_counter()
    results: list[harness.ConfigResult] = []
    for family in harness.FAMILIES:
        if families is not None and family.name not in families:
            continue
        chosen = list(seeds if seeds is not None else family.smoke_seeds if smoke else family.seeds)[:limit]
        started = time.perf_counter()
        for seed in chosen:
            results.append(harness.run_config(family, seed, settings, policies))
        if progress and chosen:
            print(
                f"{family.name}: {len(chosen)} configurations in {time.perf_counter() - started:.0f} s",
                flush=True,
            )
    problems = harness.check(results)
    targets = harness.targets(results)
    seconds = time.perf_counter() - t0
    path = report.write(
        results, targets, problems, out_dir, command=command, seconds=seconds, settings=settings
    )
    return Run(results, problems, targets, path, seconds)


def rewrite(out_dir: Path) -> Run:
    """The report again from the results.json in *out_dir*, without running anything."""
    results, settings, command, seconds = report.load(out_dir / "results.json")
    problems = harness.check(results)
    targets = harness.targets(results)
    path = report.write(
        results, targets, problems, out_dir, command=command, seconds=seconds, settings=settings
    )
    return Run(results, problems, targets, path, seconds)
