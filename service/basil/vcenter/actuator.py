"""The one executor of changes to vCenter: dry run, Storage vMotion limits, and a budget per run.

The planner and the SRP control loop both hand their actions to :class:`Actuator`. It pre-checks
each action, stops there on a dry run, keeps at most 8 concurrent relocations per datastore and 2
per host (vSphere's own Storage vMotion limits), refuses moves past the run's budget (count and
GB), and reports every action's outcome. Changes to one VM run one at a time, as vCenter
requires. QoS settings go through a :class:`QosBackend`, so a storage-policy (SPBM) IOPS-limit
backend can replace per-disk storageIOAllocation where vSphere dropped it, without changing the SRP
code that decides the settings.
"""

from __future__ import annotations

import logging
import threading
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from typing import Any, Protocol

from basil.errors import BasilError, Problem, raise_if_problems
from basil.vcenter.actions import Action, SetDiskIOAllocation
from basil.vcenter.connection import VCenterConnection
from basil.vcenter.errors import PostcheckFailedError
from basil.vcenter.types import Inventory, IOAllocation

log = logging.getLogger(__name__)

#: vSphere's Storage vMotion concurrency limits.
PER_DATASTORE_LIMIT = 8
PER_HOST_LIMIT = 2


@dataclass(frozen=True)
class ActuatorParams:
    dry_run: bool = False
    per_datastore: int = PER_DATASTORE_LIMIT
    per_host: int = PER_HOST_LIMIT
    max_moves: int | None = None  # relocations per run
    max_gb: float | None = None  # GB copied per run
    workers: int = 8  # actions running at once, whatever their kind
    postcheck: bool = True

    def validate(self) -> list[Problem]:
        problems = []
        if not 1 <= self.per_datastore <= PER_DATASTORE_LIMIT:
            problems.append(Problem("per_datastore", f"must be between 1 and {PER_DATASTORE_LIMIT}"))
        if not 1 <= self.per_host <= PER_HOST_LIMIT:
            problems.append(Problem("per_host", f"must be between 1 and {PER_HOST_LIMIT}"))
        if self.max_moves is not None and self.max_moves < 0:
            problems.append(Problem("max_moves", f"must be >= 0, got {self.max_moves}"))
        if self.max_gb is not None and self.max_gb < 0:
            problems.append(Problem("max_gb", f"must be >= 0, got {self.max_gb}"))
        if not 1 <= self.workers <= 64:
            problems.append(Problem("workers", f"must be between 1 and 64, got {self.workers}"))
        return problems


@dataclass(frozen=True)
class ActionResult:
    action: Action
    description: str
    state: str  # succeeded, failed, precheck_failed, skipped, dry_run
    message: str = ""
    task: str = ""
    fault: str = ""
    error: BasilError | None = field(default=None, compare=False)
    plan: Mapping[str, Any] | None = None
    started_at: datetime | None = None
    finished_at: datetime | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.action.kind,
            "description": self.description,
            "state": self.state,
            "message": self.message,
            "task": self.task,
            "fault": self.fault,
            "plan": dict(self.plan) if self.plan is not None else None,
            "started_at": self.started_at.isoformat() if self.started_at else None,
            "finished_at": self.finished_at.isoformat() if self.finished_at else None,
        }


@dataclass(frozen=True)
class RunReport:
    dry_run: bool
    results: tuple[ActionResult, ...]
    moves: int  # relocations started
    gb: float  # GB those relocations copy

    def count(self, state: str) -> int:
        return sum(1 for r in self.results if r.state == state)

    @property
    def ok(self) -> bool:
        return all(r.state in ("succeeded", "dry_run") for r in self.results)


class QosBackend(Protocol):
    """Turns a per-disk QoS setting decided by SRP into an action vCenter understands."""

    name: str

    def action(self, vm: str, instance: str, setting: IOAllocation) -> Action: ...


class StorageIOAllocationBackend:
    """Per-disk ``storageIOAllocation`` (reservation, limit, shares) via ReconfigVM_Task."""

    name = "storage_io_allocation"

    def action(self, vm: str, instance: str, setting: IOAllocation) -> Action:
        return SetDiskIOAllocation(vm=vm, instance=instance, io=setting)


ProgressFn = Callable[[Action, int], None]


