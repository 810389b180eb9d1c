"""``basil srp compute``: the tree and JSON outputs, and bad input that exits non-zero naming each problem."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from basil.cli import main

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

FIGURE3_POOLS = """
root: {reservation: 1200, limit: 2300, shares: 1000}
pools:
  - name: E
    shares: 3000
    children:
      - {vm: A, reservation: 400, shares: 1000}
      - {vm: B, shares: 2000}
  - name: F
    limit: 500
    shares: 1000
    children:
      - {vm: C}
      - {vm: D}
"""
# Measured at latency 30 ms = L_c, so each VM's demand equals its IOPS (eq. 1-2).
FIGURE3_DEMAND = {
    "A": {"iops": 400, "latency_ms": 30},
    "B": {"iops": 600, "latency_ms": 30},
    "C": {"iops": 400, "latency_ms": 30},
    "D": {"iops": 100, "latency_ms": 30},
}


def run(*args: str) -> Result:
    return CliRunner().invoke(main, ["srp", "compute", *args])


def files(tmp_path: Path, pools: str, demand: object) -> list[str]:
    pools_path = tmp_path / "pools.yaml"
    demand_path = tmp_path / "demand.json"
    pools_path.write_text(pools, encoding="utf-8")
    demand_path.write_text(demand if isinstance(demand, str) else json.dumps(demand), encoding="utf-8")
    return ["--pools", str(pools_path), "--demand", str(demand_path)]


def test_example_as_a_readable_tree() -> None:
    result = run(
        "--pools",
        str(EXAMPLES / "srp-pools.yaml"),
        "--demand",
        str(EXAMPLES / "srp-demand.json"),
        "--capacity",
        "4500",
    )
    assert result.exit_code == 0, result.stderr
    assert result.stderr == ""
    lines = result.stdout.splitlines()
    assert lines[0] == "array 4500 IOPS, queue depth 135.0 at L_c = 30 ms"
    header = lines[2].split()
    assert header == ["node", "reservation", "limit", "shares", "entitlement", "demand"]
    rows = {
        line.split()[0].strip("|-`"): line.split() for line in lines[3:] if line and not line.startswith(" ")
    }
    # §5.1: RP1 holds its 1500 reservation, split equally; RP2 and RP3 share the rest 2:1.
    assert rows["root"][1:5] == ["1500", "unlimited", "1000", "4500"]
    vm1 = next(line for line in lines if "VM1 (vm)" in line).split()
    assert vm1[-5:-1] == ["750", "unlimited", "125", "750"]
    rp2 = next(line for line in lines if line.startswith("|-- RP2")).split()
    rp3 = next(line for line in lines if line.startswith("`-- RP3")).split()
    assert (rp2[5], rp3[5]) == ("2000", "1000")
    assert "host queue depths (eq. 6):" in lines
    assert "  esx-01: 67.5" in lines


def test_figure3_as_json(tmp_path: Path) -> None:
    result = run(*files(tmp_path, FIGURE3_POOLS, FIGURE3_DEMAND), "--capacity", "1200", "--json")
    assert result.exit_code == 0, result.stderr
    out = json.loads(result.stdout)
    assert set(out["vms"]) == {"A", "B", "C", "D"}
    assert set(out["pools"]) == {"E", "F"}
    c, d = out["vms"]["C"], out["vms"]["D"]
    assert (c["reservation"], c["limit"], c["shares"]) == (200, 400, 125)
    assert (d["reservation"], d["limit"], d["shares"]) == (100, 100, 125)
    assert set(c) == {"reservation", "limit", "shares", "entitlement", "demand"}
    assert out["pools"]["E"]["limit"] == 1800
    assert out["root"]["limit"] == 2300
    assert out["array"] == {"iops": 1200, "queue_depth": 36.0, "latency_threshold_ms": 30.0}


def test_unlimited_prints_as_unlimited_in_json() -> None:
    result = run(
        "--pools",
        str(EXAMPLES / "srp-pools.yaml"),
        "--demand",
        str(EXAMPLES / "srp-demand.json"),
        "--capacity",
        "4500",
        "--json",
    )
    out = json.loads(result.stdout)
    assert out["vms"]["VM1"]["limit"] == "unlimited"
    assert set(out["disks"]) == {"VM2/scsi0:0", "VM2/scsi0:1"}
    assert out["disks"]["VM2/scsi0:1"]["datastore"] == "ds-emc"
    assert sum(h["queue_depth"] for h in out["hosts"].values()) == pytest.approx(135)


def test_latency_threshold_changes_the_demand(tmp_path: Path) -> None:
    args = files(tmp_path, FIGURE3_POOLS, FIGURE3_DEMAND)
    at_30 = json.loads(run(*args, "--capacity", "1200", "--json").stdout)
    at_15 = json.loads(run(*args, "--capacity", "1200", "--json", "--latency-threshold-ms", "15").stdout)
    assert at_30["vms"]["B"]["demand"] == 600
    assert at_15["vms"]["B"]["demand"] == 1200  # 600 IOPS × 30 ms / 15 ms


def test_bad_input_names_every_problem_and_prints_nothing_on_stdout(tmp_path: Path) -> None:
    pools = """
