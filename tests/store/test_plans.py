"""Plans: every legal transition works, every illegal one raises ConflictError and changes nothing."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime, timedelta

import pytest

from basil.errors import ConflictError, NotFoundError, ValidationError
from basil.store import Store
from basil.store.plans import (
    MOVE_TRANSITIONS,
    PLAN_TRANSITIONS,
    Move,
    MoveSpec,
    Plan,
    approve_plan,
    cancel_plan,
    create_plan,
    finish_move,
    finish_plan,
    get_plan,
    last_moved,
    last_moves,
    list_plans,
    pending_moves,
    prune_plans,
    resumable_plans,
    running_moves,
    start_move,
    start_plan,
    update_move,
)

NOW = datetime(2024, 6, 8, 2, 0, tzinfo=UTC)


def move(disk_key: int = 2000, vm: str = "vm-1", target: str = "ds-2") -> MoveSpec:
    return MoveSpec("vc", vm, disk_key, "ds-1", target, 40 * 2**30, vm_name="web", instance="scsi0:0")


def new_plan(store: Store, moves: int = 2) -> Plan:
    with store.session() as session:
        return create_plan(
            session, "gold", "vc", [move(2000 + i) for i in range(moves)], created_by="alice", now=NOW
        )


def running_plan(store: Store, moves: int = 2, deadline: datetime | None = None) -> Plan:
    plan = new_plan(store, moves)
    with store.session() as session:
        approve_plan(session, plan.id, "bob", now=NOW)
        return start_plan(session, plan.id, deadline=deadline, now=NOW)


def test_a_plan_runs_to_success_and_records_each_move(store: Store) -> None:
    plan = running_plan(store)
    first, second = plan.moves
    with store.session() as session:
        start_move(session, first.id, task_id="task-1", now=NOW)
        update_move(session, first.id, progress=40, message="copying", now=NOW)
        finish_move(session, first.id, "succeeded", "relocated", now=NOW + timedelta(minutes=5))
        start_move(session, second.id, now=NOW)
        update_move(session, second.id, task_id="task-2")
        finish_move(session, second.id, "failed", "InsufficientSpace: not enough space on ds-2")
        done = finish_plan(session, plan.id, "failed", "1 of 2 moves failed", now=NOW + timedelta(minutes=9))
    assert done.state == "failed"
    assert [m.state for m in done.moves] == ["succeeded", "failed"]
    assert (done.moves[0].task_id, done.moves[0].progress) == ("task-1", 100)
    assert done.moves[1].task_id == "task-2"
    assert "InsufficientSpace" in done.moves[1].message
    assert done.counts()["succeeded"] == 1
    assert done.moved_gb == 40
    with store.read_session() as session:
        assert last_moved(session, "vc", "vm-1", 2000) == NOW + timedelta(minutes=5)
        assert last_moved(session, "vc", "vm-1", 2001) is None
        assert last_moves(session, "vc") == {("vm-1", 2000): NOW + timedelta(minutes=5)}
        assert last_moves(session, "other-vc") == {}


@pytest.mark.parametrize("state", sorted(PLAN_TRANSITIONS))
def test_illegal_plan_transitions_raise_and_change_nothing(store: Store, state: str) -> None:
    plan = new_plan(store)
    path = {
        "proposed": [],
        "approved": ["approve"],
        "running": ["approve", "start"],
        "succeeded": ["approve", "start", "succeeded"],
        "failed": ["approve", "start", "failed"],
        "cancelled": ["cancel"],
    }[state]
    with store.session() as session:
        for step in path:
            if step == "approve":
                approve_plan(session, plan.id, "bob")
            elif step == "start":
                start_plan(session, plan.id)
            elif step == "cancel":
                cancel_plan(session, plan.id, "bob")
            else:
                finish_plan(session, plan.id, step)  # type: ignore[arg-type]
    with store.read_session() as session:
        before = get_plan(session, plan.id)
    assert before.state == state
    attempts = {
        "approved": lambda s: approve_plan(s, plan.id, "eve"),
        "running": lambda s: start_plan(s, plan.id),
        "succeeded": lambda s: finish_plan(s, plan.id, "succeeded"),
        "failed": lambda s: finish_plan(s, plan.id, "failed"),
        "cancelled": lambda s: finish_plan(s, plan.id, "cancelled"),
    }
    for target, attempt in attempts.items():
        if target in PLAN_TRANSITIONS[state]:
            continue
        with pytest.raises(ConflictError, match=f"is {state}"), store.session() as session:
            attempt(session)
        with store.read_session() as session:
            assert get_plan(session, plan.id) == before


def test_move_transitions(store: Store) -> None:
    plan = running_plan(store, moves=1)
    (only,) = plan.moves
    with (
        pytest.raises(ConflictError, match="pending; it cannot become succeeded"),
        store.session() as session,
    ):
        finish_move(session, only.id, "succeeded")
    with pytest.raises(ConflictError, match="not running"), store.session() as session:
        update_move(session, only.id, progress=10)
    with store.session() as session:
        start_move(session, only.id)
    with pytest.raises(ConflictError, match="running; it cannot become running"), store.session() as session:
        start_move(session, only.id)
    with pytest.raises(ValidationError, match="progress"), store.session() as session:
        update_move(session, only.id, progress=101)
    with pytest.raises(ConflictError, match="still has running moves"), store.session() as session:
        finish_plan(session, plan.id, "succeeded")
    with store.session() as session:
        finish_move(session, only.id, "succeeded")
    with pytest.raises(ConflictError, match="succeeded; it cannot become failed"), store.session() as session:
        finish_move(session, only.id, "failed")
    assert MOVE_TRANSITIONS["succeeded"] == frozenset()


def test_moves_start_only_while_the_plan_runs_and_the_window_is_open(store: Store) -> None:
    plan = new_plan(store, moves=1)
    with pytest.raises(ConflictError, match="proposed, not running"), store.session() as session:
        start_move(session, plan.moves[0].id)
    deadline = NOW + timedelta(hours=3)
    plan = running_plan(store, moves=2, deadline=deadline)
    with pytest.raises(ConflictError, match="window closed"), store.session() as session:
        start_move(session, plan.moves[0].id, now=deadline)
    with store.session() as session:
        start_move(session, plan.moves[0].id, now=deadline - timedelta(seconds=1))


def test_a_disk_is_never_moved_by_two_plans_at_once(store: Store) -> None:
    a = running_plan(store, moves=1)
    b = running_plan(store, moves=1)
    with store.session() as session:
        start_move(session, a.moves[0].id)
    with pytest.raises(ConflictError, match=f"being moved by plan {a.id}"), store.session() as session:
        start_move(session, b.moves[0].id)


def test_two_plans_claiming_one_disk_at_the_same_time_are_serialised(store: Store) -> None:
    """The second claim waits for the first transaction and then sees its claim (PostgreSQL locks the
    disk's moves; SQLite's write transactions are serial)."""
    a = running_plan(store, moves=1)
    b = running_plan(store, moves=1)
    second: list[BaseException | Move] = []

    def claim_b() -> None:
        try:
            with store.session() as session:
                second.append(start_move(session, b.moves[0].id))
        except ConflictError as err:
            second.append(err)

    with store.session() as session:
        start_move(session, a.moves[0].id)
        other = threading.Thread(target=claim_b)
        other.start()
        time.sleep(0.5)  # the second claim reaches the store while the first is not committed yet
    other.join(60)
    assert len(second) == 1
    assert isinstance(second[0], ConflictError), second
    assert f"being moved by plan {a.id}" in second[0].message
    with store.read_session() as session:
        assert [m.state for m in get_plan(session, b.id).moves] == ["pending"]


def test_cancel(store: Store) -> None:
    proposed = new_plan(store)
    with store.session() as session:
        cancelled = cancel_plan(session, proposed.id, "bob")
    assert cancelled.state == "cancelled"
    assert {m.state for m in cancelled.moves} == {"skipped"}
    running = running_plan(store)
    with store.session() as session:
        start_move(session, running.moves[0].id)
        asked = cancel_plan(session, running.id, "bob")
    assert (asked.state, asked.cancel_requested) == ("running", True)
    with pytest.raises(ConflictError, match="being cancelled"), store.session() as session:
        start_move(session, running.moves[1].id)
    with store.session() as session:
        finish_move(session, running.moves[0].id, "succeeded")
        ended = finish_plan(session, running.id, "cancelled")
    assert [m.state for m in ended.moves] == ["succeeded", "skipped"]
    with pytest.raises(ConflictError, match="cancelled"), store.session() as session:
        cancel_plan(session, running.id, "bob")


def test_stale_revision_is_a_conflict(store: Store) -> None:
    plan = new_plan(store)
    with store.session() as session:
        approve_plan(session, plan.id, "bob", expected_revision=plan.revision)
    with pytest.raises(ConflictError, match="changed since you read it"), store.session() as session:
        cancel_plan(session, plan.id, "eve", expected_revision=plan.revision)


def test_bad_plans_are_refused_whole(store: Store) -> None:
    with pytest.raises(ValidationError) as caught, store.session() as session:
        create_plan(
            session, "", "vc", [move(1), move(1), MoveSpec("vc", "", 3, "a", "a", -1)], created_by="x",
            on_move_failure="retry",
        )  # fmt: skip
    fields = {p.field for p in caught.value.problems}
    assert fields >= {"pod", "on_move_failure", "moves[1]", "moves[2].vm", "moves[2].target_datastore"}
    with store.read_session() as session:
        assert list_plans(session) == []


def test_resume_after_a_crash_sees_the_running_move(store: Store) -> None:
    plan = running_plan(store)
    with store.session() as session:
        start_move(session, plan.moves[0].id, task_id="task-77")
    # A new Store object stands for the restarted service.
    restarted = Store(store.url)
    try:
        with restarted.read_session() as session:
            (resumed,) = resumable_plans(session)
            running = running_moves(session, resumed.id)
        assert resumed.id == plan.id
        assert [(m.seq, m.task_id) for m in running] == [(0, "task-77")]
        assert [m.state for m in resumed.moves] == ["running", "pending"]
    finally:
        restarted.dispose()


def test_unknown_plan(store: Store) -> None:
    with pytest.raises(NotFoundError), store.read_session() as session:
        get_plan(session, 999)


def test_prune_only_finished_plans(store: Store) -> None:
    done = new_plan(store)
    with store.session() as session:
        cancel_plan(session, done.id, "bob", now=NOW)
    keep = new_plan(store)
    with store.session() as session:
        assert prune_plans(session, NOW + timedelta(days=1)) == 1
        assert [p.id for p in list_plans(session)] == [keep.id]


def test_last_moves_keeps_each_disks_latest_success(store: Store) -> None:
    for minutes, outcome in ((5, "succeeded"), (30, "succeeded"), (60, "failed")):
        plan = running_plan(store, moves=1)
        with store.session() as session:
            start_move(session, plan.moves[0].id, now=NOW)
            finish_move(session, plan.moves[0].id, outcome, now=NOW + timedelta(minutes=minutes))
    with store.read_session() as session:
        assert last_moves(session, "vc") == {("vm-1", 2000): NOW + timedelta(minutes=30)}


def test_pending_moves_are_those_of_the_newest_open_plans(store: Store) -> None:
    def plan_of(pod: str, first_key: int, moves: int = 2) -> Plan:
        with store.session() as session:
            specs = [move(first_key + i) for i in range(moves)]
            return create_plan(session, pod, "vc", specs, created_by="alice", now=NOW)

    cancelled = plan_of("gold", 3000)
    with store.session() as session:
        cancel_plan(session, cancelled.id, "bob", now=NOW)
    running = plan_of("gold", 3100, moves=3)
    with store.session() as session:
        approve_plan(session, running.id, "bob", now=NOW)
        start_plan(session, running.id, now=NOW)
        start_move(session, running.moves[0].id, now=NOW)
        finish_move(session, running.moves[0].id, "succeeded", now=NOW)
        start_move(session, running.moves[1].id, now=NOW)
    plan_of("silver", 3200)
    plan_of("gold", 3300, moves=1)
    newest = plan_of("gold", 3400)

    def expected(limit: int) -> list[tuple[int, int]]:
        with store.read_session() as session:
            plans = list_plans(session, pod="gold", states=["proposed", "approved", "running"], limit=limit)
        return [(m.plan_id, m.seq) for p in plans for m in p.moves if m.state in ("pending", "running")]

    for limit in (1, 2, 100):
        with store.read_session() as session:
            found = pending_moves(session, "gold", plans=limit)
        assert [(m.plan_id, m.seq) for m in found] == expected(limit)
    with store.read_session() as session:
        moves = pending_moves(session, "gold")
    assert [m.plan_id for m in moves][:2] == [newest.id, newest.id]
    assert [(m.seq, m.state) for m in moves if m.plan_id == running.id] == [(1, "running"), (2, "pending")]
    assert cancelled.id not in {m.plan_id for m in moves}
