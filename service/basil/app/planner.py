"""Plans and their executor: moves from a recommendation or given by hand, approved, then applied safely.

The store's state machine (:mod:`basil.store.plans`) is the truth. The executor:

- marks a move ``running`` in its own committed transaction before it asks vCenter for anything, so
  after a crash :func:`basil.store.plans.resumable_plans` finds it;
- before each move, reads the disk's datastore and the VM's running tasks fresh from vCenter: a disk
  already on its target is recorded as moved without moving it again, a relocation left running by
  a stopped service is waited for instead of being started a second time, and a disk that is no
  longer where the plan expected it is skipped;
- runs the Storage vMotion through the adapter's :class:`~basil.vcenter.actuator.Actuator` (dry run,
  pre- and post-checks, vSphere's concurrency limits), recording progress, the task and vCenter's
  message;
- starts no move once the plan's deadline (the end of its rebalance window) has passed, once the
  plan or the window has spent its budget of moves or GB, once the plan is being cancelled, or
  once the service is stopping (the plan then stays ``running`` and resumes at the next start);
- after a failed move goes on or stops, as the plan's ``on_move_failure`` says.

Moves of one plan run one after another. The service runs at most two plans at once, so however
plans overlap, no host ever has more than vSphere's two concurrent Storage vMotions (and no
datastore more than eight).
"""

from __future__ import annotations

import logging
import threading
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial

from sqlalchemy.orm import Session

from basil.app.actor import Actor
from basil.app.ids import IdSpace
from basil.app.pods import ResolvedPod
from basil.app.vcenters import VCenterLink
from basil.errors import BasilError, ConflictError, NotFoundError, Problem, VCenterError, raise_if_problems
from basil.store import Store
from basil.store import plans as plan_store
from basil.store.audit import record_system
from basil.store.plans import Move, MoveSpec, Plan
from basil.store.recommendations import get_recommendation, mark_planned, open_recommendations
from basil.vcenter.actions import Action, FollowOptions, RelocateDisk, TaskNotFollowedError, TaskOutcome
from basil.vcenter.actuator import ActuatorParams
from basil.vcenter.connection import VCenterConnection
from basil.vcenter.errors import (
    VCenterAuthenticationError,
    VCenterConnectionError,
    VCenterNotFoundError,
    VCenterTimeoutError,
)
from basil.vcenter.tasks import active_relocations, disk_locations, task_summary, wait_for_task
from basil.vcenter.types import Inventory

log = logging.getLogger(__name__)

GB = 2**30
Clock = Callable[[], datetime]


def utc_now() -> datetime:
    return datetime.now(UTC)


# --- creating plans -------------------------------------------------------------------------------


def create_plan_from_round(
    store: Store,
    round_id: str,
    actor: Actor,
    *,
    on_move_failure: str = "continue",
    source: str = "recommendation",
) -> Plan:
    """A proposed plan of every open recommendation of one round (they become ``planned``)."""
    with store.session() as session:
        recs = [r for r in open_recommendations(session) if r.round_id == round_id]
        if not recs:
            raise NotFoundError(
                f"recommendation {round_id} has no open moves (superseded, planned or unknown)"
            )
        pod = recs[0].pod
        moves = [
            MoveSpec(
                vcenter=r.spec.vcenter,
                vm=r.spec.vm,
                disk_key=r.spec.disk_key,
                source_datastore=r.spec.source_datastore,
                target_datastore=r.spec.target_datastore,
                size_bytes=r.spec.size_bytes,
                vm_name=r.spec.vm_name,
                instance=r.spec.instance,
                recommendation_id=r.id,
                swap_group=r.spec.swap_group,
            )
            for r in sorted(recs, key=lambda r: (int(r.spec.predicted.get("move", 0)), r.id))
        ]
        plan = plan_store.create_plan(
            session,
            pod,
            recs[0].spec.vcenter,
            moves,
            created_by=actor.name,
            source=source,
            on_move_failure=on_move_failure,
            message=f"from recommendation {round_id}",
        )
        mark_planned(session, [r.id for r in recs], plan.id)
        return plan_store.get_plan(session, plan.id)


def resolve_round_id(store: Store, recommendation_id: str | int) -> str:
    """A round id from what a client sends: the round's id, or the id of one of its moves."""
    text = str(recommendation_id)
    if text.isdigit():
        with store.read_session() as session:
            return get_recommendation(session, int(text)).round_id
    return text


