"""Plans and their moves: the state machine the planner and the API drive, recorded so a plan can resume.

A plan goes proposed → approved → running → succeeded | failed | cancelled (proposed and approved
plans can be cancelled at once; a running one is asked to stop with ``cancel_requested`` and is
cancelled by its executor once its running moves have ended). A move goes pending → running →
succeeded | failed | skipped (pending → skipped when the budget or the window runs out; running →
skipped when the executor, having claimed the move, finds before asking vCenter anything that it must
not run: the plan was cancelled meanwhile, or the disk is no longer where the plan expected it). Any
other transition raises :class:`ConflictError` and changes nothing.

Crash safety: a move is marked running (with its vCenter task id as soon as there is one) in its own
committed transaction *before* the executor waits on vCenter, so after a restart
:func:`resumable_plans` lists the running plans and :func:`running_moves` the moves whose outcome must
be checked against vCenter before anything else starts; a move that is succeeded is never started again.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from sqlalchemy import Row, func, select
from sqlalchemy.orm import Session
from sqlalchemy.orm.exc import StaleDataError

from basil.errors import ConflictError, NotFoundError, Problem, raise_if_problems
from basil.store.models import MOVE_STATES, PLAN_STATES, PlanMoveRow, PlanRow

PlanState = Literal["proposed", "approved", "running", "succeeded", "failed", "cancelled"]
MoveState = Literal["pending", "running", "succeeded", "failed", "skipped"]

PLAN_TRANSITIONS: dict[str, frozenset[str]] = {
    "proposed": frozenset({"approved", "cancelled"}),
    "approved": frozenset({"running", "cancelled"}),
    "running": frozenset({"succeeded", "failed", "cancelled"}),
    "succeeded": frozenset(),
    "failed": frozenset(),
    "cancelled": frozenset(),
}
MOVE_TRANSITIONS: dict[str, frozenset[str]] = {
    "pending": frozenset({"running", "skipped"}),
    "running": frozenset({"succeeded", "failed", "skipped"}),
    "succeeded": frozenset(),
    "failed": frozenset(),
    "skipped": frozenset(),
}
TERMINAL_PLAN_STATES = frozenset(s for s, nxt in PLAN_TRANSITIONS.items() if not nxt)
TERMINAL_MOVE_STATES = frozenset(s for s, nxt in MOVE_TRANSITIONS.items() if not nxt)
assert set(PLAN_TRANSITIONS) == set(PLAN_STATES)
assert set(MOVE_TRANSITIONS) == set(MOVE_STATES)


@dataclass(frozen=True)
class MoveSpec:
    """One Storage vMotion of one disk, as the planner proposes it."""

    vcenter: str
    vm: str
    disk_key: int
    source_datastore: str
    target_datastore: str
    size_bytes: int
    vm_name: str = ""
    instance: str = ""
    recommendation_id: int | None = None
    swap_group: int | None = None  # moves sharing it are the halves of one swap, applied together

    def problems(self, path: str) -> list[Problem]:
        found: list[Problem] = []
        for name in ("vcenter", "vm", "source_datastore", "target_datastore"):
            if not getattr(self, name):
                found.append(Problem(f"{path}.{name}", "must be set"))
        if self.source_datastore and self.source_datastore == self.target_datastore:
            found.append(Problem(f"{path}.target_datastore", "is the source datastore"))
        if self.size_bytes < 0:
            found.append(Problem(f"{path}.size_bytes", "must not be negative"))
        return found


@dataclass(frozen=True)
class Move:
    """A move as recorded."""

    id: int
    plan_id: int
    seq: int
    vcenter: str
    vm: str
    vm_name: str
    disk_key: int
    instance: str
    size_bytes: int
    source_datastore: str
    target_datastore: str
    state: str
    task_id: str | None
    progress: int
    message: str
    started_at: datetime | None
    finished_at: datetime | None
    recommendation_id: int | None
    swap_group: int | None = None  # moves sharing it are the halves of one swap


@dataclass(frozen=True)
class Plan:
    """A plan as recorded, with its moves in order."""

    id: int
    pod: str
    vcenter: str
    state: str
    source: str
    created_at: datetime
    created_by: str
    approved_at: datetime | None
    approved_by: str | None
    started_at: datetime | None
    finished_at: datetime | None
    updated_at: datetime
    cancel_requested: bool
    on_move_failure: str
    max_moves: int | None
    max_gb: float | None
    deadline: datetime | None
    dry_run: bool
    message: str
    revision: int
    moves: tuple[Move, ...]

    def counts(self) -> dict[str, int]:
        """How many moves are in each state."""
        result = dict.fromkeys(MOVE_STATES, 0)
        for move in self.moves:
            result[move.state] += 1
        return result

    @property
    def moved_gb(self) -> float:
        return sum(m.size_bytes for m in self.moves if m.state == "succeeded") / 2**30


def _now() -> datetime:
    return datetime.now(UTC)


def _move(row: PlanMoveRow | Row[Any]) -> Move:
    return Move(
        row.id, row.plan_id, row.seq, row.vcenter, row.vm, row.vm_name, row.disk_key, row.instance,
        row.size_bytes, row.source_datastore, row.target_datastore, row.state, row.task_id, row.progress,
        row.message, row.started_at, row.finished_at, row.recommendation_id, row.swap_group,
    )  # fmt: skip


def _plan(row: PlanRow | Row[Any], moves: Sequence[PlanMoveRow | Row[Any]]) -> Plan:
    return Plan(
        row.id, row.pod, row.vcenter, row.state, row.source, row.created_at, row.created_by,
        row.approved_at, row.approved_by, row.started_at, row.finished_at, row.updated_at,
        row.cancel_requested, row.on_move_failure, row.max_moves, row.max_gb, row.deadline, row.dry_run,
        row.message, row.revision, tuple(_move(m) for m in sorted(moves, key=lambda m: m.seq)),
    )  # fmt: skip


def _plan_row(session: Session, plan_id: int, *, lock: bool = True) -> PlanRow:
    query = select(PlanRow).where(PlanRow.id == plan_id)
    if lock:
        query = query.with_for_update()
    row = session.execute(query).scalar_one_or_none()
    if row is None:
        raise NotFoundError(f"plan {plan_id} does not exist")
    return row


def _moves(session: Session, plan_id: int) -> list[PlanMoveRow]:
    return list(session.execute(select(PlanMoveRow).where(PlanMoveRow.plan_id == plan_id)).scalars())


def _check_revision(row: PlanRow, expected: int | None) -> None:
    if expected is not None and row.revision != expected:
        raise ConflictError(
            f"plan {row.id} changed since you read it (revision {row.revision}, you had {expected}); "
            "reload it"
        )


def _flush(session: Session, row: PlanRow) -> None:
    try:
        session.flush()
    except StaleDataError as err:
        raise ConflictError(f"plan {row.id} was changed by someone else at the same time; reload it") from err


def _transition(row: PlanRow, target: str) -> None:
    if target not in PLAN_TRANSITIONS[row.state]:
        allowed = ", ".join(sorted(PLAN_TRANSITIONS[row.state])) or "none: it is finished"
        raise ConflictError(f"plan {row.id} is {row.state}; it cannot become {target} (allowed: {allowed})")
    row.state = target


def create_plan(
    session: Session,
    pod: str,
    vcenter: str,
    moves: Sequence[MoveSpec],
    *,
    created_by: str,
    source: str = "manual",
    on_move_failure: str = "continue",
    max_moves: int | None = None,
    max_gb: float | None = None,
    deadline: datetime | None = None,
    dry_run: bool = False,
    message: str = "",
    now: datetime | None = None,
) -> Plan:
    """Record a proposed plan. Raises ValidationError listing every bad move, or a disk moved twice."""
    problems: list[Problem] = []
    if not pod:
        problems.append(Problem("pod", "must be set"))
    if on_move_failure not in ("continue", "stop"):
        problems.append(Problem("on_move_failure", "must be continue or stop"))
    seen: dict[tuple[str, str, int], int] = {}
    for i, spec in enumerate(moves):
        problems += spec.problems(f"moves[{i}]")
        key = (spec.vcenter, spec.vm, spec.disk_key)
        if key in seen:
            problems.append(Problem(f"moves[{i}]", f"moves the same disk as moves[{seen[key]}]"))
        seen.setdefault(key, i)
    raise_if_problems(problems, "plan")
    at = now or _now()
    row = PlanRow(
        pod=pod, vcenter=vcenter, state="proposed", source=source, created_at=at, created_by=created_by,
        updated_at=at, cancel_requested=False, on_move_failure=on_move_failure, max_moves=max_moves,
        max_gb=max_gb, deadline=deadline, dry_run=dry_run, message=message,
    )  # fmt: skip
    session.add(row)
    session.flush()
    rows = [
        PlanMoveRow(
            plan_id=row.id, seq=i, recommendation_id=spec.recommendation_id, vcenter=spec.vcenter, vm=spec.vm,
            vm_name=spec.vm_name, disk_key=spec.disk_key, instance=spec.instance, size_bytes=spec.size_bytes,
            source_datastore=spec.source_datastore, target_datastore=spec.target_datastore, state="pending",
            progress=0, message="", updated_at=at, swap_group=spec.swap_group,
        )
        for i, spec in enumerate(moves)
    ]  # fmt: skip
    session.add_all(rows)
    session.flush()
    return _plan(row, rows)


def get_plan(session: Session, plan_id: int) -> Plan:
    row = _plan_row(session, plan_id, lock=False)
    return _plan(row, _moves(session, plan_id))


def list_plans(
    session: Session, *, pod: str | None = None, states: Sequence[str] | None = None, limit: int = 100
) -> list[Plan]:
    """Plans, newest first, optionally of one pod and in some states.

    Read as plain rows of the tables (not ORM objects, which cost several times as much to load and
    are not needed to read): the read models list up to a hundred plans whenever plans change."""
    session.flush()  # a select of the tables does not flush this session's pending changes by itself
    plans_t, moves_t = PlanRow.__table__, PlanMoveRow.__table__
    query = select(plans_t).order_by(plans_t.c.created_at.desc(), plans_t.c.id.desc()).limit(limit)
    if pod is not None:
        query = query.where(plans_t.c.pod == pod)
    if states is not None:
        query = query.where(plans_t.c.state.in_(list(states)))
    rows = session.execute(query).all()
    moves: dict[int, list[Row[Any]]] = {r.id: [] for r in rows}
    if rows:
        for move in session.execute(select(moves_t).where(moves_t.c.plan_id.in_(list(moves)))):
            moves[move.plan_id].append(move)
    return [_plan(r, moves[r.id]) for r in rows]


def pending_moves(session: Session, pod: str, *, plans: int = 100) -> list[Move]:
    """The pending and running moves of the pod's newest *plans* open plans (proposed, approved,
    running), newest plan first, each plan's in order: what ``list_plans`` of those plans holds, read
    in one query of the moves alone (a pod's view reads it after every plan change)."""
    session.flush()
    plans_t, moves_t = PlanRow.__table__, PlanMoveRow.__table__
    newest = (
        select(plans_t.c.id, plans_t.c.created_at)
        .where(plans_t.c.pod == pod, plans_t.c.state.in_(["proposed", "approved", "running"]))
        .order_by(plans_t.c.created_at.desc(), plans_t.c.id.desc())
        .limit(plans)
        .subquery()
    )
    query = (
        select(moves_t)
        .join(newest, moves_t.c.plan_id == newest.c.id)
        .where(moves_t.c.state.in_(["pending", "running"]))
        .order_by(newest.c.created_at.desc(), newest.c.id.desc(), moves_t.c.seq)
    )
    return [_move(m) for m in session.execute(query)]


def approve_plan(
    session: Session,
    plan_id: int,
    by: str,
    *,
    expected_revision: int | None = None,
    now: datetime | None = None,
) -> Plan:
    """proposed → approved. Raises ConflictError in any other state or on a stale revision."""
    row = _plan_row(session, plan_id)
    _check_revision(row, expected_revision)
    _transition(row, "approved")
    at = now or _now()
    row.approved_at, row.approved_by, row.updated_at = at, by, at
    _flush(session, row)
    return _plan(row, _moves(session, plan_id))


def start_plan(
    session: Session,
    plan_id: int,
    *,
    deadline: datetime | None = None,
    expected_revision: int | None = None,
    now: datetime | None = None,
) -> Plan:
    """approved → running (the executor takes it); *deadline* is when the window closes, if any."""
    row = _plan_row(session, plan_id)
    _check_revision(row, expected_revision)
    _transition(row, "running")
    at = now or _now()
    row.started_at, row.updated_at = at, at
    if deadline is not None:
        row.deadline = deadline
    _flush(session, row)
    return _plan(row, _moves(session, plan_id))


def cancel_plan(
    session: Session,
    plan_id: int,
    by: str,
    *,
    expected_revision: int | None = None,
    now: datetime | None = None,
) -> Plan:
    """Cancel a plan: at once if proposed or approved; a running plan is asked to stop (its executor ends it).

    Raises ConflictError if the plan has finished.
    """
    row = _plan_row(session, plan_id)
    _check_revision(row, expected_revision)
    at = now or _now()
    if row.state == "running":
        row.cancel_requested = True
        row.message = f"cancel requested by {by}"
    else:
        _transition(row, "cancelled")
        row.finished_at = at
        row.message = f"cancelled by {by}"
        for move in _moves(session, plan_id):
            if move.state == "pending":
                move.state, move.message, move.updated_at = "skipped", "plan cancelled", at
    row.updated_at = at
    _flush(session, row)
    return _plan(row, _moves(session, plan_id))


def finish_plan(
    session: Session, plan_id: int, state: PlanState, message: str = "", *, now: datetime | None = None
) -> Plan:
    """running → succeeded | failed | cancelled; refused while a move runs; pending moves are skipped."""
    row = _plan_row(session, plan_id)
    moves = _moves(session, plan_id)
    still = [m.seq for m in moves if m.state == "running"]
    if still:
        raise ConflictError(f"plan {plan_id} still has running moves {still}; record their outcome first")
    _transition(row, state)
    at = now or _now()
    for move in moves:
        if move.state == "pending":
            move.state, move.updated_at = "skipped", at
            move.message = move.message or f"plan {state}"
    row.finished_at, row.updated_at = at, at
    if message:
        row.message = message
    _flush(session, row)
    return _plan(row, moves)


def _move_row(session: Session, move_id: int) -> PlanMoveRow:
    row = session.execute(
        select(PlanMoveRow).where(PlanMoveRow.id == move_id).with_for_update()
    ).scalar_one_or_none()
    if row is None:
        raise NotFoundError(f"move {move_id} does not exist")
    return row


def _move_transition(row: PlanMoveRow, target: str) -> None:
    if target not in MOVE_TRANSITIONS[row.state]:
        raise ConflictError(f"move {row.seq} of plan {row.plan_id} is {row.state}; it cannot become {target}")
    row.state = target


def start_move(
    session: Session, move_id: int, task_id: str | None = None, *, now: datetime | None = None
) -> Move:
    """pending → running, only while the plan runs, is not asked to stop and the deadline has not passed.

    The same disk running in another plan is refused too: a disk is never moved by two plans at once.
    """
    disk = session.execute(
        select(PlanMoveRow.vcenter, PlanMoveRow.vm, PlanMoveRow.disk_key).where(PlanMoveRow.id == move_id)
    ).first()
    if disk is None:
        raise NotFoundError(f"move {move_id} does not exist")
    # Every move of this disk, in any plan, is locked first and in one order (PostgreSQL; SQLite's
    # write transactions are serial): two plans claiming the same disk at once are serialised, and the
    # second sees the first's claim.
    same_disk = session.execute(
        select(PlanMoveRow.id, PlanMoveRow.plan_id, PlanMoveRow.state)
        .where(PlanMoveRow.vcenter == disk[0], PlanMoveRow.vm == disk[1], PlanMoveRow.disk_key == disk[2])
        .order_by(PlanMoveRow.id)
        .with_for_update()
    ).all()
    row = _move_row(session, move_id)
    plan = _plan_row(session, row.plan_id)
    at = now or _now()
    if plan.state != "running":
        raise ConflictError(f"plan {plan.id} is {plan.state}, not running; its moves cannot start")
    if plan.cancel_requested:
        raise ConflictError(f"plan {plan.id} is being cancelled; no new move starts")
    if plan.deadline is not None and at >= plan.deadline:
        raise ConflictError(
            f"plan {plan.id}'s window closed at {plan.deadline.isoformat()}; no new move starts"
        )
    busy = next((p for other, p, state in same_disk if state == "running" and other != row.id), None)
    if busy is not None:
        raise ConflictError(f"disk {row.disk_key} of {row.vm} is being moved by plan {busy}")
    _move_transition(row, "running")
    row.task_id, row.started_at, row.updated_at, row.progress = task_id, at, at, 0
    plan.updated_at = at
    session.flush()
    return _move(row)


def update_move(
    session: Session,
    move_id: int,
    *,
    task_id: str | None = None,
    progress: int | None = None,
    message: str | None = None,
    now: datetime | None = None,
) -> Move:
    """Record a running move's vCenter task id, progress (0-100) or message."""
    row = _move_row(session, move_id)
    if row.state != "running":
        raise ConflictError(f"move {row.seq} of plan {row.plan_id} is {row.state}, not running")
    if progress is not None:
        raise_if_problems(
            [Problem("progress", "must lie in 0-100")] if not 0 <= progress <= 100 else [], "move update"
        )
        row.progress = progress
    if task_id is not None:
        row.task_id = task_id
    if message is not None:
        row.message = message
    row.updated_at = now or _now()
    session.flush()
    return _move(row)


def finish_move(
    session: Session, move_id: int, state: MoveState, message: str = "", *, now: datetime | None = None
) -> Move:
    """running → succeeded | failed | skipped, or pending → skipped, with vCenter's message."""
    row = _move_row(session, move_id)
    _move_transition(row, state)
    at = now or _now()
    row.finished_at, row.updated_at = at, at
    if state == "succeeded":
        row.progress = 100
    if message:
        row.message = message
    session.flush()
    return _move(row)


def resumable_plans(session: Session) -> list[Plan]:
    """Plans that were running when the service stopped: the executor picks them up after a restart."""
    return list_plans(session, states=["running"], limit=10_000)


def running_moves(session: Session, plan_id: int) -> list[Move]:
    """Moves recorded as running: their vCenter task (or the disk's location) decides how they ended."""
    return [m for m in get_plan(session, plan_id).moves if m.state == "running"]


def last_moved(session: Session, vcenter: str, vm: str, disk_key: int) -> datetime | None:
    """When this disk last finished a successful move (for the balancer's ping-pong guard)."""
    result = session.execute(
        select(func.max(PlanMoveRow.finished_at)).where(
            PlanMoveRow.vcenter == vcenter,
            PlanMoveRow.vm == vm,
            PlanMoveRow.disk_key == disk_key,
            PlanMoveRow.state == "succeeded",
        )
    ).scalar()
    return result


def last_moves(session: Session, vcenter: str) -> dict[tuple[str, int], datetime]:
    """When each disk of *vcenter* last finished a successful move, by (VM, device key): one query."""
    rows = session.execute(
        select(PlanMoveRow.vm, PlanMoveRow.disk_key, func.max(PlanMoveRow.finished_at))
        .where(PlanMoveRow.vcenter == vcenter, PlanMoveRow.state == "succeeded")
        .group_by(PlanMoveRow.vm, PlanMoveRow.disk_key)
    ).all()
    return {(vm, key): at for vm, key, at in rows if at is not None}


def prune_plans(session: Session, before: datetime) -> int:
    """Delete finished plans (and their moves) that finished before *before*."""
    rows = list(
        session.execute(
            select(PlanRow).where(PlanRow.state.in_(list(TERMINAL_PLAN_STATES)), PlanRow.finished_at < before)
        ).scalars()
    )
    for row in rows:
        for move in _moves(session, row.id):
            session.delete(move)
        session.delete(row)
    session.flush()
    return len(rows)