root: {reservation: 100}
pools:
  - {name: P, limit: -5, children: [{vm: A}]}
  - {name: P}
  - {name: Q, children: [{vm: A}]}
"""
    demand = {"A": {"iops": "lots", "latency_ms": 3}, "ghost": {"iops": 1, "latency_ms": 1}}
    result = run(*files(tmp_path, pools, demand), "--capacity", "-1", "--latency-threshold-ms", "0")
    assert result.exit_code == 2
    assert result.stdout == ""
    for expected in (
        "--capacity: must be finite and non-negative",
        "--latency-threshold-ms (latency_threshold_ms): must be positive",
        "pools.yaml:pools[0].limit: must not be negative (got -5)",
        "pools.yaml:pools[1].name: duplicate pool name 'P'",
        "pools.yaml:pools[2].children[0]: VM 'A' is in two pools",
        "demand.json:A.iops: must be a number",
    ):
        assert expected in result.stderr, result.stderr
    assert result.stderr.startswith("error: invalid input:")


def test_demand_for_a_vm_outside_the_pools(tmp_path: Path) -> None:
    demand = {**FIGURE3_DEMAND, "Z": {"iops": 1, "latency_ms": 1}}
    result = run(*files(tmp_path, FIGURE3_POOLS, demand), "--capacity", "1200")
    assert result.exit_code == 2
    assert result.stdout == ""
    assert "demand.json:Z: is not in any pool of the pools file" in result.stderr


def test_root_reservation_above_capacity_is_refused(tmp_path: Path) -> None:
    result = run(*files(tmp_path, FIGURE3_POOLS, FIGURE3_DEMAND), "--capacity", "1000")
    assert result.exit_code == 2
    assert result.stdout == ""
    assert (
        "root.reservation: the root reservation 1200 IOPS is above the reservable capacity" in result.stderr
    )


def test_missing_file_and_malformed_files(tmp_path: Path) -> None:
    missing = run(
        "--pools", str(tmp_path / "nope.yaml"), "--demand", str(tmp_path / "nope.json"), "--capacity", "1"
    )
    assert missing.exit_code == 2
    assert missing.stdout == ""
    assert "nope.yaml" in missing.stderr

    broken = run(*files(tmp_path, "pools: [\n", "{"), "--capacity", "10")
    assert broken.exit_code == 2
    assert broken.stdout == ""
    assert "not valid YAML" in broken.stderr
    assert "not valid JSON" in broken.stderr


def test_capacity_is_required() -> None:
    result = run("--pools", str(EXAMPLES / "srp-pools.yaml"), "--demand", str(EXAMPLES / "srp-demand.json"))
    assert result.exit_code == 2
    assert "--capacity" in result.stderr


def test_tag_leaves_read_their_vms_from_the_tags_file(tmp_path: Path) -> None:
    pools = (
        "root: {reservation: 300}\npools:\n  - {name: gold, children: [{tag: qos/gold, reservation: 100}]}\n"
    )
    demand = {"A": {"iops": 200, "latency_ms": 30}, "B": {"iops": 50, "latency_ms": 30}}
    tags = tmp_path / "tags.json"
    tags.write_text(json.dumps({"qos/gold": ["A", "B"]}), encoding="utf-8")
    result = run(*files(tmp_path, pools, demand), "--capacity", "1000", "--tags", str(tags), "--json")
    assert result.exit_code == 0, result.stderr
    out = json.loads(result.stdout)
    assert set(out["vms"]) == {"A", "B"}
    assert all(out["vms"][vm]["reservation"] >= 100 for vm in ("A", "B"))
    assert out["pools"]["gold"]["demand"] == 300  # B's 50 IOPS clamped up to its reservation 100

    without = run(*files(tmp_path, pools, demand), "--capacity", "1000")
    assert without.exit_code == 2
    assert without.stdout == ""
    assert "pools.yaml:pools[0].children[0].tag: a tag leaf needs to know which VMs carry the tag" in (
        without.stderr
    )
