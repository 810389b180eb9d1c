"""Smoke version of `make evaluate`: the harness runs on three small configurations of the lab's physics
and its report is consistent; the pieces it is built from behave."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from benchmarks.evaluation.harness import FAMILIES, ConfigResult, Scored, check
from benchmarks.evaluation.labtool import LabTool, LabToolError, Source, Window
from benchmarks.evaluation.observe import Observations, micro_latency, snapshot
from benchmarks.evaluation.run import evaluate, rewrite

from basil.core.balancer import recommend
from basil.core.device_model import OP_READ
from basil.core.params import BalancerParams


def test_smoke_run_writes_a_consistent_report(tmp_path: Path) -> None:
    run = evaluate(tmp_path, smoke=True, progress=False)

    smoke = [(f.name, s) for f in FAMILIES for s in f.smoke_seeds]
    assert [(r.family, r.seed) for r in run.results] == smoke
    assert run.problems == []
    for r in run.results:
        basil = {f"{p} r{k}" for p in ("basil", "basil-normalized", "basil-throughput") for k in (1, 2)}
        assert set(r.scored) == {"start", "naive", "best"} | basil
        best = r.scored["best"].total_iops
        assert all(s.total_iops <= best * (1 + 1e-9) for s in r.scored.values())
        assert r.gain_pct("start") == 0.0
        # Basil's moves accumulate over rounds.
        for p in ("basil", "basil-normalized", "basil-throughput"):
            assert r.scored[f"{p} r2"].moves >= r.scored[f"{p} r1"].moves
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
    where = {d["id"]: d["datastore"] for d in description["disks"]}
    # 18 intervals (6 minutes): in 12, 3diskLUN's OIO spans 35-40 only, too narrow for a credible fit.
    seen.add(tool.measure({}, Window(start=0, intervals=18, warmup=0)), where)
    snap = snapshot(description, {}, seen)

    assert snap.validate() == []
    assert {d.id for d in snap.disks} == {d["id"] for d in description["disks"]}
    reads = [[s for s in ds.samples if s.op == OP_READ] for ds in snap.datastores]
    assert all(len(r) == 18 for r in reads)  # 18 intervals, each over both hosts
    # A read sample carries the µs latency of the disks there when their read IOPS account for the
    # hosts' (the service's rule); the lab's counters are noisy independently, so most do, not all.
    with_us = [s for r in reads for s in r if s.latency_us is not None]
    assert len(with_us) >= 0.8 * sum(len(r) for r in reads)
    # The same latency as the host's whole-ms counter, up to rounding and the counters' own noise.
    assert all(abs(s.latency_us / 1000.0 - s.latency_ms) <= 0.15 * s.latency_ms + 1.0 for s in with_us)
    assert all(len(d.samples) == 18 for d in snap.disks)
    # Configured as an administrator would: device kind and count (for the core's prior).
    kinds = {s["name"]: (s["kind"], s["devices"]) for s in description["datastores"]}
    assert {ds.name: (ds.device_kind, ds.spindles) for ds in snap.datastores} == kinds
    plan = recommend(snap, BalancerParams())
    # §6.2's three loaded FC LUNs all get a credible device model, in µs, from 18 intervals of ranged OIO.
    for m in plan.datastores.values():
        assert m.fit is not None
        assert m.fit.ok, m.fit
        assert m.fit.credible, m.fit
        assert m.fit.latency_resolution == "us"


def test_micro_latency_only_when_the_disks_account_for_the_hosts_reads() -> None:
    assert micro_latency(1000.0, 950.0, 950.0 * 2500.0) == 2500.0
    assert micro_latency(1000.0, 850.0, 850.0 * 2500.0) is None  # 15 % of the reads unaccounted for
    assert micro_latency(0.0, 0.0, 0.0) is None  # idle: nothing to weight by
    assert micro_latency(1.0, 2.5, 2.5 * 800.0) == 800.0  # within the 2 IOPS allowance


def test_a_bad_request_names_the_field() -> None:
    with pytest.raises(LabToolError, match=r"source\.family"):
        LabTool(Source(family="nope", seed=1)).describe()
    tool = LabTool(Source(family="random", seed=1))
    with pytest.raises(LabToolError, match=r'placement\["nobody/scsi0:1"\]: no such disk'):
        tool.measure({"nobody/scsi0:1": "3diskLUN"}, Window(start=0, intervals=1))


def test_a_chosen_seed_range_replaces_the_familys_own(tmp_path: Path) -> None:
    # `evaluate.py --seeds`: configurations the rules were not chosen on.
    run = evaluate(tmp_path, smoke=True, families=["hetero"], seeds=[61], progress=False)
    assert [(r.family, r.seed) for r in run.results] == [("hetero", 61)]
    assert run.problems == []
