"""Recommendations keep their basis and become stale; prediction checks wait for their hour."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from basil.errors import ConflictError
from basil.store import Store, recommendations
from basil.store import plans as plan_store
from basil.store import predictions as checks

NOW = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)


def spec(disk_key: int, source: str = "ds-1", target: str = "ds-2") -> recommendations.RecommendationSpec:
    return recommendations.RecommendationSpec("vc", "vm-1", disk_key, source, target, 10 * 2**30)


def test_a_round_keeps_its_basis_and_a_stale_one_cannot_be_planned(store: Store) -> None:
    basis = {"placement": "abc", "plans_running": [7]}
    with store.session() as session:
        old = recommendations.save_round(session, "gold", [spec(1)], NOW, basis)
        other = recommendations.save_round(session, "silver", [spec(2)], NOW, basis)
        assert (
            recommendations.mark_stale(session, "gold", "plan 7 moved disk 3", NOW - timedelta(seconds=1))
            == 0
        )
        assert (
            recommendations.mark_stale(session, "gold", "plan 7 moved disk 3", NOW + timedelta(minutes=1))
            == 1
        )
        assert (
            recommendations.mark_stale(
                session, "gold", "a second reason is not kept", NOW + timedelta(hours=1)
            )
            == 0
        )
    with store.read_session() as session:
        (rec,) = recommendations.round_recommendations(session, old[0].round_id)
        assert rec.basis == basis
        assert (rec.status, rec.stale_reason) == ("open", "plan 7 moved disk 3")
        assert recommendations.get_recommendation(session, other[0].id).stale_reason is None  # another pod
    with pytest.raises(ConflictError, match="is stale: plan 7 moved disk 3"), store.session() as session:
        recommendations.mark_planned(session, [rec.id], 1)
    with store.session() as session:
        recommendations.dismiss(session, [rec.id])  # stale moves can still be dismissed


def test_moves_finished_since_a_round_name_their_plan(store: Store) -> None:
    with store.session() as session:
        plan = plan_store.create_plan(
            session, "gold", "vc", [
                plan_store.MoveSpec("vc", "vm-1", 1, "ds-1", "ds-2", 1),
                plan_store.MoveSpec("vc", "vm-2", 2, "ds-9", "ds-8", 1),
            ], created_by="t", now=NOW,
        )  # fmt: skip
        plan_store.approve_plan(session, plan.id, "t", now=NOW)
        plan_store.start_plan(session, plan.id, now=NOW)
        for move, minutes in zip(plan.moves, (5, 6), strict=True):
            plan_store.start_move(session, move.id, now=NOW)
            plan_store.finish_move(session, move.id, "succeeded", now=NOW + timedelta(minutes=minutes))
    with store.read_session() as session:
        found = recommendations.moves_finished_since(session, "vc", ["ds-1", "ds-2"], NOW)
        assert found == [(plan.id, 1, NOW + timedelta(minutes=5))]  # the other move is outside the pod
        assert recommendations.moves_finished_since(session, "vc", ["ds-1"], NOW + timedelta(minutes=5)) == []


def test_a_prediction_check_waits_for_its_hour(store: Store) -> None:
    with store.session() as session:
        plan = plan_store.create_plan(
            session, "gold", "vc", [plan_store.MoveSpec("vc", "vm-1", 1, "ds-1", "ds-2", 1)], created_by="t"
        )
        checks.save_check(
            session,
            plan.id,
            pod="gold",
            vcenter="vc",
            finished_ts=1000,
            due_ts=4600,
            predicted={"imbalance": 0.1},
        )
    with store.read_session() as session:
        assert checks.due_checks(session, "vc", 4599) == []
        (due,) = checks.due_checks(session, "vc", 4600)
        assert (due.plan_id, due.measured) == (plan.id, None)
    with store.session() as session:
        checks.record_measurement(session, plan.id, {"imbalance": 0.2}, {"imbalance_rel": -0.5}, NOW)
    with store.read_session() as session:
        assert checks.due_checks(session, "vc", 10_000) == []
        (done,) = checks.pod_checks(session, "gold")
        assert (done.measured, done.error, done.measured_at) == (
            {"imbalance": 0.2},
            {"imbalance_rel": -0.5},
            NOW,
        )
