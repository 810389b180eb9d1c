"""Smoke version of `make bench-whatif` (benchmarks/bench_whatif.py): two combinations of the tenth
set through the lab, predicted from their isolation runs, with and without the fork-join rule."""

from __future__ import annotations

import statistics
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from benchmarks import bench_whatif

pytestmark = pytest.mark.lab


def test_two_combinations_are_predicted_and_a_split_reader_waits_longer(tmp_path: Path) -> None:
    setup = replace(bench_whatif.tenth(False), combos=[("vault", "crm"), ("crm", "cachesrv")])
    cache: dict[str, Any] = {}
    with_rule: list[dict[str, Any]] = []
    # Three disks' isolation runs are too few for a device model of the LUN: m given (its 7 data devices).
    errors = bench_whatif.evaluate(setup, 15, tmp_path, cache, parallelism=7.0, rows=with_rule)
    assert len(errors["read ms"]) == 4  # every disk of both combinations reads
    assert all(0 <= e < 1 for e in errors["read ms"]), errors["read ms"]  # within 100 % of the lab
    assert statistics.median(errors["mix"]) < 0.1
    rows = {(r["combination"], r["disk"]): r for r in with_rule}
    assert set(rows) == {
        ("vault+crm", "vault"),
        ("vault+crm", "crm"),
        ("crm+cachesrv", "crm"),
        ("crm+cachesrv", "cachesrv"),
    }
    vault = rows[("vault+crm", "vault")]
    assert vault["fork_join"] > 1.0  # 128 KB reads over 64 KB stripe units
    assert {rows[k]["fork_join"] for k in rows if k[1] != "vault"} == {1.0}
    assert all(r["read_ms"][0] > 0 and r["read_ms"][1] > 0 for r in with_rule)

    without: list[dict[str, Any]] = []
    bench_whatif.evaluate(
        setup, 15, tmp_path, cache, parallelism=7.0, fork_join=False, rows=without
    )  # same runs
    before = {(r["combination"], r["disk"]): r for r in without}
    assert before[("vault+crm", "vault")]["fork_join"] == 1.0
    assert vault["read_ms"][0] > before[("vault+crm", "vault")]["read_ms"][0]
    assert vault["read_ms"][1] == before[("vault+crm", "vault")]["read_ms"][1]  # the truth is the same run
    assert rows[("crm+cachesrv", "crm")]["read_ms"] == before[("crm+cachesrv", "crm")]["read_ms"]
