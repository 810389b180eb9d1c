"""``basil whatif``: what disks would see consolidated on one datastore (Casale et al.), offline."""

from __future__ import annotations

import json
from pathlib import Path

import click

from basil.core.consolidation import ConsolidationPrediction, whatif_from_mapping
from basil.errors import Problem, ValidationError


@click.command("whatif")
@click.option(
    "--input",
    "input_path",
    required=True,
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help='WHATIF.json: {"datastore": {"queue_depth": 32}, "disks": [{"name", "read_iops", "write_iops", '
    '"read_latency_ms", "write_latency_ms", ["read_oio", "write_oio", "group", "alone"]}]}.',
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
def whatif(*, input_path: Path, as_json: bool) -> None:
    """Predict each disk's IOPS and read/write latency, and the datastore's mix, after consolidation.

    Each disk's figures are what it showed where it ran (ideally alone); disks sharing a "group"
    were measured together, so only other groups add interference. Nothing is changed anywhere.
    """
    try:
        raw = json.loads(input_path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ValidationError([Problem(str(input_path), f"is not JSON: {err}")], "what-if") from None
    prediction = whatif_from_mapping(raw)
    if as_json:
        click.echo(json.dumps(prediction.to_dict(), indent=2))
        return
    click.echo(_table(prediction))


def _table(p: ConsolidationPrediction) -> str:
    lines = [
        f"datastore: {p.read_mix:.0%} reads / {p.write_mix:.0%} writes, {p.read_iops:.0f} read + "
        f"{p.write_iops:.0f} write IO/s (overhead factor c_oh {p.overhead_factor:.3f}, "
        f"max_conn {p.device.max_conn:g}, write share {p.device.write_share:.2f})",
        f"{'disk':<24} {'group':<12} {'IO/s':>8} {'read ms':>8} {'write ms':>9}"
        "  (was: IO/s, read ms, write ms)",
    ]
    for w, m in zip(p.workloads, p.inputs, strict=True):
        lines.append(
            f"{w.name:<24} {w.group or '-':<12} {w.read_iops + w.write_iops:>8.1f} {w.read_latency_ms:>8.2f} "
            f"{w.write_latency_ms:>9.2f}  ({m.iops:.1f}, {m.read_latency_ms:.2f}, {m.write_latency_ms:.2f})"
            + ("" if m.alone else "  [never measured alone]")
        )
    return "\n".join(lines)
