"""``goal`` and ``slo`` of a pod in basil.yaml: the SLO goal's groups and knobs, every problem at once."""

from __future__ import annotations

from pathlib import Path

import pytest

from basil.config import load_config
from basil.errors import ValidationError

BASE = """
vcenters:
  - {name: lab, server: "localhost:8989", user: basil, password_env: LAB_PASSWORD}
store: {url: "sqlite:///basil.db"}
pods:
  - name: tiers
    vcenter: lab
    datastore_cluster: tiers
"""


def load(tmp_path: Path, pod: str) -> object:
    path = tmp_path / "basil.yaml"
    path.write_text(BASE + pod, encoding="utf-8")
    return load_config(path, env={})


def problems(tmp_path: Path, pod: str) -> dict[str, str]:
    with pytest.raises(ValidationError) as caught:
        load(tmp_path, pod)
    return {p.field: p.message for p in caught.value.problems}


def test_balance_is_the_default_goal(tmp_path: Path) -> None:
    config = load(tmp_path, "")
    pod = config.pods[0]  # type: ignore[attr-defined]
    assert pod.goal == "balance"
    assert pod.slo.groups == ()


def test_slo_goal_with_groups(tmp_path: Path) -> None:
    config = load(
        tmp_path,
        """    goal: slo
    slo:
      utilisation_cap_pct: 25
      priority_queues: true
      groups:
        - {name: gold, drt_ms: 2, pools: [erp]}
        - {name: silver, drt_ms: 15, tag: apps/silver}
""",
    )
    pod = config.pods[0]  # type: ignore[attr-defined]
    assert pod.goal == "slo"
    assert [(g.name, g.drt_ms, g.pools, g.tag) for g in pod.slo.groups] == [
        ("gold", 2.0, ("erp",), ""),
        ("silver", 15.0, (), "apps/silver"),
    ]
    assert pod.slo.utilisation_cap_pct == 25.0
    assert pod.slo.priority_queues is True


def test_every_slo_problem_at_once(tmp_path: Path) -> None:
    found = problems(
        tmp_path,
        """    goal: slo
    slo:
      utilisation_cap_pct: 120
      groups:
        - {name: gold, drt_ms: 0}
        - {name: gold, drt_ms: 5, tag: nocategory}
        - {name: bronze, drt_ms: 30, colour: red}
""",
    )
    assert found == {
        "pods[0].slo.groups[2].colour": found["pods[0].slo.groups[2].colour"],
        "pods[0].slo.groups[0].drt_ms": "must be greater than 0, got 0",
        "pods[0].slo.groups[1].tag": "'nocategory' must be written category/name",
        "pods[0].slo.groups[1].name": "'gold' is also groups[0]",
        "pods[0].slo.utilisation_cap_pct": "must be at most 100, got 120",
    }
    assert found["pods[0].slo.groups[2].colour"].startswith("unknown key")


def test_goal_slo_needs_groups_and_goals_are_known(tmp_path: Path) -> None:
    assert problems(tmp_path, "    goal: slo\n") == {
        "pods[0].slo.groups": "goal slo needs at least one group with drt_ms"
    }
    assert "pods[0].goal" in problems(tmp_path, "    goal: fastest\n")
