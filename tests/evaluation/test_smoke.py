"""Smoke version of `make evaluate`: the harness runs on three small configurations of the lab's physics
and its report is consistent; the pieces it is built from behave."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from benchmarks.evaluation.harness import FAMILIES, ConfigResult, Scored, check
from benchmarks.evaluation.labtool import LabTool, LabToolError, Source, Window
from benchmarks.evaluation.observe import Observations, snapshot
from benchmarks.evaluation.run import evaluate, rewrite

from basil.core.balancer import recommend
from basil.core.params import BalancerParams


def test_smoke_run_writes_a_consistent_report(tmp_path: Path) -> None:
    run = evaluate(tmp_path, smoke=True, progress=False)

    smoke = [(f.name, s) for f in FAMILIES for s in f.smoke_seeds]
    assert [(r.family, r.seed) for r in run.results] == smoke
    assert run.problems == []
    for r in run.results:
        assert set(r.scored) == {"start", "naive", "basil r1", "basil r2", "best"}
        best = r.scored["best"].total_iops
        assert all(s.total_iops <= best * (1 + 1e-9) for s in r.scored.values())
        assert r.gain_pct("start") == 0.0
        # Basil's moves accumulate over rounds.
        assert r.scored["basil r2"].moves >= r.scored["basil r1"].moves
    assert any(r.scored["best"].total_iops > r.scored["start"].total_iops for r in run.results)

    text = run.report.read_text(encoding="utf-8")
    for line in run.targets.lines:
        assert line in text
    assert any("paper-like pods" in line for line in run.targets.lines)
    assert any("heterogeneous pods" in line for line in run.targets.lines)
    assert any("predicted post-move" in line for line in run.targets.lines)
    svgs = sorted(p.name for p in tmp_path.glob("*.svg"))
    assert "predicted-vs-measured.svg" in svgs
    assert {"cdf-iops-gain-paper.svg", "cdf-iops-gain-hetero.svg", "cdf-latency-cut-paper-6.2.svg"} <= set(
        svgs
    )
    for name in svgs:
        root = ET.parse(tmp_path / name).getroot()
        assert root.tag == "{http://www.w3.org/2000/svg}svg"
        assert name in text
    raw = json.loads((tmp_path / "results.json").read_text(encoding="utf-8"))
    assert [(x["family"], x["seed"]) for x in raw["configurations"]] == smoke

    # The report rebuilt from results.json alone says the same.
    again = rewrite(tmp_path)
    assert again.targets == run.targets
    assert again.problems == []
    assert again.report.read_text(encoding="utf-8") == text


def _result(**iops: float) -> ConfigResult:
    r = ConfigResult("paper-6.4", 1, "paper", 8, 3)
    for name, value in iops.items():
        r.scored[name] = Scored(name, 0, value, 10.0, 0.0)
    return r


def test_check_reports_a_policy_above_the_exhaustive_best() -> None:
    assert check([_result(start=100.0, naive=120.0, best=120.0)]) == []
    problems = check([_result(start=100.0, naive=130.0, best=120.0)])
    assert len(problems) == 1
    assert "naive reaches 130.0 IOPS, above the exhaustive best 120.0" in problems[0]


def test_measured_counters_make_a_snapshot_basil_accepts() -> None:
    tool = LabTool(Source(file="lab/scenarios/basil-6.2.yaml", seed=3))
    description = tool.describe()
    seen = Observations()
    seen.add(tool.measure({}, Window(start=0, intervals=12, warmup=0)))
    snap = snapshot(description, {}, seen)

    assert snap.validate() == []
    assert {d.id for d in snap.disks} == {d["id"] for d in description["disks"]}
    assert all(len(ds.samples) == 2 * 12 for ds in snap.datastores)  # two hosts, 12 intervals
    assert all(len(d.samples) == 12 for d in snap.disks)
    plan = recommend(snap, BalancerParams())
    # §6.2's three loaded FC LUNs all get a device model from 12 intervals of ranged OIO.
    assert all(m.fit is not None and m.fit.ok for m in plan.datastores.values())


def test_a_bad_request_names_the_field() -> None:
    with pytest.raises(LabToolError, match=r"source\.family"):
        LabTool(Source(family="nope", seed=1)).describe()
    tool = LabTool(Source(family="random", seed=1))
    with pytest.raises(LabToolError, match=r'placement\["nobody/scsi0:1"\]: no such disk'):
        tool.measure({"nobody/scsi0:1": "3diskLUN"}, Window(start=0, intervals=1))
