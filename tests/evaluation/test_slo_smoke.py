"""Smoke version of `make evaluate-slo`: two simulated hours of one seed of the slo-tiers scenario
on the lab's physics, three policies, figures consistent (seconds; no target asserted)."""

from __future__ import annotations

import math

import pytest
from benchmarks.evaluate_slo import DRT_MS, POLICIES, evaluate, report, vm_groups, windows
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


def test_the_first_round_after_ten_minutes_then_hourly() -> None:
    assert windows(2, 30) == [(0, 30), (30, 180), (210, 150)]
    assert windows(2, 180) == [(0, 180), (180, 180)]  # the first round after an hour, as before
    params = BalancerParams(max_moves=2, max_gb=500.0)
    tallies = evaluate([1], 2, params, progress=False, first_round=30, policies=("none", "balance", "slo"))
    for t in tallies.values():
        assert all(t.intervals[group] == 2 * 180 for group in DRT_MS)
        assert t.moves <= 2 * 2  # two rounds: after ten minutes and an hour later
    # The ten minutes before the first round weigh a sixth of an hour of damage, alike for all.
    first = {p: t.total_damage - t.later_total for p, t in tallies.items()}
    assert first["slo"] == pytest.approx(first["none"])
    assert tallies["slo"].later_total < tallies["none"].later_total