class Actuator:
    """Runs actions against one vCenter within the Storage vMotion limits and a per-run budget."""

    def __init__(self, conn: VCenterConnection, params: ActuatorParams | None = None) -> None:
        self.params = params or ActuatorParams()
        raise_if_problems(self.params.validate(), "actuator parameters")
        self._conn = conn

    def apply_qos(
        self,
        settings: Mapping[tuple[str, str], IOAllocation],
        inventory: Inventory,
        backend: QosBackend | None = None,
        progress: ProgressFn | None = None,
    ) -> RunReport:
        """Apply per-disk settings ``{(vm moid, "scsi0:1"): IOAllocation}`` through *backend*."""
        backend = backend or StorageIOAllocationBackend()
        actions = [backend.action(vm, inst, s) for (vm, inst), s in sorted(settings.items())]
        return self.run(actions, inventory, progress)

    def run(
        self,
        actions: Sequence[Action],
        inventory: Inventory,
        progress: ProgressFn | None = None,
        cancel: threading.Event | None = None,
    ) -> RunReport:
        """Pre-check every action, then (unless dry run) execute those that pass, within the limits.

        Actions start in the given order as soon as their datastores and host have a free slot; an
        action that waits for a slot does not hold back later actions that have one. *cancel* stops
        new actions from starting (running ones finish); those not started are reported skipped.
        """
        p = self.params
        results: dict[int, ActionResult] = {}
        runnable: list[int] = []
        moves, moved_bytes = 0, 0
        for i, action in enumerate(actions):
            action.bind(inventory)
            desc = action.describe(inventory)
            reasons = action.precheck(inventory)
            if reasons:
                results[i] = ActionResult(action, desc, "precheck_failed", "; ".join(reasons))
                continue
            size = action.move_bytes(inventory)
            if size > 0:
                if p.max_moves is not None and moves + 1 > p.max_moves:
                    results[i] = ActionResult(action, desc, "skipped", f"budget: {p.max_moves} moves per run")
                    continue
                if p.max_gb is not None and (moved_bytes + size) / 2**30 > p.max_gb:
                    results[i] = ActionResult(
                        action,
                        desc,
                        "skipped",
                        f"budget: {p.max_gb:g} GB per run ({moved_bytes / 2**30:.1f} GB planned, "
                        f"this move {size / 2**30:.1f} GB)",
                    )
                    continue
                moves += 1
                moved_bytes += size
            if p.dry_run:
                results[i] = ActionResult(action, desc, "dry_run", "would run", plan=action.plan(inventory))
            else:
                runnable.append(i)
        if runnable:
            self._execute(
                actions=actions,
                runnable=runnable,
                inventory=inventory,
                results=results,
                progress=progress,
                cancel=cancel,
            )
        return RunReport(
            dry_run=p.dry_run,
            results=tuple(results[i] for i in range(len(actions))),
            moves=moves,
            gb=moved_bytes / 2**30,
        )

    # --- execution ------------------------------------------------------------------------------

    def _execute(
        self,
        *,
        actions: Sequence[Action],
        runnable: list[int],
        inventory: Inventory,
        results: dict[int, ActionResult],
        progress: ProgressFn | None,
        cancel: threading.Event | None,
    ) -> None:
        p = self.params
        cond = threading.Condition()
        ds_busy: Counter[str] = Counter()
        host_busy: Counter[str] = Counter()
        vm_busy: Counter[str] = Counter()
        pending = list(runnable)
        running = 0

        def fits(a: Action) -> bool:
            # One change of a VM at a time (vCenter runs one task per VM); relocations also within
            # the per-datastore and per-host Storage vMotion limits.
            if any(vm_busy[v] >= 1 for v in a.vms()):
                return False
            if a.move_bytes(inventory) <= 0:
                return True
            return all(ds_busy[d] < p.per_datastore for d in a.datastores()) and all(
                host_busy[h] < p.per_host for h in a.hosts()
            )

        def done(i: int, a: Action, fut: Future[ActionResult]) -> None:
            nonlocal running
            try:
                result = fut.result()
            except Exception as err:  # a bug in an action: record it against the action, keep going
                log.exception("%s raised", a.describe(inventory))
                result = ActionResult(a, a.describe(inventory), "failed", f"{type(err).__name__}: {err}")
            with cond:
                results[i] = result
                vm_busy.subtract(a.vms())
                if a.move_bytes(inventory) > 0:
                    ds_busy.subtract(a.datastores())
                    host_busy.subtract(a.hosts())
                running -= 1
                cond.notify_all()

        with ThreadPoolExecutor(max_workers=p.workers, thread_name_prefix="basil-actuator") as pool, cond:
            while pending:
                if cancel is not None and cancel.is_set():
                    for i in pending:
                        results[i] = ActionResult(
                            actions[i],
                            actions[i].describe(inventory),
                            "skipped",
                            "cancelled before it started",
                        )
                    pending.clear()
                    break
                started = False
                if running < p.workers:
                    for i in list(pending):
                        a = actions[i]
                        if fits(a):
                            pending.remove(i)
                            vm_busy.update(a.vms())
                            if a.move_bytes(inventory) > 0:
                                ds_busy.update(a.datastores())
                                host_busy.update(a.hosts())
                            running += 1
                            fut = pool.submit(self._run_one, a, inventory, progress)
                            fut.add_done_callback(partial(done, i, a))
                            started = True
                            break
                if not started:
                    cond.wait(timeout=1.0)
            while running:
                cond.wait(timeout=1.0)

    def _run_one(self, action: Action, inventory: Inventory, progress: ProgressFn | None) -> ActionResult:
        desc = action.describe(inventory)
        started = datetime.now(UTC)

        def on_progress(pct: int) -> None:
            if progress is not None:
                progress(action, pct)

        try:
            outcome = action.execute(self._conn, on_progress)
            if self.params.postcheck:
                problems = action.postcheck(self._conn)
                if problems:
                    raise PostcheckFailedError(f"{desc}: post-check: {'; '.join(problems)}")
        except BasilError as err:
            log.warning("%s failed: %s", desc, err.message)
            return ActionResult(
                action,
                desc,
                "failed",
                err.message,
                fault=getattr(err, "fault", ""),
                error=err,
                started_at=started,
                finished_at=datetime.now(UTC),
            )
        log.info("%s: done (%s)", desc, outcome.task or outcome.message)
        return ActionResult(
            action,
            desc,
            "succeeded",
            outcome.message or "done",
            task=outcome.task,
            started_at=started,
            finished_at=datetime.now(UTC),
        )
