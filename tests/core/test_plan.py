"""The plan's JSON form: one entry per disk, moves numbered, before/after per pod and overall."""

from __future__ import annotations

import json

from basil.core.balancer import recommend
from basil.core.plan import plan_to_dict

from .builders import datastore, disk, snapshot


def two_pods_plan() -> dict[str, object]:
    snap = snapshot(
        [
            datastore("a1", pod="a"),
            datastore("a2", pod="a"),
            datastore("b1", pod="b"),
            datastore("b2", pod="b"),
        ],
        [
            disk("vm1/d0", "a1", load=40),
            disk("vm1/d1", "a1", load=40),
            disk("vm2/d0", "a1", load=100),
            disk("vm3/d0", "b1", load=60),
            disk("vm4/d0", "b2", load=50),
        ],
    )
    return plan_to_dict(recommend(snap))


def test_disks_of_one_move_share_its_number() -> None:
    data = two_pods_plan()
    moves = data["moves"]
    assert isinstance(moves, list)
    vm1 = [m for m in moves if m["vm"] == "vm1"]
    assert [m["disk"] for m in vm1] == ["vm1/d0", "vm1/d1"]
    assert len({m["move"] for m in vm1}) == 1
    assert vm1[0]["effect"]["disks_in_move"] == ["vm1/d0", "vm1/d1"]
    assert vm1[0]["effect"]["move_load"] == 80


def test_headline_imbalance_is_the_worst_pods() -> None:
    data = two_pods_plan()
    before = data["before"]
    assert isinstance(before, dict)
    pods = before["pods"]
    assert before["imbalance"] == max(p["imbalance"] for p in pods.values())
    assert set(before["normalized_load"]) == {"a1", "a2", "b1", "b2"}
    assert set(pods["a"]["normalized_load"]) == {"a1", "a2"}


def test_plan_is_plain_json() -> None:
    data = two_pods_plan()
    assert json.loads(json.dumps(data, allow_nan=False)) == data
    summary = data["summary"]
    assert isinstance(summary, dict)
    assert set(summary["pods"]) == {"a", "b"}
    assert summary["moves"] == len({m["move"] for m in data["moves"]})  # type: ignore[union-attr]
