"""Offline BASIL commands: ``basil recommend``, ``basil place`` and ``basil model calibrate``.

They read files, call the pure core and print; nothing here talks to vCenter. A bad file raises
:class:`basil.errors.ValidationError`, which the ``basil`` group turns into ``error: ...`` on
stderr and exit status 2, with no partial plan on stdout.
"""

from __future__ import annotations

import csv
import io
import json
import math
import textwrap
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click

from basil.core.balancer import recommend as recommend_plan
from basil.core.calibration import Calibration, ErrorSummary, calibrate, grid_from_rows
from basil.core.placement import PlacementRequest, PlacementResult, placement_to_dict
from basil.core.placement import place as place_disk
from basil.core.plan import Plan, PodOutcome, plan_to_dict
from basil.core.slo import GOAL_BALANCE, GOAL_SLO, GOALS, SloResult, parse_slo, recommend_slo, slo_to_dict
from basil.core.snapshot import Snapshot, SnapshotDocument, parse_snapshot
from basil.core.workload_model import FLAG_TEXT, WorkloadParams
from basil.errors import Problem, ValidationError


def _read_json(path: Path, what: str) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise ValidationError(
            [Problem(what, f"{path} is not valid JSON: {err.msg} at line {err.lineno} column {err.colno}")],
            what,
        ) from err
    except UnicodeDecodeError as err:
        raise ValidationError([Problem(what, f"{path} is not UTF-8 text")], what) from err


def _load_snapshot(path: Path) -> SnapshotDocument:
    document = _read_json(path, "snapshot")
    # Ping-pong avoidance needs the snapshot's time; a file that carries last_moved but no
    # options.now is read as taken now.
    default_now = None
    disks = document.get("disks") if isinstance(document, dict) else None
    if isinstance(disks, list) and any(isinstance(d, dict) and "last_moved" in d for d in disks):
        default_now = time.time()
    return parse_snapshot(document, default_now=default_now)


def _dump(data: object) -> None:
    click.echo(json.dumps(data, indent=2, allow_nan=False, ensure_ascii=False))


