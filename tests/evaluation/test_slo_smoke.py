"""Smoke version of `make evaluate-slo`: two simulated hours of one seed of the slo-tiers scenario
on the lab's physics, three policies, figures consistent (seconds; no target asserted)."""

from __future__ import annotations

import math

import pytest
from benchmarks.evaluate_slo import DRT_MS, POLICIES, evaluate, report, vm_groups
from benchmarks.evaluation.labtool import ROOT

from basil.core.params import BalancerParams


def test_two_hours_of_three_policies() -> None:
    params = BalancerParams(max_moves=2, max_gb=500.0)
    tallies = evaluate([1], 2, params, progress=False)
    assert set(tallies) == set(POLICIES)
    for policy, t in tallies.items():
        for group in DRT_MS:
            assert t.intervals[group] == 2 * 180, (policy, group)
            fraction = t.within_fraction(group)
            assert fraction is not None
            assert 0.0 <= fraction <= 1.0
            mean = t.mean_rt(group)
            assert mean is not None
            assert math.isfinite(mean)
            assert mean > 0
        # One round between the two hours: at most the budget.
        assert t.moves <= 2
    assert tallies["none"].moves == 0
    # The first hour is measured before any round: the same physics and seed for every policy.
    first = {p: t.total_damage - t.later_total for p, t in tallies.items()}
    assert first["balance"] == pytest.approx(first["none"])
    assert first["slo"] == pytest.approx(first["none"])
    lines = report(tallies, [1], 2, params)
    assert any(line.startswith("target: total damage > 6x lower than the balance goal") for line in lines)
    assert any(line.startswith("target: gold within its DRT") for line in lines)


def test_scenario_groups_come_from_its_tags() -> None:
    groups = vm_groups(ROOT / "lab" / "scenarios" / "slo-tiers.yaml")
    assert set(groups.values()) == set(DRT_MS)
    assert groups["erp-db-1"] == "gold"
    assert groups["files-1"] == "bronze"