def moves_from_request(  # noqa: PLR0912, PLR0915 - one check per field, every problem reported together
    moves: Sequence[object], pod: ResolvedPod, inventory: Inventory, ids: IdSpace
) -> list[MoveSpec]:
    """Explicit moves ``[{disk, to}]`` checked against the pod and the inventory; every problem at once."""
    problems: list[Problem] = []
    specs: list[MoveSpec] = []
    by_name = {ds.name: ds.moid for ds in inventory.datastores.values()}
    if not moves:
        problems.append(Problem("moves", "must list at least one move"))
    for i, raw in enumerate(moves):
        at = f"moves[{i}]"
        if not isinstance(raw, Mapping):
            problems.append(Problem(at, "must be an object with disk and to"))
            continue
        unknown = sorted(set(raw) - {"disk", "to"})
        if unknown:
            problems.append(Problem(at, f"unknown field(s) {', '.join(unknown)} (expected disk, to)"))
        disk_text, to_text = raw.get("disk"), raw.get("to")
        vm = disk = target = None
        if not isinstance(disk_text, str) or not disk_text:
            problems.append(Problem(f"{at}.disk", "must be a disk id like vm-17:scsi0:1"))
        else:
            try:
                vc, vm_moid, instance = ids.parse_disk(disk_text)
                vm = inventory.vms.get(vm_moid) if vc == pod.vcenter else None
                if vm is None:
                    problems.append(Problem(f"{at}.disk", f"no VM {vm_moid} in pod {pod.name}'s vCenter"))
                else:
                    disk = next((d for d in vm.disks if d.instance == instance), None)
                    if disk is None:
                        problems.append(Problem(f"{at}.disk", f"VM {vm.name} has no disk {instance}"))
                    elif disk.datastore not in pod.datastores:
                        problems.append(
                            Problem(f"{at}.disk", f"disk is on {disk.datastore}, outside pod {pod.name}")
                        )
            except NotFoundError as err:
                problems.append(Problem(f"{at}.disk", err.message))
        if not isinstance(to_text, str) or not to_text:
            problems.append(Problem(f"{at}.to", "must be a datastore id or name"))
        else:
            try:
                vc, moid = ids.parse_object(to_text, "datastore")
                target = moid if moid in inventory.datastores else by_name.get(moid)
                if target is None or vc != pod.vcenter:
                    problems.append(Problem(f"{at}.to", f"no datastore {to_text!r}"))
                    target = None
                elif target not in pod.datastores:
                    problems.append(Problem(f"{at}.to", f"datastore {to_text} is not in pod {pod.name}"))
                    target = None
            except NotFoundError as err:
                problems.append(Problem(f"{at}.to", err.message))
        if vm is not None and disk is not None and target is not None:
            if disk.datastore == target:
                problems.append(Problem(f"{at}.to", "the disk is already on that datastore"))
            else:
                specs.append(
                    MoveSpec(
                        pod.vcenter,
                        vm.moid,
                        disk.key,
                        disk.datastore,
                        target,
                        disk.capacity_bytes,
                        vm_name=vm.name,
                        instance=disk.instance,
                    )
                )
    raise_if_problems(problems, "plan")
    return specs


# --- executing plans ------------------------------------------------------------------------------


@dataclass
class Budget:
    """What a run may still spend: moves and GB (None: no limit)."""

    moves: int | None = None
    gb: float | None = None

    def allows(self, size_bytes: int, count: int = 1) -> str:
        """Why *count* moves of *size_bytes* together do not fit ('' when they do)."""
        if self.moves is not None and self.moves < count:
            return (
                "budget of moves spent" if count == 1 else f"budget of moves spent ({count} needed together)"
            )
        if self.gb is not None and size_bytes / GB > self.gb + 1e-9:
            return f"budget of GB spent ({self.gb:.1f} GB left, the move copies {size_bytes / GB:.1f} GB)"
        return ""

    def spend(self, size_bytes: int) -> None:
        if self.moves is not None:
            self.moves -= 1
        if self.gb is not None:
            self.gb -= size_bytes / GB


