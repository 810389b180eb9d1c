"""``basil recommend``, ``basil place`` and ``basil model calibrate`` from the outside."""

from __future__ import annotations

import csv
import dataclasses
import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from basil.cli import main
from basil.core.workload_model import WorkloadConstants
from tests.core.builders import EXAMPLES, product_form_grid

TABLE2 = EXAMPLES / "basil-table2.json"
TABLE4 = EXAMPLES / "basil-table4.json"


def run(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


def write(tmp_path: Path, document: object, name: str = "snapshot.json") -> str:
    path = tmp_path / name
    path.write_text(json.dumps(document), encoding="utf-8")
    return str(path)


def table2() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(TABLE2.read_text(encoding="utf-8"))
    return data


def test_recommend_prints_a_readable_plan() -> None:
    result = run("recommend", "--snapshot", str(TABLE2))
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "Pod default: imbalance f = σ/μ" in out
    assert "3diskLUN → 9diskLUN" in out
    assert "balanceDatastoreIOLoad" in out
    assert "N before" in out
    assert "Reasons:" in out


def test_recommend_json_has_the_issue_shape() -> None:
    result = run("recommend", "--snapshot", str(TABLE2), "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["moves"]
    move = data["moves"][0]
    assert {"disk", "vm", "from", "to", "size_gb", "reason"} <= set(move)
    assert move["from"] == "3diskLUN"
    assert move["to"] == "9diskLUN"
    assert set(data["before"]) >= {"imbalance", "normalized_load"}
    assert set(data["before"]["normalized_load"]) == {"3diskLUN", "6diskLUN", "9diskLUN"}
    assert data["after"]["imbalance"] < data["before"]["imbalance"]
    assert data["summary"]["moves"] == len({m["move"] for m in data["moves"]})


def test_recommend_new_devices_example() -> None:
    result = run("recommend", "--snapshot", str(TABLE4))
    assert result.exit_code == 0, result.output
    assert "no device model" in result.stdout
    assert "6diskLUN → 3diskLUN" in result.stdout
    assert "6diskLUN → 9diskLUN" in result.stdout


def mutate(document: dict[str, Any], path: str, value: object) -> None:
    """Set (or delete, for value None) a field by a path like ``disks.0.size_gb``."""
    *parents, last = path.split(".")
    target: Any = document
    for part in parents:
        target = target[int(part)] if part.isdigit() else target[part]
    if value is None:
        del target[last]
    else:
        target[last] = value


@pytest.mark.parametrize(
    ("path", "value", "field"),
    [
        pytest.param("datastores.0.capacity_gb", None, "datastores[0].capacity_gb", id="missing-field"),
        pytest.param("disks.0.colour", "red", "disks[0].colour", id="unknown-field"),
        pytest.param("disks.0.datastore", "10diskLUN", "disks[0].datastore", id="unknown-datastore"),
        pytest.param("disks.0.size_gb", -10, "disks[0].size_gb", id="negative-size"),
        pytest.param("datastores.1.performance", 0, "datastores[1].performance", id="p-zero"),
        pytest.param("datastores.1.performance", -1.4, "datastores[1].performance", id="p-negative"),
        pytest.param("disks.2.workload.oio", math.nan, "disks[2].workload.oio", id="nan"),
        pytest.param("options.imbalance_threshold", "low", "options.imbalance_threshold", id="option-type"),
    ],
)
def test_recommend_rejects_bad_input_naming_the_field(
    tmp_path: Path, path: str, value: object, field: str
) -> None:
    document = table2()
    mutate(document, path, value)
    result = run("recommend", "--snapshot", write(tmp_path, document))
    assert result.exit_code != 0
    assert result.exit_code == 2
    assert field in result.stderr
    assert result.stdout == ""  # no partial plan


def test_recommend_reports_every_problem_at_once(tmp_path: Path) -> None:
    document = table2()
    mutate(document, "disks.0.size_gb", -1)
    mutate(document, "datastores.2.performance", 0)
    mutate(document, "disks.3.datastore", "nowhere")
    result = run("recommend", "--snapshot", write(tmp_path, document), "--json")
    assert result.exit_code == 2
    for field in ("disks[0].size_gb", "datastores[2].performance", "disks[3].datastore"):
        assert field in result.stderr
    assert result.stdout == ""


def test_recommend_rejects_invalid_json(tmp_path: Path) -> None:
    path = tmp_path / "broken.json"
    path.write_text('{"datastores": [', encoding="utf-8")
    result = run("recommend", "--snapshot", str(path))
    assert result.exit_code == 2
    assert "snapshot" in result.stderr
    assert "not valid JSON" in result.stderr
    assert result.stdout == ""


def test_recommend_needs_an_existing_file(tmp_path: Path) -> None:
    result = run("recommend", "--snapshot", str(tmp_path / "missing.json"))
    assert result.exit_code == 2
    assert "--snapshot" in result.stderr


def test_recommend_fills_in_now_for_last_moved(tmp_path: Path) -> None:
    # last_moved without options.now: the command reads the snapshot as taken now, so a disk moved
    # an hour ago stays put (24 h ping-pong window) and is listed as not moved.
    document = table2()
    mutate(document, "disks.1.last_moved", time.time() - 3600)
    result = run("recommend", "--snapshot", write(tmp_path, document), "--json")
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    assert "oltp-2/scsi0:1" not in {m["disk"] for m in data["moves"]}
    assert {p["code"] for p in data["pinned"]} == {"ping_pong"}


def test_place_ranks_datastores() -> None:
    args = ["place", "--snapshot", str(TABLE2), "--size-gb", "10"]
    result = run(*args, "--oio", "7", "--io-size-kb", "8", "--read-pct", "70", "--random-pct", "100")
    assert result.exit_code == 0, result.output
    assert "Recommended: 9diskLUN" in result.stdout
    as_json = run(*args, "--load", "608", "--json")
    assert as_json.exit_code == 0, as_json.output
    data = json.loads(as_json.stdout)
    assert data["recommended"] == "9diskLUN"
    assert [r["rank"] for r in data["ranked"]] == [1, 2, 3]


@pytest.mark.parametrize(
    ("extra", "field"),
    [
        pytest.param(["--size-gb", "-5", "--load", "1"], "--size-gb", id="negative-size"),
        pytest.param(["--size-gb", "nan", "--load", "1"], "--size-gb", id="nan-size"),
        pytest.param(["--size-gb", "5", "--oio", "4"], "--io-size-kb", id="partial-workload"),
        pytest.param(["--size-gb", "5"], "--oio", id="no-workload"),
        pytest.param(["--size-gb", "5", "--load", "1", "--pod", "gold"], "--pod", id="unknown-pod"),
        pytest.param(
            ["--size-gb", "5", "--oio", "4", "--io-size-kb", "8", "--read-pct", "170", "--random-pct", "1"],
            "--read-pct",
            id="read-pct-over-100",
        ),
    ],
)
def test_place_rejects_bad_arguments(extra: list[str], field: str) -> None:
    result = run("place", "--snapshot", str(TABLE2), *extra)
    assert result.exit_code == 2
    assert field in result.stderr
    assert result.stdout == ""


def test_place_reports_snapshot_and_argument_problems_together(tmp_path: Path) -> None:
    document = table2()
    mutate(document, "disks.0.size_gb", -1)
    result = run("place", "--snapshot", write(tmp_path, document), "--size-gb", "-2", "--load", "3")
    assert result.exit_code == 2
    assert "disks[0].size_gb" in result.stderr
    assert "--size-gb" in result.stderr


def test_place_without_an_eligible_datastore_exits_1(tmp_path: Path) -> None:
    document = table2()
    for ds in document["datastores"]:
        ds["maintenance"] = True
    result = run("place", "--snapshot", write(tmp_path, document), "--size-gb", "1", "--load", "1")
    assert result.exit_code == 1
    assert "in maintenance mode" in result.stdout
    assert "Recommended: none" in result.stdout


def grid_csv(tmp_path: Path, constants: WorkloadConstants, k5: float) -> Path:
    path = tmp_path / "grid.csv"
    with path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["oio", "io_size_kb", "read_pct", "random_pct", "latency_ms"])
        for p in product_form_grid(constants, k5):
            writer.writerow([p.oio, p.io_size_kb, p.read_pct, p.random_pct, repr(p.latency_ms)])
    return path


def test_calibrate_prints_constants_and_errors(tmp_path: Path) -> None:
    path = grid_csv(tmp_path, WorkloadConstants(3.0, 20.0, 0.2, 0.9), 50.0)
    result = run("model", "calibrate", "--grid", str(path))
    assert result.exit_code == 0, result.output
    for line in ("K1 = 3 ", "K2 = 20 ", "K3 = 0.2 ", "K4 = 0.9 ", "K5 = 50 "):
        assert line in result.stdout
    assert "without 100 % sequential (150 points)" in result.stdout
    as_json = run("model", "calibrate", "--grid", str(path), "--json")
    data = json.loads(as_json.stdout)
    assert data["k1"] == pytest.approx(3.0)
    assert data["k5"] == pytest.approx(50.0)
    assert data["relative_error"]["all"]["points"] == 750


def test_calibrate_reads_json_grids(tmp_path: Path) -> None:
    points = product_form_grid(WorkloadConstants(), 10.0)
    rows = [dataclasses.asdict(p) for p in points]
    path = write(tmp_path, {"points": rows}, "grid.json")
    result = run("model", "calibrate", "--grid", path, "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["k2"] == pytest.approx(WorkloadConstants().k2)


def test_calibrate_grid_of_only_sequential_points(tmp_path: Path) -> None:
    rows = [dataclasses.asdict(p) for p in product_form_grid(WorkloadConstants(), 10.0) if p.random_pct == 0]
    # With random % fixed at 0 no pair varies it, so K4 cannot be derived: a clear error.
    result = run("model", "calibrate", "--grid", write(tmp_path, rows, "grid.json"))
    assert result.exit_code == 2
    assert "K4" in result.stderr


def test_calibrate_rejects_a_bad_grid(tmp_path: Path) -> None:
    path = tmp_path / "bad.csv"
    path.write_text("oio,io_size_kb,read_pct,random_pct,latency\n4,8,50,100,3\n", encoding="utf-8")
    result = run("model", "calibrate", "--grid", str(path))
    assert result.exit_code == 2
    assert "grid[0].latency_ms" in result.stderr
    assert "grid[0].latency" in result.stderr
    assert result.stdout == ""


def test_help_lists_the_offline_commands() -> None:
    result = run("--help")
    assert result.exit_code == 0
    for command in ("recommend", "place", "model"):
        assert command in result.stdout


def test_same_plan_in_separate_processes() -> None:
    # Same input, same plan: also across interpreters with different string-hash seeds.
    outputs = []
    for hash_seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        done = subprocess.run(
            [sys.executable, "-m", "basil", "recommend", "--snapshot", str(TABLE4), "--json"],
            capture_output=True,
            text=True,
            check=True,
            env=env,
        )
        outputs.append(done.stdout)
    assert outputs[0] == outputs[1]
    assert json.loads(outputs[0])["moves"]