def _table(headers: Sequence[str], rows: Sequence[Sequence[str]], indent: str = "  ") -> list[str]:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]
    lines = [indent + "  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip()]
    for row in rows:
        lines.append(indent + "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())
    return lines


def _n(value: float) -> str:
    return f"{value:.4g}"


def _p(value: float) -> str:
    return f"{value:.2f}" if value >= 0.1 else f"{value:.3g}"


def _wrap(text: str, indent: str = "", first: str | None = None) -> list[str]:
    initial = indent if first is None else first
    return textwrap.wrap(text, width=100, initial_indent=initial, subsequent_indent=indent)


def _pod_lines(outcome: PodOutcome, plan: Plan, free: dict[str, float]) -> list[str]:
    lines = [
        "",
        f"Pod {outcome.pod}: imbalance f = σ/μ "
        f"{outcome.before.imbalance:.3f} → {outcome.after.imbalance:.3f} "
        f"(threshold {outcome.threshold:g}); {outcome.moves} move(s), {outcome.gb:.1f} GB",
        *_wrap(f"stopped: {outcome.stop} ({outcome.stop_reason})", "    ", "  "),
    ]
    rows = []
    for name, n_before in outcome.before.normalized_load.items():
        model = plan.datastores[name]
        p = _p(model.effective_performance) + ("*" if model.new else "")
        n_after = outcome.after.normalized_load[name]
        rows.append([name, model.source, p, _n(n_before), _n(n_after), f"{free[name]:.1f}"])
    for name in outcome.excluded:
        model = plan.datastores[name]
        rows.append([name, model.source, _p(model.effective_performance), "-", "-", f"{free[name]:.1f}"])
    lines += _table(["datastore", "model", "P", "N before", "N after", "free GB after"], rows)
    if any(plan.datastores[name].new for name in outcome.before.normalized_load):
        lines.append("  * no device model yet: the pod's stand-in P (BASIL §6.3)")
    return lines


def _move_lines(plan: Plan) -> list[str]:
    if not plan.moves:
        return ["No moves recommended."]
    rows = [
        [
            str(m.number),
            m.vm,
            ", ".join(m.disks),
            f"{m.size_gb:.1f}",
            _n(m.load),
            f"{m.source} → {m.target}",
            f"{_n(m.source_n_before)} → {_n(m.source_n_after)}",
            f"{_n(m.target_n_before)} → {_n(m.target_n_after)}",
            f"{m.imbalance_before:.3f} → {m.imbalance_after:.3f}",
        ]
        for m in plan.moves
    ]
    lines = [f"Moves ({len(plan.moves)}, {plan.total_gb:.1f} GB; apply in this order):"]
    lines += _table(["#", "VM", "disk(s)", "GB", "L", "from → to", "N from", "N to", "f"], rows)
    lines += ["", "Reasons:"]
    for m in plan.moves:
        lines += _wrap(f"[{m.reason_code}] {m.reason}", indent="      ", first=f"  {m.number:>2}. ")
    return lines


def _note_lines(plan: Plan) -> list[str]:
    notes = list(plan.notes)
    for disk, flags in plan.flagged_disks.items():
        notes += [f"disk {disk}: {FLAG_TEXT[flag]}" for flag in flags]
    for pinned in plan.pinned:
        notes.append(f"not moved: {', '.join(pinned.disks)} on {pinned.datastore}: {pinned.reason}")
    if not notes:
        return []
    lines = ["", "Notes:"]
    for note in notes:
        lines += _wrap(note, indent="    ", first="  - ")
    return lines


def format_plan(plan: Plan, snapshot: Snapshot, source: str) -> str:
    """The readable form of a plan: per pod the datastores before/after, then the moves with reasons."""
    lines = [f"BASIL recommendation for {source}"]
    if snapshot.description:
        lines += _wrap(snapshot.description)
    free = {ds.name: ds.free_gb for ds in snapshot.datastores}
    for move in plan.moves:
        free[move.source] += move.size_gb
        free[move.target] -= move.size_gb
    for outcome in plan.pods:
        lines += _pod_lines(outcome, plan, free)
    lines.append("")
    lines += _move_lines(plan)
    lines += _note_lines(plan)
    return "\n".join(lines)


@click.command()
@click.option(
    "--snapshot",
    "snapshot_path",
    required=True,
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Snapshot JSON: datastores, disks, options (see README, 'Offline commands').",
)
@click.option("--json", "as_json", is_flag=True, help="Print the plan as JSON instead of a table.")
@click.option(
    "--goal",
    type=click.Choice(GOALS),
    help="balance (BASIL) or slo (latency targets per priority group, the snapshot's 'slo' section); "
    "default: slo when the snapshot has that section, else balance.",
)
def recommend(snapshot_path: Path, as_json: bool, goal: str | None) -> None:
    """Recommend Storage vMotions that balance each pod's IO load (BASIL §5, Algorithm 1).

    Reads a snapshot of datastores (P or device samples) and virtual disks (L, a workload model or
    samples), computes each datastore's normalized load N = ΣL / P and moves disks from the most to
    the least loaded datastores while that lowers the imbalance σ/μ of N. Nothing is changed
    anywhere: the plan is only printed.
    """
    document = _load_snapshot(snapshot_path)
    if (goal or (GOAL_SLO if document.slo is not None else GOAL_BALANCE)) == GOAL_SLO:
        _recommend_slo(document, str(snapshot_path), as_json)
        return
    plan = recommend_plan(document.snapshot, document.params)
    if as_json:
        _dump(plan_to_dict(plan))
    else:
        click.echo(format_plan(plan, document.snapshot, str(snapshot_path)))


def _recommend_slo(document: SnapshotDocument, source: str, as_json: bool) -> None:
    if document.slo is None:
        raise ValidationError(
            [Problem("slo", "--goal slo needs the snapshot's slo section (groups and DRTs)")]
        )
    spec = parse_slo(document.slo, document.snapshot)
    result = recommend_slo(
        document.snapshot, document.params, spec.params, spec.membership, measured_ms=spec.measured_ms
    )
    if as_json:
        _dump({**plan_to_dict(result.plan), "slo": slo_to_dict(result)})
    else:
        click.echo(format_slo(result, document.snapshot, source))


def _opt_ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.3g}"


def format_slo(result: SloResult, snapshot: Snapshot, source: str) -> str:
    """The readable form of an SLO round: per pod its groups and tiers before/after, then the moves."""
    lines = [f"SLO recommendation for {source} (latency targets per priority group, Lipetz et al.)"]
    if snapshot.description:
        lines += _wrap(snapshot.description)
    for report, outcome in zip(result.pods, result.plan.pods, strict=True):
        lines += [
            "",
            f"Pod {report.pod}: damage {report.damage_before:.4g} → {report.damage_after:.4g}; "
            f"{outcome.moves} move(s), {outcome.gb:.1f} GB; queues {report.queue_model}, "
            f"utilisation cap {report.utilisation_cap:.0%}",
            *_wrap(f"stopped: {outcome.stop} ({outcome.stop_reason})", "    ", "  "),
        ]
        rows = [
            [
                g.name,
                f"{g.drt_ms:g}",
                str(g.disks),
                f"{g.iops:.0f}",
                _opt_ms(g.measured_ms),
                f"{_opt_ms(g.predicted_ms_before)} → {_opt_ms(g.predicted_ms_after)}",
                f"{g.damage_before:.4g} → {g.damage_after:.4g}",
            ]
            for g in report.groups
        ]
        lines += _table(["group", "DRT ms", "disks", "IOPS", "measured ms", "predicted ms", "damage"], rows)
        rows = [
            [
                name,
                f"{t.kind} ×{t.devices:.3g} ({t.source})",
                f"{t.reference_ms * t.scale:.3g}",
                f"{report.utilisation_before[name]:.0%} → {report.utilisation_after[name]:.0%}",
            ]
            for name, t in sorted(report.tiers.items(), key=lambda kv: kv[1].reference_ms * kv[1].scale)
        ]
        lines += ["", *_table(["datastore", "service model", "8 KB read ms", "utilisation"], rows)]
    lines.append("")
    if not result.plan.moves:
        lines.append("No moves recommended.")
    else:
        lines.append(f"Moves ({len(result.plan.moves)}, {result.plan.total_gb:.1f} GB; apply in this order):")
        for m in result.plan.moves:
            lines += _wrap(f"[{m.reason_code}] {m.reason}", indent="      ", first=f"  {m.number:>2}. ")
    lines += _note_lines(result.plan)
    return "\n".join(lines)


def format_placement(result: PlacementResult, request: PlacementRequest) -> str:
    w = request.workload
    what = (
        f"workload OIO {w.oio:g}, {w.io_size_kb:g} KB, {w.read_pct:g} % read, {w.random_pct:g} % random"
        if w is not None
        else "given load"
    )
    lines = [f"Initial placement of a {request.size_gb:g} GB disk, L = {_n(result.load)} ({what})", ""]
    rows = [
        [
            str(r.rank),
            r.datastore,
            r.pod,
            r.model,
            _p(r.performance),
            _n(r.n_before),
            _n(r.n_after),
            f"{r.imbalance_before:.3f} → {r.imbalance_after:.3f}",
            f"{r.free_after_gb:.1f}",
        ]
        for r in result.ranked
    ]
    if rows:
        lines += _table(
            ["rank", "datastore", "pod", "model", "P", "N now", "N after", "pod f", "free GB after"], rows
        )
    else:
        lines.append("  no eligible datastore")
    if result.excluded:
        lines.append("")
        lines.append("Excluded:")
        for e in result.excluded:
            lines += _wrap(f"{e.datastore}: " + "; ".join(v.message for v in e.reasons), "    ", "  ")
    for flag in result.flags:
        lines.append(f"Note: {FLAG_TEXT[flag]}")
    lines.append("")
    best = result.recommended
    lines += _wrap(
        f"Recommended: {best.datastore} ({best.reason})" if best else "Recommended: none", "  ", ""
    )
    return "\n".join(lines)


@click.command()
@click.option(
    "--snapshot",
    "snapshot_path",
    required=True,
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Snapshot JSON, as for 'basil recommend'.",
)
@click.option("--size-gb", type=float, required=True, help="Size of the new disk (GB).")
@click.option("--oio", type=float, help="Outstanding IOs (90th percentile).")
@click.option("--io-size-kb", type=float, help="IO size in KB.")
@click.option("--read-pct", type=float, help="Read percentage, 0-100.")
@click.option("--random-pct", type=float, help="Random percentage, 0-100.")
@click.option(
    "--load", "load", type=float, help="The load L itself, instead of the four workload parameters."
)
@click.option("--vm", help="VM the disk belongs to (keeps an existing VM's disks together, anti-affinity).")
@click.option("--host", "hosts", multiple=True, help="Host the disk will be used from (repeatable).")
@click.option("--pod", help="Only consider datastores of this pod.")
@click.option("--json", "as_json", is_flag=True, help="Print the ranking as JSON.")
def place(
    *,
    snapshot_path: Path,
    size_gb: float,
    oio: float | None,
    io_size_kb: float | None,
    read_pct: float | None,
    random_pct: float | None,
    load: float | None,
    vm: str | None,
    hosts: tuple[str, ...],
    pod: str | None,
    as_json: bool,
) -> None:
    """Rank datastores for a new virtual disk by the normalized load it would give them (BASIL §5).

    Give the workload as --oio, --io-size-kb, --read-pct and --random-pct (or its load as --load).
    Exits with status 1 when no datastore is eligible.
    """
    workload_args = {"oio": oio, "io_size_kb": io_size_kb, "read_pct": read_pct, "random_pct": random_pct}
    given = {k: v for k, v in workload_args.items() if v is not None}
    workload = None
    if len(given) == len(workload_args):
        workload = WorkloadParams(given["oio"], given["io_size_kb"], given["read_pct"], given["random_pct"])
    request = PlacementRequest(
        size_gb=size_gb, workload=workload, load=load, vm=vm, hosts=frozenset(hosts), pod=pod
    )
    problems: list[Problem] = []
    try:
        document = _load_snapshot(snapshot_path)
    except ValidationError as err:
        problems += err.problems
        document = None
    if given and workload is None:
        missing = [_option(name) for name in workload_args if name not in given]
        problems.append(Problem(", ".join(missing), "needed with the other workload parameters"))
    else:
        for p in request.validate(document.snapshot if document is not None else None):
            name = (
                "--oio/--io-size-kb/--read-pct/--random-pct (or --load)"
                if p.field == "workload"
                else _option(p.field)
            )
            problems.append(Problem(name, p.message))
    if problems or document is None:
        raise ValidationError(problems, "placement request")
    result = place_disk(document.snapshot, request, document.params)
    if as_json:
        _dump(placement_to_dict(result))
    else:
        click.echo(format_placement(result, request))
    if result.recommended is None:
        raise SystemExit(1)


def _option(field: str) -> str:
    return "--" + field.replace("_", "-")


# --- basil model calibrate ---------------------------------------------------------------------------


def _read_grid(path: Path) -> list[object]:
    text = path.read_text(encoding="utf-8")
    if path.suffix.lower() == ".json" or text.lstrip().startswith(("[", "{")):
        data = _read_json(path, "grid")
        if isinstance(data, dict) and set(data) == {"points"}:
            data = data["points"]
        if not isinstance(data, list):
            raise ValidationError([Problem("grid", 'must be a list of points or {"points": [...]}')], "grid")
        return list(data)
    reader = csv.DictReader(io.StringIO(text))
    return [dict(row) for row in reader]


def _pct(value: float) -> str:
    return f"{value * 100:.1f} %" if math.isfinite(value) else "-"


def _summary_rows(a: ErrorSummary, b: ErrorSummary) -> list[list[str]]:
    rows = [
        ["points", str(a.points), str(b.points)],
        ["mean |error|", _pct(a.mean_abs), _pct(b.mean_abs)],
        ["median |error|", _pct(a.median_abs), _pct(b.median_abs)],
        ["90th percentile |error|", _pct(a.p90_abs), _pct(b.p90_abs)],
        ["max |error|", _pct(a.max_abs), _pct(b.max_abs)],
        ["within ±10 %", _pct(a.within_10pct), _pct(b.within_10pct)],
        ["within ±25 %", _pct(a.within_25pct), _pct(b.within_25pct)],
    ]
    for (label, n_all), (_, n_seq) in zip(a.histogram, b.histogram, strict=True):
        rows.append([f"  error {label}", str(n_all), str(n_seq)])
    return rows


def format_calibration(result: Calibration, source: str) -> str:
    c = result.constants
    lines = [
        f"Workload model calibration from {len(result.relative_errors)} grid points in {source} "
        "(BASIL eq. 1-3)",
        "",
        f"  K1 = {c.k1:.6g}   (median of eq. 3 over {result.pairs[0]} pairs differing in OIO only)",
        f"  K2 = {c.k2:.6g}   (median over {result.pairs[1]} pairs differing in IO size only)",
        f"  K3 = {c.k3:.6g}   (median over {result.pairs[2]} pairs differing in read % only)",
        f"  K4 = {c.k4:.6g}   (median over {result.pairs[3]} pairs differing in random % only)",
        f"  K5 = {result.k5:.6g}   (median of eq. 1's numerator / latency)",
        f"  {result.sequential_points} points at ≤ 5 % random left out of K1-K5 (eq. 1 over-predicts them, "
        "BASIL §3);",
        f"  their measured / predicted latency: median {result.sequential_factor:.3g}",
        "",
        "Relative error (predicted - measured) / measured, as in BASIL Figure 3:",
    ]
    lines += _table(
        ["", "all points", f"without 100 % sequential ({result.sequential_points} points)"],
        _summary_rows(result.summary, result.summary_without_sequential),
    )
    lines += [
        "",
        'Use K1-K4 as options.workload_model {"k1", "k2", "k3", "k4"} in a snapshot; K5 is device-specific.',
    ]
    return "\n".join(lines)


def _summary_dict(s: ErrorSummary) -> dict[str, Any]:
    def value(x: float) -> float | None:
        return x if math.isfinite(x) else None  # no points: no statistic

    return {
        "points": s.points,
        "mean_abs": value(s.mean_abs),
        "median_abs": value(s.median_abs),
        "p90_abs": value(s.p90_abs),
        "max_abs": value(s.max_abs),
        "within_10pct": value(s.within_10pct),
        "within_25pct": value(s.within_25pct),
        "histogram": dict(s.histogram),
    }


@click.group()
def model() -> None:
    """Workload and device models (BASIL §3-4)."""


@model.command("calibrate")
@click.option(
    "--grid",
    "grid_path",
    required=True,
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="CSV (header oio,io_size_kb,read_pct,random_pct,latency_ms) or JSON list of such objects.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the constants and errors as JSON.")
def calibrate_command(grid_path: Path, as_json: bool) -> None:
    """Derive K1-K5 of the workload model from measured latencies (BASIL eq. 2-3, Figure 3).

    K1-K4 are the medians of eq. 3 over all pairs of grid points that differ in one parameter only;
    K5 is the median of eq. 1's numerator over latency. Points at 5 % random or less (≈100 %
    sequential, which eq. 1 over-predicts) are left out of K1-K5 and get their own factor.
    """
    points = grid_from_rows(_read_grid(grid_path))
    result = calibrate(points)
    if as_json:
        c = result.constants
        summary = _summary_dict(result.summary)
        without = _summary_dict(result.summary_without_sequential)
        _dump(
            {
                "k1": c.k1,
                "k2": c.k2,
                "k3": c.k3,
                "k4": c.k4,
                "k5": result.k5,
                "pairs": {
                    "k1": result.pairs[0],
                    "k2": result.pairs[1],
                    "k3": result.pairs[2],
                    "k4": result.pairs[3],
                },
                "sequential_points": result.sequential_points,
                "sequential_factor": (
                    result.sequential_factor if math.isfinite(result.sequential_factor) else None
                ),
                "relative_error": {"all": summary, "without_sequential": without},
            }
        )
    else:
        click.echo(format_calibration(result, str(grid_path)))