@dataclass
class _Both:
    """The plan's own budget and the window's, both checked and both spent."""

    plan: Budget
    window: Budget

    def allows(self, size_bytes: int, count: int = 1) -> str:
        return self.plan.allows(size_bytes, count) or self.window.allows(size_bytes, count)

    def spend(self, size_bytes: int) -> None:
        self.plan.spend(size_bytes)
        self.window.spend(size_bytes)


def swap_moves(plan: Plan, move: Move) -> list[Move]:
    """The plan's moves of *move*'s swap (both halves, *move* included); [] for a move not in a swap."""
    if move.swap_group is None:
        return []
    return [m for m in plan.moves if m.swap_group == move.swap_group]


def _swap_started(moves: Sequence[Move], move: Move) -> bool:
    return any(m.state in ("running", "succeeded") for m in moves if m.id != move.id)


def half_swap(plan: Plan, move: Move) -> str:
    """Why *move* must not start because the rest of its swap will not be applied ("" to go on).

    A swap not started yet whose other moves failed or were skipped is dropped whole: its half alone
    is not what the balancer recommended (it may raise the imbalance). Once a half has started, the
    rest follows.
    """
    moves = swap_moves(plan, move)
    if not moves or _swap_started(moves, move):
        return ""
    dropped = next((m for m in moves if m.state in ("failed", "skipped")), None)
    if dropped is None:
        return ""
    return (
        f"the swap's move {dropped.seq + 1} ({dropped.instance} of {dropped.vm_name or dropped.vm}) "
        f"{dropped.state}: half a swap is not applied alone"
    )


def half_done_swaps(plan: Plan) -> list[str]:
    """The plan's swaps left half done: some of their moves succeeded, others did not."""
    groups: dict[int, list[Move]] = {}
    for m in plan.moves:
        if m.swap_group is not None:
            groups.setdefault(m.swap_group, []).append(m)
    found: list[str] = []
    for moves in groups.values():
        done = [m for m in moves if m.state == "succeeded"]
        if not done or len(done) == len(moves):
            continue
        not_done = [m for m in moves if m.state != "succeeded"]

        def words(ms: Sequence[Move]) -> str:
            return ", ".join(
                f"{m.instance} of {m.vm_name or m.vm} {m.source_datastore} → {m.target_datastore}"
                + ("" if m.state == "succeeded" else f" ({m.state})")
                for m in ms
            )

        found.append(
            f"swap of moves {', '.join(str(m.seq + 1) for m in moves)} is half done: moved {words(done)}; "
            f"not moved {words(not_done)} (nothing moved back)"
        )
    return found


def _wait(
    conn: VCenterConnection, *, task_moid: str, vm: str, stop: threading.Event | None = None
) -> TaskOutcome:
    return wait_for_task(conn, task_moid, f"waiting for {task_moid} on {vm}", stop=stop)


def _task_fault(error: BasilError | None) -> bool:
    """Whether *error* is vCenter's verdict on the task (its fault), not a failure to follow it."""
    return error is not None and not isinstance(
        error,
        VCenterConnectionError | VCenterTimeoutError | VCenterNotFoundError | VCenterAuthenticationError,
    )


MOVE_OUTCOMES = ("moved", "already_there", "failed", "skipped", "cancelled", "pending", "running")


def move_outcome(state: str, task_id: str | None, message: str = "") -> str:
    """What happened to a move, as an operator reads it: ``moved`` (a Storage vMotion put the disk on
    its target), ``already_there`` (the disk was found on its target and not moved), ``failed``,
    ``skipped``, ``cancelled`` (skipped because its plan was being cancelled: every such skip says so
    in its message), ``pending`` or ``running``.

    A move the store records as succeeded without a vCenter task never ran a relocation: the executor
    records the task before it follows one, so that is a disk found on its target.
    """
    if state == "succeeded":
        return "moved" if task_id else "already_there"
    if state == "cancelled" or (state == "skipped" and "cancel" in message):
        return "cancelled"
    return state


def move_words(move: Move, names: Mapping[str, str]) -> str:
    """The move in words, by name: 'disk scsi0:1 of oltp-1 (vm-43) from 6diskLUN to 9diskLUN'."""
    vm = f"{move.vm_name} ({move.vm})" if move.vm_name else move.vm
    src = names.get(move.source_datastore, move.source_datastore)
    dst = names.get(move.target_datastore, move.target_datastore)
    return f"disk {move.instance} of {vm} from {src} to {dst}"


