"""``basil capacity``: the IOPS a trace needs so that a fraction of its IOs meet a latency bound (Lu)."""

from __future__ import annotations

import json
from pathlib import Path

import click

from basil.core.shaping import (
    DEFAULT_EXTRA_CAPACITY,
    DEFAULT_REL_TOL,
    CapacityParams,
    CapacityReport,
    multi_client_capacity,
    plan_capacity,
)
from basil.core.trace import FORMATS, Trace, read_trace
from basil.errors import Problem, ValidationError


def load_trace(path: Path, fmt: str | None) -> Trace:
    """Read *path* as a trace; a problem names the file and the line."""
    with path.open(encoding="utf-8", errors="replace", newline="") as lines:
        try:
            return read_trace(lines, fmt)
        except ValidationError as err:
            raise ValidationError(
                [Problem(f"{path}: {p.field}", p.message) for p in err.problems], "trace"
            ) from None


def _cli_params(fraction: float, bound_ms: float, extra: float, rel_tol: float) -> CapacityParams:
    params = CapacityParams(fraction=fraction, bound_ms=bound_ms, extra_capacity=extra, rel_tol=rel_tol)
    flags = {
        "fraction": "--fraction",
        "bound_ms": "--bound-ms",
        "extra_capacity": "--extra",
        "rel_tol": "--rel-tol",
    }
    problems = [Problem(flags.get(p.field, p.field), p.message) for p in params.problems()]
    if problems:
        raise ValidationError(problems, "capacity question")
    return params


@click.command("capacity")
@click.option(
    "--trace",
    "traces",
    required=True,
    multiple=True,
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Request trace (SPC: ASU,LBA,size,opcode,timestamp; or CSV: timestamp[,size[,op]]). "
    "Repeat for several clients multiplexed on one server.",
)
@click.option(
    "--fraction", required=True, type=float, help="Fraction f of IOs that must meet the bound, in (0, 1]."
)
@click.option(
    "--bound-ms", "bound_ms", required=True, type=float, help="Response-time bound δ in milliseconds."
)
@click.option(
    "--format", "fmt", type=click.Choice(FORMATS), help="Trace format (guessed from the first line)."
)
@click.option(
    "--extra",
    type=float,
    default=DEFAULT_EXTRA_CAPACITY,
    show_default=True,
    help="ΔC for Miser as a fraction of the capacity found.",
)
@click.option(
    "--rel-tol", "rel_tol", type=float, default=DEFAULT_REL_TOL, show_default=True, help="Search precision."
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")
@click.option(
    "--vm",
    help="Upload the trace to the service for this VM (name or id) instead: the service plans it and "
    "keeps the answer as the VM's reservation suggestion (token from BASIL_TOKEN).",
)
@click.option("--service", help="The service's https:// URL, with --vm (default: BASIL_URL).")
@click.option("--ca-path", "ca_path", help="Basil's certificate or CA, with --vm (default: BASIL_CA_PATH).")
def capacity(
    *,
    traces: tuple[Path, ...],
    fraction: float,
    bound_ms: float,
    fmt: str | None,
    extra: float,
    rel_tol: float,
    as_json: bool,
    vm: str | None,
    service: str | None,
    ca_path: str | None,
) -> None:
    """Capacity (IO/s) for a fraction of a trace's IOs to finish within a bound (RTT, Miser; Lu 2009).

    RTT splits the trace into a primary class that meets the bound and an overflow; a binary
    search finds the least capacity keeping the fraction. Miser then serves both classes on that
    capacity plus ΔC. With several --trace, each is planned alone and the sum of their shaped
    capacities is checked against the merged stream.
    """
    params = _cli_params(fraction, bound_ms, extra, rel_tol)
    if vm is not None:
        _upload(vm, traces, params, fmt=fmt, service=service, ca_path=ca_path, as_json=as_json)
        return
    loaded = [load_trace(path, fmt) for path in traces]
    reports = [plan_capacity(t.arrivals, params) for t in loaded]
    multi = (
        multi_client_capacity(
            [t.arrivals for t in loaded],
            fraction,
            params.bound_s,
            rel_tol,
            known=[(r.capacity_iops, r.capacity_full_iops) for r in reports],
        )
        if len(loaded) > 1
        else None
    )
    if as_json:
        out: dict[str, object] = {
            "traces": [
                {"path": str(path), "trace": t.summary(), **r.to_dict()}
                for path, t, r in zip(traces, loaded, reports, strict=True)
            ]
        }
        if multi is not None:
            out["multi_client"] = multi.to_dict()
        click.echo(json.dumps(out, indent=2))
        return
    for path, t, r in zip(traces, loaded, reports, strict=True):
        click.echo(_text(path, t, r))
    if multi is not None:
        click.echo(
            f"{len(loaded)} clients together, {fraction:.2%} within {bound_ms:g} ms: "
            f"sum of shaped capacities {multi.estimate_iops:.0f} IO/s, "
            f"merged stream {multi.merged_iops:.0f} IO/s (estimate error {multi.estimate_error:+.1%}); "
            f"sum of 100 % capacities {multi.worst_case_sum_iops:.0f} IO/s"
        )


def _text(path: Path, trace: Trace, r: CapacityReport) -> str:
    info = trace.summary()
    p = r.params
    reads = info["read_fraction"]
    lines = [
        f"{path}: {r.requests} IOs over {r.duration_s:.1f} s (mean {r.mean_iops:.1f} IO/s"
        + (f", {float(reads):.0%} reads" if isinstance(reads, float) else "")
        + ")",
        f"  capacity for {p.fraction:.2%} within {p.bound_ms:g} ms: {r.capacity_iops:.0f} IO/s "
        f"(100 %: {r.capacity_full_iops:.0f} IO/s)",
        f"  overflow: {r.overflow_fraction:.2%} of IOs ({r.requests - r.primary})",
        f"  Miser at {r.miser_capacity_iops:.0f} IO/s (ΔC = {p.extra_capacity:.3g} × C): "
        f"primary {r.miser_primary.within_bound:.2%} within the bound; overflow response "
        f"p50 {r.miser_overflow.p50_ms:.1f} / p90 {r.miser_overflow.p90_ms:.1f} / "
        f"p99 {r.miser_overflow.p99_ms:.1f} / max {r.miser_overflow.max_ms:.1f} ms",
        f"  FCFS at the same capacity: {r.fcfs_all.within_bound:.2%} of all IOs within the bound",
        "  fraction → IO/s: " + ", ".join(f"{c.fraction:g} → {c.capacity_iops:.0f}" for c in r.curve),
    ]
    return "\n".join(lines)


def _upload(
    vm: str,
    traces: tuple[Path, ...],
    params: CapacityParams,
    *,
    fmt: str | None,
    service: str | None,
    ca_path: str | None,
    as_json: bool,
) -> None:
    """``--vm``: the one trace sent to the service, which plans it and keeps the VM's suggestion."""
    from basil.cli.vm_trace import suggestion_text, upload_vm_trace  # noqa: PLC0415

    if len(traces) != 1:
        raise ValidationError([Problem("--trace", "give exactly one trace with --vm")], "upload")
    question: dict[str, object] = {
        "fraction": params.fraction,
        "bound_ms": params.bound_ms,
        "extra_capacity": params.extra_capacity,
        "rel_tol": params.rel_tol,
    }
    if fmt is not None:
        question["format"] = fmt
    answer = upload_vm_trace(service=service, ca_path=ca_path, vm=vm, path=traces[0], question=question)
    click.echo(json.dumps(answer, indent=2) if as_json else suggestion_text(answer))
