"""``basil recommend`` with the SLO goal, on a snapshot with groups and DRTs (examples/slo-tiers.json)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from basil.cli import main
from tests.core.builders import EXAMPLES

SLO_TIERS = EXAMPLES / "slo-tiers.json"


def run(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


def example() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(SLO_TIERS.read_text(encoding="utf-8"))
    return data


def write(tmp_path: Path, document: object) -> str:
    path = tmp_path / "snapshot.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    return str(path)


def test_example_moves_gold_to_flash() -> None:
    result = run("recommend", "--snapshot", str(SLO_TIERS), "--json")
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    pod = out["slo"]["pods"]["tiered"]
    gold = next(g for g in pod["groups"] if g["name"] == "gold")
    assert gold["predicted_ms_before"] > gold["drt_ms"] >= gold["predicted_ms_after"]
    assert gold["measured_ms"] is not None
    assert pod["damage_after"] < pod["damage_before"]
    moved = {m["vm"] for m in out["moves"]}
    assert moved <= {"erp-db-1", "erp-db-2", "erp-app"}
    assert {m["to"] for m in out["moves"]} == {"ssd-01"}
    for m in out["moves"]:
        effect = out["slo"]["moves"][str(m["move"])]
        assert effect["damage_after"] < effect["damage_before"]
        assert "gold" in {g["group"] for g in effect["groups"]}
        assert m["reason_code"] == "meetResponseTimeTargets"


def test_table_output_names_groups_and_moves() -> None:
    result = run("recommend", "--snapshot", str(SLO_TIERS))
    assert result.exit_code == 0, result.output
    assert "group   DRT ms" in result.output
    assert "[meetResponseTimeTargets] erp-db-1 (gold) from sata-01" in result.output


def test_balance_goal_on_the_same_file_ignores_groups() -> None:
    result = run("recommend", "--snapshot", str(SLO_TIERS), "--goal", "balance", "--json")
    assert result.exit_code == 0, result.output
    assert "slo" not in json.loads(result.output)


def test_goal_slo_without_section_is_an_error(tmp_path: Path) -> None:
    doc = example()
    del doc["slo"]
    result = run("recommend", "--snapshot", write(tmp_path, doc), "--goal", "slo")
    assert result.exit_code == 2
    assert "slo: --goal slo needs the snapshot's slo section" in result.output


def test_bad_groups_name_their_fields(tmp_path: Path) -> None:
    doc = example()
    doc["slo"]["groups"][0]["drt_ms"] = -1
    doc["slo"]["groups"][1]["colour"] = "red"
    doc["slo"]["measured_ms"]["nobody/scsi0:1"] = 3
    result = run("recommend", "--snapshot", write(tmp_path, doc))
    assert result.exit_code == 2
    assert "slo.groups[0].drt_ms: must be greater than 0 ms, got -1" in result.output
    assert "slo.groups[1].colour: unknown field" in result.output
    assert "slo.measured_ms.nobody/scsi0:1: unknown disk" in result.output
    assert "Moves" not in result.output


def test_tag_naming_no_group_and_disk_in_two_groups(tmp_path: Path) -> None:
    doc = example()
    doc["slo"]["vm_tags"]["backup"] = ["basil-slo/platinum"]
    doc["slo"]["vm_tags"]["erp-db-1"] = ["basil-slo/silver"]
    result = run("recommend", "--snapshot", write(tmp_path, doc))
    assert result.exit_code == 2
    assert "slo.vm_tags.backup: tag 'basil-slo/platinum' names no group" in result.output
    assert "disk erp-db-1/scsi0:1 is in two groups" in result.output


def test_tier_without_model_or_kind(tmp_path: Path) -> None:
    doc = example()
    del doc["datastores"][2]["device_kind"]
    del doc["datastores"][2]["spindles"]
    result = run("recommend", "--snapshot", write(tmp_path, doc))
    assert result.exit_code == 2
    assert (
        "datastores[2].device_kind: datastore sata-01 has no device model and no device kind" in result.output
    )


def test_calibration_to_the_measured_latency(tmp_path: Path) -> None:
    # The example's measured latencies scale each datastore's model; without them, Table I alone.
    calibrated = json.loads(run("recommend", "--snapshot", str(SLO_TIERS), "--json").output)
    doc = example()
    doc["slo"]["calibrate"] = False
    plain = json.loads(run("recommend", "--snapshot", write(tmp_path, doc), "--json").output)
    sata = next(
        d for d in calibrated["slo"]["pods"]["tiered"]["datastores"].values() if d["device_kind"] == "sata7k"
    )
    assert sata["calibration"] != 1.0
    assert all(d["calibration"] == 1.0 for d in plain["slo"]["pods"]["tiered"]["datastores"].values())
    gold = next(g for g in calibrated["slo"]["pods"]["tiered"]["groups"] if g["name"] == "gold")
    # Calibrated, the prediction at the current placement is what the disks measured (IOPS-weighted
    # per datastore, so per group only close).
    assert gold["predicted_ms_before"] == pytest.approx(gold["measured_ms"], rel=0.35)
    doc["slo"]["calibrate"] = "yes"
    bad = run("recommend", "--snapshot", write(tmp_path, doc))
    assert "slo.calibrate: must be true or false, got 'yes'" in bad.output