def datastore_names(inventory: Inventory | None) -> dict[str, str]:
    return {moid: ds.name for moid, ds in inventory.datastores.items()} if inventory is not None else {}


class StopExecution(Exception):  # noqa: N818 - a signal, not an error
    """Raised inside the executor to stop starting moves (shutdown)."""


class PlanExecutor:
    """Applies one plan at a time against its vCenter; see the module doc for the rules it keeps."""

    def __init__(
        self,
        store: Store,
        links: Mapping[str, VCenterLink],
        *,
        clock: Clock = utc_now,
        stopping: threading.Event | None = None,
        on_move: Callable[[Move], None] | None = None,
        after_task: Callable[[Move], None] | None = None,
        follow: FollowOptions | None = None,
        check: Callable[[Plan, Move], str] | None = None,
        shown: Callable[[datetime, str], datetime] | None = None,
    ) -> None:
        self.store = store
        self.links = links
        self.clock = clock
        self.stopping = stopping or threading.Event()
        self.on_move = on_move  # called with every move that reaches an end (metrics)
        # Test hook: called after vCenter finished a move's task and before the store records it.
        self.after_task = after_task
        self.follow = follow  # how tasks are followed (tests shorten the pauses)
        # Why a move should not start on the live placement and models ("" to go on): basil.app.move_check.
        self.check = check
        # A moment of the service's clock on a vCenter's clock, for the times its reasons show.
        self.shown = shown or (lambda moment, _vcenter: moment)

    # --- the run ---------------------------------------------------------------------------

    def run(  # noqa: PLR0912 - the run's stopping rules, in the order they apply
        self, plan_id: int, *, deadline: datetime | None = None, budget: Budget | None = None
    ) -> Plan:
        """Start (approved) or resume (running) a plan and apply its moves; returns the plan as it ends.

        When the service is stopping, returns early and leaves the plan running for the next start.
        """
        with self.store.session() as session:
            plan = plan_store.get_plan(session, plan_id)
            if plan.state == "approved":
                plan = plan_store.start_plan(session, plan_id, deadline=deadline, now=self.clock())
            elif plan.state != "running":
                raise ConflictError(
                    f"plan {plan_id} is {plan.state}; only approved or running plans are applied"
                )
        link = self.links.get(plan.vcenter)
        if link is None:
            raise NotFoundError(f"plan {plan_id} is for vCenter {plan.vcenter!r}, which is not configured")
        own = Budget(plan.max_moves, plan.max_gb)
        for m in plan.moves:
            if m.state in ("running", "succeeded"):
                own.spend(m.size_bytes)
        limit = _Both(own, budget or Budget())
        failed = 0
        try:
            for move in plan.moves:
                if move.state == "running":
                    failed += not self._resume_move(link, plan, move)
            for move in plan.moves:
                if move.state != "pending":
                    continue
                fresh = self._plan(plan_id)
                if next(m.state for m in fresh.moves if m.id == move.id) != "pending":
                    continue  # skipped with the rest of its swap
                why = self._why_not_start(fresh, move, limit) or half_swap(fresh, move)
                if not why and self.check is not None:
                    why = self.check(fresh, move)
                if why:
                    self._skip(move, why)
                    if why.startswith(("the plan is being cancelled", "the window closed")):
                        self._skip_rest(self._plan(plan_id), why)
                        break
                    self._skip_swap(fresh, move, why)
                    continue
                ok = self._start_move(link, fresh, move, limit)
                failed += not ok
                if not ok and fresh.on_move_failure == "stop":
                    self._skip_rest(self._plan(plan_id), f"stopped after move {move.seq + 1} failed")
                    break
        except StopExecution:
            log.info("plan %d: service stopping, the plan resumes at the next start", plan_id)
            return self._plan(plan_id)
        return self._finish(plan_id, failed)

    def _plan(self, plan_id: int) -> Plan:
        with self.store.read_session() as session:
            return plan_store.get_plan(session, plan_id)

    def _why_not_start(self, plan: Plan, move: Move, budget: _Both) -> str:
        if self.stopping.is_set():
            raise StopExecution
        if plan.cancel_requested:
            return "the plan is being cancelled"
        if plan.deadline is not None and self.clock() >= plan.deadline:
            return f"the window closed at {self.shown(plan.deadline, move.vcenter).isoformat()}"
        swap = swap_moves(plan, move)
        if swap and not _swap_started(swap, move):  # a swap must fit whole
            pending = [m for m in swap if m.state == "pending"]
            return budget.allows(sum(m.size_bytes for m in pending), len(pending))
        return budget.allows(move.size_bytes)

    def _skip(self, move: Move, why: str) -> None:
        with self.store.session() as session:
            ended = plan_store.finish_move(session, move.id, "skipped", why, now=self.clock())
        self._ended(ended)

    def _skip_swap(self, plan: Plan, move: Move, why: str) -> None:
        """*move* was skipped before its swap started: the swap's other pending moves go with it."""
        swap = swap_moves(plan, move)
        if _swap_started(swap, move):
            return
        for other in swap:
            if other.id != move.id and other.state == "pending":
                self._skip(other, why)

    def _skip_rest(self, plan: Plan, why: str) -> None:
        for other in plan.moves:
            if other.state == "pending":
                self._skip(other, why)

    def _ended(self, move: Move) -> None:
        if self.on_move is not None:
            self.on_move(move)

    def _finish(self, plan_id: int, failed: int) -> Plan:
        plan = self._plan(plan_id)
        counts = plan.counts()
        text = ", ".join(f"{n} {state}" for state, n in counts.items() if n)
        for half in half_done_swaps(plan):
            text += f"; {half}"
        if plan.cancel_requested:
            state = "cancelled"
        elif counts["failed"]:
            state = "failed"
        else:
            state = "succeeded"
        outcomes = [move_outcome(m.state, m.task_id, m.message) for m in plan.moves]
        tally = {k: outcomes.count(k) for k in ("moved", "already_there", "failed", "skipped", "cancelled")}
        words = ", ".join(f"{n} {k.replace('_', ' ')}" for k, n in tally.items() if n) or "no moves"
        with self.store.session() as session:
            ended = plan_store.finish_plan(session, plan_id, state, f"moves: {text}", now=self.clock())  # type: ignore[arg-type]
            # The plan's outcome, beside its create/approve/apply entries and one entry per move.
            record_system(
                session,
                "plan.outcome",
                f"plan {plan_id}",
                outcome="failed" if state == "failed" else "ok",
                message=f"plan {plan_id} of pod {plan.pod} {state}: {words}",
                details={"plan": plan_id, "pod": plan.pod, "state": state, "moves": tally},
                at=self.clock(),
            )
        log.info("plan %d %s (%s)", plan_id, state, text)
        return ended

    # --- one move --------------------------------------------------------------------------

    def _location(self, link: VCenterLink, move: Move, *, adopt: bool = False) -> tuple[str | None, str]:
        """Where the disk is now (after any relocation of its VM still running in vCenter has ended).

        Returns (datastore moid or None if the disk is gone, the message of a relocation that failed).
        With *adopt* (a resumed move that has no task recorded), the relocation waited for is recorded
        as the move's task.
        """
        failure = ""
        for task in link.call(lambda c: active_relocations(c, move.vm)):
            log.info(
                "move %d of plan %d: waiting for %s already running on %s",
                move.seq,
                move.plan_id,
                task.moid,
                move.vm,
            )
            if adopt and not move.task_id:
                self._note_task(move, task.moid)
            try:
                link.call(partial(_wait, task_moid=task.moid, vm=move.vm, stop=self.stopping))
            except TaskNotFollowedError as err:
                raise StopExecution from err
            except VCenterError as err:
                failure = err.message
        return link.call(lambda c: disk_locations(c, move.vm)).get(move.instance), failure

    def _names(self, move: Move, *moids: str | None) -> list[str]:
        """Datastores by name as the inventory last polled knows them (the id beside a name that two
        datastores share; the id alone when unknown; "no datastore" for None)."""
        link = self.links.get(move.vcenter)
        inventory = link.last_inventory if link is not None else None
        names = datastore_names(inventory)
        shared = {n for n, k in Counter(names.values()).items() if k > 1}
        out = []
        for moid in moids:
            if moid is None:
                out.append("no datastore")
            elif moid not in names:
                out.append(moid)
            else:
                out.append(f"{names[moid]} ({moid})" if names[moid] in shared else names[moid])
        return out

    def _note_task(self, move: Move, task: str) -> None:
        """Record the move's vCenter task at once, so a restart follows the same task."""
        with self.store.session() as session:
            plan_store.update_move(session, move.id, task_id=task, now=self.clock())

    def _resume_move(self, link: VCenterLink, plan: Plan, move: Move) -> bool:
        """A move recorded as running when the service stopped: find how it ended, or finish it."""
        if move.task_id:
            # The task the move started (or waited for): vCenter may have dropped it from the VM's
            # recent tasks, so it is followed by its id before the disk's place is read.
            summary = link.call(lambda c: task_summary(c, move.task_id or ""))
            if summary is not None and summary.active:
                try:
                    link.call(partial(_wait, task_moid=summary.moid, vm=move.vm, stop=self.stopping))
                except TaskNotFollowedError as err:
                    raise StopExecution from err
                except VCenterError as err:
                    log.info("move %d of plan %d: %s", move.seq, move.plan_id, err.message)
        where, failure = self._location(link, move, adopt=True)
        if where == move.target_datastore:
            self._record(move, "succeeded", "completed while the service was stopped; found on the target")
            return True
        if where != move.source_datastore:
            here, src, dst = self._names(move, where, move.source_datastore, move.target_datastore)
            self._record(
                move, "failed", f"the disk is on {here}, not on its source {src} or its target {dst}"
            )
            return False
        if failure:
            self._record(move, "failed", failure)
            return False
        if move.task_id:
            ended = link.call(lambda c: task_summary(c, move.task_id or ""))
            if ended is not None and ended.state == "error":
                self._record(move, "failed", ended.message or f"task {ended.moid} failed")
                return False
        # Neither done nor in flight: the service stopped before vCenter ran it. Run it now.
        return self._execute(link, plan, move)

    def _claim(self, move: Move) -> Move | None:
        """pending → running in the store before vCenter is asked anything; None (and the move skipped)
        when the store refuses: the plan is being cancelled or its window closed since it was read,
        or another plan is moving the same disk right now."""
        try:
            with self.store.session() as session:
                return plan_store.start_move(session, move.id, now=self.clock())
        except ConflictError as err:
            self._skip(move, err.message)
            return None

    def _dry_run_move(self, link: VCenterLink, move: Move) -> None:
        where, _failure = self._location(link, move)
        here, src, dst = self._names(move, where, move.source_datastore, move.target_datastore)
        if where != move.source_datastore:
            why = f"the disk is on {here}, not on {src} as planned"
        else:
            why = f"dry run: would move {move.instance} of {move.vm_name or move.vm} from {src} to {dst}"
        self._skip(move, why)

    def _start_move(self, link: VCenterLink, plan: Plan, move: Move, budget: _Both) -> bool:
        if plan.dry_run:
            self._dry_run_move(link, move)
            return True
        claimed = self._claim(move)
        if claimed is None:
            return True
        # From here the move is running in the store: a restart checks it against vCenter.
        try:
            where, failure = self._location(link, claimed)
        except VCenterError as err:  # nothing was asked of vCenter yet
            self._record(move, "failed", f"where the disk is could not be read: {err.message}")
            return False
        if where == move.target_datastore:
            self._record(move, "succeeded", "the disk is already on the target; not moved again")
            return True
        why = ""
        if where != move.source_datastore:
            here, src = self._names(move, where, move.source_datastore)
            why = f"the disk is on {here}, not on {src} as planned"
        elif self._plan(plan.id).cancel_requested:  # asked while vCenter was read
            why = "the plan is being cancelled; the move did not start"
        if why:
            self._record(move, "skipped", why)
            return True
        if self.stopping.is_set():
            raise StopExecution  # the move stays running; the next start runs it
        budget.spend(move.size_bytes)
        if failure:
            log.info(
                "move %d of plan %d: an earlier relocation had failed: %s", move.seq, move.plan_id, failure
            )
        return self._execute(link, plan, claimed)

    def _execute(self, link: VCenterLink, plan: Plan, move: Move) -> bool:
        last = [-10]
        started: list[str] = [move.task_id] if move.task_id else []

        def progress(_action: Action, pct: int) -> None:
            if pct < 100 and pct - last[0] < 10:
                return
            last[0] = pct
            try:
                with self.store.session() as session:
                    plan_store.update_move(session, move.id, progress=max(0, min(100, pct)), now=self.clock())
            except BasilError as err:  # progress is informative; the move goes on
                log.debug("progress of move %d: %s", move.id, err.message)

        def task_started(task: str) -> None:
            started.append(task)
            self._note_task(move, task)

        action = RelocateDisk(
            vm=move.vm,
            instance=move.instance,
            target=move.target_datastore,
            on_task=task_started,
            stop=self.stopping,
            follow=self.follow,
        )
        try:
            inventory = link.inventory()
            report = link.actuator(ActuatorParams(dry_run=False)).run([action], inventory, progress)
        except VCenterError as err:
            self._record(move, "failed", err.message)
            return False
        result = report.results[0]
        if isinstance(result.error, TaskNotFollowedError):
            raise StopExecution  # vCenter goes on; the move stays running with its task for the next start
        try:
            # The read models serve the last polled inventory: poll now, so the disk shows where it is
            # before the move is recorded as ended.
            link.inventory()
        except VCenterError as err:
            log.debug("inventory after move %d: %s", move.id, err.message)
        if self.after_task is not None:
            self.after_task(move)
        task = result.task or (started[-1] if started else "")
        if result.state == "succeeded":
            self._record(move, "succeeded", result.message, task=task)
            return True
        if result.state == "failed" and not _task_fault(result.error):
            # Basil lost sight of the task (not vCenter's verdict): the task and the disk's place decide.
            return self._judge(link, move, task, result.message)
        prefix = "pre-check: " if result.state == "precheck_failed" else ""
        self._record(move, "failed", prefix + result.message, task=task)
        return False

    def _judge(self, link: VCenterLink, move: Move, task: str, message: str) -> bool:
        """A move whose task Basil could not follow to its end (or whose start vCenter may or may not
        have taken): judged by vCenter's task and the disk's actual datastore."""
        try:
            summary = link.call(lambda c: task_summary(c, task)) if task else None
            if summary is not None and summary.active:
                link.call(partial(_wait, task_moid=summary.moid, vm=move.vm, stop=self.stopping))
            where, _failure = self._location(link, move)
            if task:
                summary = link.call(lambda c: task_summary(c, task))
        except TaskNotFollowedError as err:
            raise StopExecution from err
        except VCenterError as err:
            if self.stopping.is_set():
                raise StopExecution from err  # the next start reads the outcome
            self._record(
                move, "failed", f"{message}; the outcome could not be read: {err.message}", task=task
            )
            return False
        if where == move.target_datastore and (summary is None or summary.state == "success"):
            self._record(
                move, "succeeded", f"vCenter moved the disk (Basil lost sight of it: {message})", task=task
            )
            return True
        if summary is not None and summary.state == "error":
            message = summary.message or message
        self._record(move, "failed", message, task=task)
        return False

    def _record(self, move: Move, state: str, message: str, task: str = "") -> None:
        with self.store.session() as session:
            if task:
                plan_store.update_move(session, move.id, task_id=task, now=self.clock())
            ended = plan_store.finish_move(session, move.id, state, message, now=self.clock())  # type: ignore[arg-type]
            self._audit_move(session, ended)
        self._ended(ended)

    def _audit_move(self, session: Session, move: Move) -> None:
        """One audit entry per move the executor took to vCenter: the Storage vMotion and its task, or
        why the disk was not moved (already there, not where planned, failed)."""
        link = self.links.get(move.vcenter)
        names = datastore_names(link.last_inventory if link is not None else None)
        outcome = move_outcome(move.state, move.task_id, move.message)
        what = move_words(move, names)
        head = {
            "moved": "moved",
            "already_there": "did not move (already on the target)",
            "failed": "failed to move",
            "skipped": "skipped",
        }.get(outcome, outcome)
        task = f" (vCenter task {move.task_id})" if move.task_id else ""
        record_system(
            session,
            "move.relocate",
            f"plan {move.plan_id} move {move.seq + 1}",
            outcome="failed" if outcome == "failed" else "ok",
            message=f"{head} {what}{task}: {move.message}" if move.message else f"{head} {what}{task}",
            details={
                "plan": move.plan_id,
                "move": move.id,
                "result": outcome,
                "task": move.task_id,
                "vm": move.vm,
                "vm_name": move.vm_name,
                "disk": move.instance,
                "from": move.source_datastore,
                "from_name": names.get(move.source_datastore),
                "to": move.target_datastore,
                "to_name": names.get(move.target_datastore),
                "size_gb": move.size_bytes / GB,
            },
            at=self.clock(),
        )
