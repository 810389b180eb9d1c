"""The ``Service`` façade: the one object the web layer (and ``basil serve``) calls.

It owns the store, one :class:`~basil.app.vcenters.VCenterLink` per vCenter, the newest samples of
each, the SRP controller, the plan executor and the one scheduler of the process. Reads return
JSON-ready dicts in the shapes of the API contract (built in :mod:`basil.app.views`); every action
is audited with its :class:`~basil.app.actor.Actor`; errors are :mod:`basil.errors` classes.

Reads are served from the inventory as last polled (by the collection job, the inventory job, and
before and after every move) and from :class:`~basil.app.view_cache.ReadCache`, whose entries are
rebuilt as soon as what they were built from changed; answers of reads may be shared between callers
and must not be changed.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from typing import Any

from apscheduler.schedulers.background import BackgroundScheduler

from basil.app import jobs as job_registry
from basil.app import lists, views, whatif
from basil.app.actor import SYSTEM, Actor, audited
from basil.app.clock import VCenterClock
from basil.app.collection import CollectionWriter, StoredChunk, keep_newer
from basil.app.ids import IdSpace
from basil.app.metrics import Metrics, record_slo_damage
from basil.app.modelling import device_inputs, run_modelling
from basil.app.move_check import MoveCheck
from basil.app.planner import (
    Budget,
    PlanExecutor,
    create_plan_from_round,
    moves_from_request,
    resolve_round_id,
    utc_now,
)
from basil.app.pods import ResolvedPod, overlapping_pods, resolve_pod
from basil.app.pools import PoolDocument, parse_pool_document
from basil.app.prediction import check_predictions, record_prediction
from basil.app.rebalance_window import OVERRIDE_KEY, changed_window
from basil.app.recommendation import (
    PodSnapshot,
    Round,
    SloInputs,
    build_snapshot,
    disk_read_latency,
    run_round,
)
from basil.app.slo_history import pod_slo_history
from basil.app.slo_shares import apply_group_shares
from basil.app.srp_loop import SrpController
from basil.app.validity import ensure_valid, round_basis, stale_after_move
from basil.app.vcenters import VCenterLink, connection_params
from basil.app.view_cache import (
    CONFIG,
    FITS,
    PLANS,
    ROUNDS,
    SAMPLES,
    SRP_POOLS,
    Basis,
    Generations,
    ReadCache,
)
from basil.config import BasilConfig, VCenterConfig, store_url
from basil.config.schema import RebalanceWindowConfig
from basil.core.device_model import DeviceModelParams
from basil.core.placement import PlacementRequest, place, placement_to_dict
from basil.core.slo import GOAL_SLO
from basil.core.workload_model import WorkloadModelParams, WorkloadParams
from basil.errors import (
    BasilError,
    ConflictError,
    NotFoundError,
    Problem,
    ValidationError,
    VCenterError,
    raise_if_problems,
)
from basil.store import Store, srp_pools
from basil.store import job_runs as runs
from basil.store import plans as plan_store
from basil.store.fits import DatastoreModel, DiskModel, current_datastore_models, current_disk_models
from basil.store.inventory import save_inventory
from basil.store.overrides import Override, delete_override, get_override, put_override
from basil.store.recommendations import open_recommendations, round_recommendations
from basil.store.retention import apply_retention
from basil.store.samples import DiskRef, latest_sample_time, newest_sample_times, roll_up
from basil.vcenter.connection import ConnectionParams
from basil.vcenter.perf import PerfCollector
from basil.vcenter.relocations import recent_relocations
from basil.vcenter.types import DiskSample, HostDatastoreSample, Inventory

log = logging.getLogger(__name__)

#: At most this many plans are applied at once (each runs its moves one at a time), so no host ever
#: sees more than vSphere's 2 concurrent Storage vMotions.
PLAN_SLOTS = 2


class Service:
    """Basil's application layer; see the module doc. Thread-safe: the API calls it from many threads."""

    def __init__(
        self,
        config: BasilConfig,
        store: Store,
        *,
        params_factory: Callable[[VCenterConfig], ConnectionParams] = connection_params,
        clock: Callable[[], datetime] = utc_now,
        with_tags: bool = True,
    ) -> None:
        config.validate()
        self.config = config
        self._file_rebalance = config.schedules.rebalance
        self.rebalance_override: Override | None = None  # the window's change kept in the store
        self.store = store
        self.clock = clock
        self.ids = IdSpace([vc.name for vc in config.vcenters])
        self.links: dict[str, VCenterLink] = {
            vc.name: VCenterLink(vc, params_factory, with_tags=with_tags) for vc in config.vcenters
        }
        # vCenter's clock per vCenter, read at each collection: what the service shows is on it.
        self.vcenter_clocks = {name: VCenterClock() for name in self.links}
        self.counters = Metrics()
        self.stopping = threading.Event()
        self.srp = SrpController(store, config.srp)
        self.executor = PlanExecutor(
            store,
            self.links,
            clock=clock,
            stopping=self.stopping,
            on_move=self._move_ended,
            check=MoveCheck(self),
            shown=lambda moment, vcenter: self.shown(moment, vcenter) or moment,
        )
        self.workload_params = WorkloadModelParams()
        self.device_params = DeviceModelParams()
        self.scheduler: BackgroundScheduler | None = None
        self._first_round_done: set[str] = set()  # pods whose first round ran or was found (_first_rounds)
        # One round at a time: a first round never lands after (and supersedes) one asked for.
        self._round_lock = threading.Lock()
        self.periodic = False  # whether the scheduler runs the configured schedules
        self.started_at: datetime | None = None
        self._connecting: list[threading.Thread] = []
        self.latest_disks: dict[str, dict[tuple[str, str], DiskSample]] = {n: {} for n in self.links}
        self.latest_hosts: dict[str, dict[tuple[str, str], HostDatastoreSample]] = {n: {} for n in self.links}
        self._window_lock = threading.Lock()  # serialises changes of the rebalance window
        self.rounds: dict[str, Round] = {}
        self.generations = Generations()
        self.cache = ReadCache()
        self.pod_states: dict[str, dict[str, Any]] = {}
        self.pod_overlaps: list[str] = []  # pods sharing datastores, as the inventory job last found
        self._saved_inventory: dict[str, int] = {}
        self._lock = threading.RLock()
        self._job_locks = {job_id: threading.Lock() for job_id in job_registry.JOBS}
        self._requested_runs: dict[str, int] = {}  # job id -> run asked for and not started yet
        self._running_runs: dict[str, int] = {}  # job id -> run in progress
        self._plan_slots = threading.BoundedSemaphore(PLAN_SLOTS)
        self._runner = ThreadPoolExecutor(max_workers=PLAN_SLOTS, thread_name_prefix="basil-plan")
        self._active_plans: dict[int, Future[Any]] = {}
        self._links_closed = False  # set by shutdown, after which no link stays connected
        self._executing: set[int] = set()  # plans an executor of this process applies now

    # --- life cycle -------------------------------------------------------------------------

    @classmethod
    def from_config(cls, config: BasilConfig, **kw: Any) -> Service:
        """The service for *config*: its store (not migrated), vCenter links (not connected), no scheduler."""
        return cls(config, Store(store_url(config.store)), **kw)

    def start(self, scheduler: bool = True, periodic: bool = True) -> None:
        """Migrate the store, connect to every vCenter (one that refuses is retried by the jobs), resume
        plans that were running, and start the one scheduler of this process: with ``periodic=False``
        it runs only the jobs asked for (:meth:`trigger_job`), and the store's schedules are left alone."""
        self.store.upgrade()
        self._load_rebalance_override()
        with self.store.session() as session:
            abandoned = runs.abandon_running(session)
        if abandoned:
            log.info("%d job runs were left running by a stopped service; marked failed", abandoned)
        # Each vCenter is connected in the background: one that hangs must not hold up the start (the
        # API, /health included, answers meanwhile); whatever needs the link waits for it.
        self._connecting = [
            threading.Thread(
                target=self._connect, args=(link,), name=f"basil-connect-{link.name}", daemon=True
            )
            for link in self.links.values()
        ]
        for thread in self._connecting:
            thread.start()
        self.started_at = datetime.now(UTC)
        self.resume_plans()
        if scheduler:
            self.periodic = periodic
            self.scheduler = job_registry.build_scheduler(self.store, persistent=periodic)
            job_registry.set_host(self)
            self.scheduler.start(paused=True)
            if periodic:
                job_registry.register_jobs(self.scheduler, self.config)
            self.scheduler.resume()

    def wait_connected(self, timeout_s: float | None = None) -> None:
        """Wait for the first connection attempt to each vCenter (made in the background by
        :meth:`start`) to end, whatever its outcome; for callers that need the links settled."""
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        for thread in self._connecting:
            thread.join(None if deadline is None else max(0.0, deadline - time.monotonic()))

    def _connect(self, link: VCenterLink) -> None:
        if self.stopping.is_set():
            return
        try:
            link.connect()
        except BasilError as err:
            log.warning("vCenter %s is not reachable now (%s); the jobs will retry", link.name, err.message)
        except Exception:  # a bug must not pass silently in a thread of its own
            log.exception("connecting to vCenter %s", link.name)
        if self._links_closed:  # the service stopped while this connected: leave no session behind
            link.close()

    def shutdown(self, wait: bool = True) -> None:
        """Stop gracefully: no new move or job starts; running moves end; running plans resume next start."""
        self.stopping.set()
        if self.scheduler is not None:
            # APScheduler 3 holds its job stores' lock while it waits for the running jobs, and a job
            # that asks the scheduler anything meanwhile (the first round moves `recommend`'s next
            # run) would wait for that lock for ever: stop it without waiting, then wait for the jobs
            # outside its locks. No scheduled run starts once `stopping` is set (run_job).
            self.scheduler.shutdown(wait=False)
            if wait:
                self._wait_for_running_jobs()
            job_registry.clear_host(self)
            self.scheduler = None
        with self._lock:
            never_started = list(self._requested_runs.values())
            self._requested_runs.clear()
        for run_id in never_started:
            with self.store.session() as session:
                runs.finish_run(session, run_id, "failed", "the service stopped before the run started")
        self._runner.shutdown(wait=wait)
        self._links_closed = True
        for link in self.links.values():
            link.close()
        self.store.dispose()

    def _wait_for_running_jobs(self) -> None:
        """Until no job runs in this service (a stopping service starts none: :meth:`run_job`)."""
        while True:
            with self._lock:
                if not self._running_runs:
                    return
            time.sleep(0.05)

    def __enter__(self) -> Service:
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()

    # --- shared helpers ---------------------------------------------------------------------

    def link(self, vcenter: str) -> VCenterLink:
        try:
            return self.links[vcenter]
        except KeyError:
            raise NotFoundError(f"no vCenter named {vcenter!r}") from None

    def inventory(self, vcenter: str, refresh: bool = True) -> Inventory:
        """The vCenter's inventory. Any vCenter error here is vCenter's failure, never the caller's: a
        fault that names a missing object (say the watcher's collector after a session loss) is 502,
        not 404; an unreachable vCenter stays 503."""
        try:
            return self.link(vcenter).inventory(refresh)
        except VCenterError as err:
            if err.http_status >= 500:
                raise
            raise VCenterError(f"vCenter {vcenter} failed: {err.message}", fault=err.fault) from None

    def resolved_pods(self, refresh: bool = True) -> list[ResolvedPod]:
        """Every configured pod resolved in its vCenter's current inventory (pods of a vCenter that is
        down are left out)."""
        out: list[ResolvedPod] = []
        for pod in self.config.pods:
            try:
                out.append(resolve_pod(pod, self.inventory(pod.vcenter, refresh)))
            except BasilError as err:
                log.debug("pod %s: %s", pod.name, err.message)
        return out

    def resolved_pod(self, name: str, refresh: bool = True) -> ResolvedPod:
        pod = next((p for p in self.config.pods if p.name == name), None)
        if pod is None:
            raise NotFoundError(f"no pod named {name!r}")
        return resolve_pod(pod, self.inventory(pod.vcenter, refresh))

    def sample_now(self, vcenter: str) -> int | None:
        """vCenter's time of the newest sample (the clock of models, rollups and retention)."""
        link = self.links.get(vcenter)
        if link is not None and link.last_collection is not None:
            return int(link.last_collection.timestamp())
        with self.store.read_session() as session:
            return latest_sample_time(session)

    def basis(
        self, vcenters: Iterable[str] = (), tables: Sequence[str] = (), state: Sequence[str] = ()
    ) -> Basis:
        """What a cached read model is built from, taken before it is built (see :mod:`basil.app.view_cache`):
        the inventories of *vcenters* as last polled, the store's *tables* and the service's *state*."""
        return Basis(
            tuple(self.inventory(vc, refresh=False) for vc in vcenters),
            self.store.generation(*tables) + self.generations.get(*state),
        )

    def read_basis(self, tables: Sequence[str] = (), state: Sequence[str] = ()) -> Basis:
        """:meth:`basis` over every vCenter's inventory as last polled (None while its link is down) and
        its clock's readings (times are shown on it); never connects, never waits (for the API's cached
        answers, basil.api.answers)."""
        inventories = self._last_inventories()
        return Basis(
            tuple(inventories.get(name) for name in self.links),
            self.store.generation(*tables)
            + self.generations.get(*state)
            + tuple(clock.generation for clock in self.vcenter_clocks.values()),
        )

    def disk_models(self, vcenter: str) -> Mapping[DiskRef, DiskModel]:
        """The current workload model of every disk of *vcenter* (cached until the next fit)."""

        def build() -> Mapping[DiskRef, DiskModel]:
            with self.store.read_session() as session:
                return current_disk_models(session, vcenter)

        return self.cache.get(("disk_models", vcenter), self.basis(tables=FITS), build)

    def datastore_models(self, vcenter: str) -> Mapping[tuple[str, str], DatastoreModel]:
        """The current device model of every datastore of *vcenter* (cached until the next fit)."""

        def build() -> Mapping[tuple[str, str], DatastoreModel]:
            with self.store.read_session() as session:
                return current_datastore_models(session, vcenter)

        return self.cache.get(("datastore_models", vcenter), self.basis(tables=FITS), build)

    def newest_disk_samples(self, vcenter: str) -> dict[tuple[str, str], DiskSample]:
        """A copy of the newest sample per disk: collection adds to the live dict chunk by chunk."""
        with self._lock:
            return dict(self.latest_disks.get(vcenter, {}))

    def newest_host_samples(self, vcenter: str) -> dict[tuple[str, str], HostDatastoreSample]:
        """A copy of the newest sample per host and datastore (see :meth:`newest_disk_samples`)."""
        with self._lock:
            return dict(self.latest_hosts.get(vcenter, {}))

    def pod_snapshot(self, pod: ResolvedPod) -> PodSnapshot:
        """The pod as the balancer sees it now (built again only when the inventory, the models, the
        plans, the newest samples or the configuration changed; ``now`` is always the clock's)."""

        def build() -> PodSnapshot:
            with self.store.read_session() as session:
                last = plan_store.last_moves(session, pod.vcenter)
            latest = self.newest_disk_samples(pod.vcenter)
            return build_snapshot(
                pod,
                self.inventory(pod.vcenter, refresh=False),
                disk_models=self.disk_models(pod.vcenter),
                datastore_models=self.datastore_models(pod.vcenter),
                last_moves=last,
                now=self.clock(),
                disk_iops={k: s.iops for k, s in latest.items() if s.iops is not None},
            )

        basis = self.basis([pod.vcenter], FITS + PLANS, (SAMPLES, CONFIG))
        cached = self.cache.get(("pod_snapshot", pod.name), basis, build)
        # The ping-pong guard compares each disk's last move with the snapshot's time: always now.
        snapshot = dataclasses.replace(cached.snapshot, now=self.clock().timestamp())
        return dataclasses.replace(cached, snapshot=snapshot)

    def _move_ended(self, move: plan_store.Move) -> None:
        self.counters.inc("basil_moves_total", outcome=move.state)
        try:
            stale_after_move(self, move)
        except BasilError as err:  # the live check (basil.app.validity) still finds the move
            log.warning("move %d: recommendations not marked stale: %s", move.id, err.message)

    # --- jobs -------------------------------------------------------------------------------

    def _known_job(self, job_id: str) -> None:
        if job_id not in job_registry.JOBS:
            raise NotFoundError(f"no job {job_id!r} (jobs: {', '.join(job_registry.JOBS)})")

    def _busy(self, job_id: str) -> str:
        """Why *job_id* cannot start another run now, or "" (call with ``self._lock`` held)."""
        running = self._running_runs.get(job_id)
        if running is not None:
            return f"job {job_id} is running already" + (f": run {running}" if running > 0 else "")
        asked = self._requested_runs.get(job_id)
        if asked is not None:
            return f"job {job_id} was asked for already: run {asked}"
        return ""

    def trigger_job(self, job_id: str, actor: Actor) -> dict[str, Any]:
        """Have this process's scheduler run a job now; answers the run at once, recorded as running.

        The job runs on the scheduler's threads, never the caller's. A job that is running (scheduled
        or asked for) is not asked for twice: ConflictError names the run to watch instead.
        """
        with audited(self.store, actor, "job.run", f"job {job_id}") as note:
            self._known_job(job_id)
            scheduler = self.scheduler
            if scheduler is None or not scheduler.running:
                raise ConflictError(
                    "this service runs no scheduler, so it cannot run a job in the background"
                )
            with self._lock:
                busy = self._busy(job_id)
                if busy:
                    raise ConflictError(busy)
                with self.store.session() as session:
                    run = runs.get_run(session, runs.start_run(session, job_id))
                self._requested_runs[job_id] = run.id
            try:
                job_registry.request_run(scheduler, self, job_id, run.id)
            except Exception as err:  # the scheduler stopped meanwhile: the run never starts
                with self._lock:
                    self._requested_runs.pop(job_id, None)
                with self.store.session() as session:
                    runs.finish_run(session, run.id, "failed", f"the scheduler refused it: {err}")
                raise ConflictError(
                    f"the scheduler did not take run {run.id} of job {job_id}: {err}"
                ) from err
            note.details = {"run": run.id}
            note.message = f"run {run.id} of job {job_id} handed to the scheduler"
            return views.job_run(self, run)

    def job_runs(self, job_id: str, limit: int = 20) -> list[dict[str, Any]]:
        """The latest runs of a job, newest first."""
        self._known_job(job_id)
        with self.store.read_session() as session:
            return [views.job_run(self, r) for r in runs.recent_runs(session, job_id, limit=limit)]

    def job_run(self, job_id: str, run_id: int) -> dict[str, Any]:
        self._known_job(job_id)
        with self.store.read_session() as session:
            run = runs.get_run(session, run_id)
        if run.job_id != job_id:
            raise NotFoundError(f"job run {run_id} is a run of {run.job_id}, not of {job_id}")
        return views.job_run(self, run)

    def run_job(self, job_id: str, run_id: int | None = None) -> dict[str, Any]:
        """Run one job now, in this thread, recording the run; a job already running is not run twice.

        Without *run_id* (the schedules, the command line, tests) a job that is running or asked for
        raises ConflictError. With the *run_id* :meth:`trigger_job` recorded, the run waits for a
        scheduled run that got in first, then runs.
        """
        self._known_job(job_id)
        lock = self._job_locks[job_id]
        if run_id is None:
            with self._lock:  # trigger_job checks the same state under the same lock
                if self.stopping.is_set():  # shutdown waits for the runs registered before this
                    raise ConflictError(f"job {job_id} not started: the service is stopping")
                busy = self._busy(job_id)
                if busy or not lock.acquire(blocking=False):
                    raise ConflictError(busy or f"job {job_id} is running already")
                self._running_runs[job_id] = 0  # its run id follows in a moment
        else:
            lock.acquire()
            with self._lock:
                given_up = self._requested_runs.get(job_id) != run_id
                if not given_up:
                    del self._requested_runs[job_id]
                    self._running_runs[job_id] = run_id
            if given_up:  # the service stopped meanwhile and recorded why the run never started
                lock.release()
                with self.store.read_session() as session:
                    return views.job_run(self, runs.get_run(session, run_id))
        released = False
        try:
            if run_id is None:
                with self.store.session() as session:
                    run_id = runs.start_run(session, job_id)
                with self._lock:
                    self._running_runs[job_id] = run_id
            started = time.monotonic()
            outcome, message, details = self._execute_job(job_id)
            # No longer running before it is recorded finished: whoever sees the run finished can ask
            # for the next at once (trigger_job checks under the same lock), never answered 409.
            with self._lock:
                self._running_runs.pop(job_id, None)
                lock.release()
                released = True
            with self.store.session() as session:
                run = runs.finish_run(session, run_id, outcome, message[:4000], details=details)
            self.counters.observe_job(job_id, outcome, time.monotonic() - started)
            return views.job_run(self, run)
        finally:
            if not released:
                with self._lock:
                    self._running_runs.pop(job_id, None)
                lock.release()

    def _execute_job(self, job_id: str) -> tuple[runs.Outcome, str, dict[str, Any]]:
        """Run the job's work: its outcome, message and details (any error is caught and recorded)."""
        outcome: runs.Outcome = "succeeded"
        message = ""
        details: dict[str, Any] = {}
        try:
            details = getattr(self, f"_job_{job_id}")()
            message = str(details.pop("message", ""))
            if details.pop("skipped", False):
                outcome = "skipped"
        except BasilError as err:
            outcome, message = "failed", err.message
            log.warning("job %s failed: %s", job_id, err.message)
        except Exception as err:  # a bug must not kill the scheduler thread; it is recorded
            outcome, message = "failed", f"{type(err).__name__}: {err}"
            log.exception("job %s raised", job_id)
        return outcome, message, details

    def _job_collect(self) -> dict[str, Any]:
        done: list[dict[str, object]] = []
        problems: list[str] = []
        idle: list[str] = []
        for name, link in self.links.items():
            writer = CollectionWriter(self.store, name, on_stored=self._chunk_stored(name, link))
            try:
                collector = link.collector
                if not collector.resumed:
                    self._resume_collector(name, collector)
                inventory = link.inventory()
                if not inventory.vms and not inventory.hosts:
                    link.job_succeeded("collect")
                    idle.append(f"{name}: no VMs or hosts in the inventory, nothing to collect")
                    continue
                # Chunk by chunk: a cycle that catches up a backlog stores it as it comes.
                report = collector.collect(inventory, sink=writer)
            except BasilError as err:
                self.counters.inc("basil_collections_total", vcenter=name, outcome="failed")
                self.counters.inc("basil_vcenter_errors_total", vcenter=name)
                link.job_failed("collect", err.message)
                link.note_error(err)  # a refused re-login drops the session, behind the back-off
                problems.append(f"{name}: {err.message}")
                continue
            link.job_succeeded("collect")
            self._read_vcenter_clock(name, collector)
            outcome = writer.outcome(report)
            self.counters.inc("basil_collections_total", vcenter=name, outcome="succeeded")
            self.counters.set("basil_missing_counters", len(outcome.missing_counters), vcenter=name)
            if outcome.errors:
                self.counters.inc("basil_vcenter_errors_total", len(outcome.errors), vcenter=name)
            done.append(outcome.summary())
        if problems and not done:
            raise BasilError("; ".join(problems))
        if not done and not problems:
            return {"skipped": True, "message": "; ".join(idle) or "no vCenter configured"}
        return {"vcenters": done, "message": "; ".join(problems + idle)}

    def _read_vcenter_clock(self, name: str, collector: PerfCollector) -> None:
        """A reading of vCenter's clock against the service's (basil.app.clock)."""
        before = self.clock()
        try:
            remote = collector.vcenter_time()
        except BasilError as err:
            log.debug("vCenter %s time: %s", name, err.message)
            return
        after = self.clock()
        self.vcenter_clocks[name].note(
            before + (after - before) / 2, remote, (after - before).total_seconds() / 2
        )

    def shown(self, moment: datetime | None, vcenter: str | None = None) -> datetime | None:
        """*moment* of the service's clock on vCenter's clock, as every time Basil shows is
        (basil.app.clock); *vcenter* None: the first configured."""
        if moment is None:
            return None
        name = vcenter if vcenter in self.vcenter_clocks else next(iter(self.vcenter_clocks), None)
        return self.vcenter_clocks[name].at(moment) if name is not None else moment

    def local_time(self, shown: datetime, vcenter: str | None = None) -> datetime:
        """The service's moment of a time shown on vCenter's clock (the inverse of :meth:`shown`)."""
        name = vcenter if vcenter in self.vcenter_clocks else next(iter(self.vcenter_clocks), None)
        return self.vcenter_clocks[name].local(shown) if name is not None else shown

    def vcenter_time(self, vcenter: str | None = None) -> datetime:
        """Now on vCenter's clock, as the service last read it (no round trip)."""
        shown = self.shown(self.clock(), vcenter)
        assert shown is not None
        return shown

    def _resume_collector(self, name: str, collector: PerfCollector) -> None:
        """A new collector (service start, reconnection) goes on after the samples already stored."""
        with self.store.read_session() as session:
            newest = newest_sample_times(session, name)
        taken = collector.resume({entity: datetime.fromtimestamp(ts, UTC) for entity, ts in newest.items()})
        if taken:
            log.info("vCenter %s: collection goes on after the stored samples of %d entities", name, taken)

    def _chunk_stored(self, name: str, link: VCenterLink) -> Callable[[StoredChunk], None]:
        """What the service learns from each stored chunk: newest samples, vCenter's time, counters."""

        def note(chunk: StoredChunk) -> None:
            with self._lock:
                keep_newer(self.latest_disks[name], chunk.latest_disk)
                keep_newer(self.latest_hosts[name], chunk.latest_host)
            if chunk.latest is not None and (
                link.last_collection is None or chunk.latest > link.last_collection
            ):
                link.last_collection = chunk.latest
            self.generations.bump(SAMPLES)  # after everything the views read of this chunk changed
            self.counters.inc("basil_samples_total", chunk.disk_samples, vcenter=name, kind="disk")
            self.counters.inc("basil_samples_total", chunk.host_samples, vcenter=name, kind="host_datastore")
            self.counters.inc("basil_samples_incomplete_total", chunk.incomplete, vcenter=name)

        return note

    def _job_inventory(self) -> dict[str, Any]:
        """Read every vCenter's inventory again in full (the change feed alone can miss a change:
        datastores moved into a datastore cluster were not seen) with its tags; keep a snapshot when
        it changed; report pods that overlap."""
        out: dict[str, Any] = {}
        problems: list[str] = []
        for name, link in self.links.items():
            try:
                inv = link.reread()
            except BasilError as err:
                link.job_failed("inventory", err.message)
                problems.append(f"{name}: {err.message}")
                out[name] = {"error": err.message}
                continue
            link.job_succeeded("inventory")
            if self._saved_inventory.get(name) != inv.version:
                with self.store.session() as session:
                    version = save_inventory(session, name, inv.to_dict(), inv.fetched_at)
                self._saved_inventory[name] = inv.version
                out[name] = {"saved_version": version, "vms": len(inv.vms), "datastores": len(inv.datastores)}
            else:
                out[name] = {"unchanged": True}
            if inv.tags_error:
                out[name]["tags_error"] = inv.tags_error
        overlaps = overlapping_pods(self.resolved_pods(refresh=False))
        with self._lock:
            self.pod_overlaps = overlaps
        if problems and len(problems) == len(self.links):
            raise BasilError("; ".join(problems))
        details: dict[str, Any] = {"vcenters": out, "message": "; ".join(problems + overlaps)}
        if overlaps:
            details["overlaps"] = overlaps
        return details

    def _job_model(self) -> dict[str, Any]:
        out: dict[str, Any] = {"vcenters": []}
        fitted = 0
        problems: list[str] = []
        for name, link in self.links.items():
            now_ts = self.sample_now(name)
            if now_ts is None:
                out["vcenters"].append({"vcenter": name, "skipped": "no samples yet"})
                continue
            # Relocations first: a relocation seen finished then has its move in the inventory read after.
            try:
                relocations = link.call(recent_relocations)
            except BasilError as err:  # the fit goes on, without leaving copies out
                log.warning("recent relocations of %s: %s", name, err.message)
                relocations = []
            try:
                inventory = link.inventory()
            except BasilError as err:
                link.job_failed("model", err.message)
                problems.append(f"{name}: {err.message}")
                continue
            link.job_succeeded("model")
            fitted += 1
            inputs = device_inputs(
                self.store,
                name,
                inventory,
                relocations=relocations,
                devices=functools.partial(self.config.device_of, name),
                now_ts=now_ts,
            )
            outcome = run_modelling(
                self.store,
                name,
                list(inventory.datastores),
                now_ts=now_ts,
                wparams=self.workload_params,
                dparams=self.device_params,
                placement=inputs.placement,
                copies=inputs.copies,
                priors=inputs.priors,
            )
            out["vcenters"].append(outcome.summary())
        # The pods' normalized loads after this fit, kept with the run: the history the API charts.
        states = {}
        for pod in self.resolved_pods(refresh=False):
            try:
                states[pod.name] = views.pod_state(self, pod)
            except BasilError as err:
                log.debug("pod %s state: %s", pod.name, err.message)
        with self._lock:
            self.pod_states.update(states)
        out["pods"] = states
        out["predictions"] = check_predictions(self)  # the models of an hour after each plan are these
        first = self._first_rounds()
        if first:
            out["first_rounds"] = first
        if problems and not fitted:
            raise BasilError("; ".join(problems))
        if not fitted:
            out["skipped"] = True
            out["message"] = "no samples yet: nothing to fit"
        elif problems:
            out["message"] = "; ".join(problems)
        return out

    def _first_rounds(self) -> dict[str, Any]:
        """Each pod's first round as soon as every disk of it has a workload model, rather than a whole
        recommend period after the service started; the recommend job then runs one period after it
        (the same budget per period). Only under the periodic scheduler, once per pod and process, and
        not for a pod with an open recommendation stored (docs/slo.md "Evaluation")."""
        scheduler = self.scheduler
        if scheduler is None or not self.periodic:
            return {}
        out: dict[str, Any] = {}
        for pod in self.resolved_pods(refresh=False):
            with self._round_lock:
                out.update(self._first_round(scheduler, pod))
        return out

    def _first_round(self, scheduler: BackgroundScheduler, pod: ResolvedPod) -> dict[str, Any]:
        """The first round of *pod* if it is due (:meth:`_first_rounds`; with ``_round_lock`` held)."""
        out: dict[str, Any] = {}
        with self._lock:
            if pod.name in self.rounds or pod.name in self._first_round_done:
                return out
            self._first_round_done.add(pod.name)
        try:
            ps = self.pod_snapshot(pod)
            with self.store.read_session() as session:
                known = bool(open_recommendations(session, pod.name))
            if known:
                return out  # a round of an earlier process is there: the schedule goes on
            if ps.unmodelled_disks or not ps.snapshot.disks:
                with self._lock:
                    self._first_round_done.discard(pod.name)  # not ready: the next fit tries again
                return out
            r = self._recommend(pod)
        except BasilError as err:
            return {pod.name: {"error": err.message}}
        if self.stopping.is_set():  # the scheduler is stopping: its next run is set at the next start
            return {pod.name: {"moves": len(r.plan.moves), "recommendation": r.round_id}}
        job = scheduler.get_job("recommend", jobstore=job_registry.SCHEDULED)
        if job is not None:
            job.modify(next_run_time=datetime.now(UTC) + timedelta(seconds=self.config.schedules.recommend_s))
        return {pod.name: {"moves": len(r.plan.moves), "recommendation": r.round_id}}

    def _job_recommend(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        problems: list[str] = []
        pods = self.resolved_pods()
        if not pods:
            why = (
                "no pod is configured" if not self.config.pods else "no pod could be resolved (vCenter down?)"
            )
            return {"skipped": True, "message": f"{why}: nothing to recommend", "pods": {}}
        for pod in pods:
            try:  # one pod's problem stays in that pod's answer
                with self._round_lock:
                    r = self._recommend(pod)
            except BasilError as err:
                out[pod.name] = {"error": err.message}
                problems.append(err.message)
                continue
            out[pod.name] = {
                "moves": len(r.plan.moves),
                "recommendation": r.round_id,
                "stop": r.summary["stop"],
            }
        if problems and len(problems) == len(out):
            raise BasilError("; ".join(problems))
        return {"pods": out, "message": "; ".join(problems)}

    def _job_srp(self) -> dict[str, Any]:
        docs = self.pool_documents()
        with self._lock:
            disks = {k: dict(v) for k, v in self.latest_disks.items()}
            hosts = {k: dict(v) for k, v in self.latest_hosts.items()}
        outcome = self.srp.run(docs, self.links, disks, hosts)
        # SIOC shares from the SLO groups, within what is left of the run's change budget.
        left = int(self.config.srp.max_changes_per_run) - outcome.changes - outcome.failed
        shares = apply_group_shares(self.resolved_pods(), self.links, docs, left)
        outcome.changes += shares.issued
        outcome.failed += shares.failed
        outcome.notes += shares.notes
        self.counters.inc("basil_srp_changes_total", outcome.changes, outcome="succeeded")
        self.counters.inc("basil_srp_changes_total", outcome.failed, outcome="failed")
        if outcome.changes or outcome.failed or outcome.sioc:
            with audited(self.store, SYSTEM, "srp.apply", "pools") as note:
                note.details = outcome.summary()
                note.message = f"{outcome.changes} settings issued, {outcome.failed} failed"
        return outcome.summary()

    def _job_maintenance(self) -> dict[str, Any]:
        resumed = self._resume_stalled()  # no plan stays running with nothing applying it
        with self.store.session() as session:
            latest = latest_sample_time(session)
            if latest is None:
                return {"skipped": True, "message": "no samples yet", "resumed_plans": resumed}
            rolled = roll_up(session, latest)
            deleted = apply_retention(session, self.config.retention, datetime.now(UTC), latest)
        return {"rollups": rolled.rows, "deleted": deleted, "resumed_plans": resumed}

    def _job_rebalance(self) -> dict[str, Any]:
        rb = self.config.schedules.rebalance
        now = self.clock()
        window = rb.open_window(now)
        if window is None:
            return {"skipped": True, "message": f"the rebalance window is closed at {now.isoformat()}"}
        return self.rebalance_window(window[1])

    def rebalance_window(self, deadline: datetime) -> dict[str, Any]:
        """Apply, pod by pod, the latest approved plan (or, in automatic pods, a fresh one), starting no
        move after *deadline* and within the window's budget of moves and GB (over all pods)."""
        rb = self.config.schedules.rebalance
        budget = Budget(int(rb.max_moves), float(rb.max_gb))
        out: dict[str, Any] = {"deadline": deadline.isoformat(), "pods": {}}
        for pod in self.resolved_pods():
            with self.store.read_session() as session:
                approved = plan_store.list_plans(session, pod=pod.name, states=["approved"], limit=1)
            plan_id = approved[0].id if approved else None
            if plan_id is None and pod.config.mode == "automatic":
                with self._round_lock:
                    r = self._recommend(pod)
                if r.round_id is not None:
                    try:
                        with self.store.read_session() as session:
                            ensure_valid(self, pod, round_recommendations(session, r.round_id))
                        plan = create_plan_from_round(
                            self.store,
                            r.round_id,
                            SYSTEM,
                            on_move_failure=pod.config.balance.on_move_failure,
                            source="window",
                        )
                    except ConflictError as err:  # a stale round (a plan moving the pod's disks)
                        out["pods"][pod.name] = f"nothing to apply: {err.message}"
                        continue
                    with self.store.session() as session:
                        plan_store.approve_plan(session, plan.id, SYSTEM.name, now=self.clock())
                    plan_id = plan.id
            if plan_id is None:
                out["pods"][pod.name] = "nothing to apply"
                continue
            try:
                ended = self._execute(plan_id, deadline=deadline, budget=budget)
            except BasilError as err:  # this pod's plan stopped; the window goes on with the others
                log.error("plan %d: %s", plan_id, err.message)
                self._end_abandoned(plan_id, err.message)
                out["pods"][pod.name] = {"plan": plan_id, "error": err.message}
                continue
            out["pods"][pod.name] = {"plan": plan_id, "state": ended.state, "message": ended.message}
        out["budget_left"] = {"moves": budget.moves, "gb": budget.gb}
        return out

    # --- plans ------------------------------------------------------------------------------

    def _execute(
        self, plan_id: int, deadline: datetime | None = None, budget: Budget | None = None
    ) -> plan_store.Plan:
        with self._lock:
            if plan_id in self._executing:
                raise ConflictError(f"plan {plan_id} is being applied already")
            self._executing.add(plan_id)
        try:
            with self._plan_slots:
                # The newest sample's time, not vCenter's clock: reading the clock would wait out a hung
                # vCenter once more before the executor (which judges a hang itself) even starts.
                started = self.sample_now(self._plan_vcenter(plan_id))
                ended = self.executor.run(plan_id, deadline=deadline, budget=budget)
        finally:
            with self._lock:
                self._executing.discard(plan_id)
        try:
            record_prediction(self, ended, started)  # checked against the measurements an hour later
        except BasilError as err:
            log.warning("plan %d: no prediction recorded: %s", plan_id, err.message)
        return ended

    def _plan_vcenter(self, plan_id: int) -> str:
        with self.store.read_session() as session:
            return plan_store.get_plan(session, plan_id).vcenter

    def _resume_stalled(self) -> list[int]:
        """Plans recorded running that nothing in this process applies (their resumption failed, say
        vCenter was unreachable at the start) are handed to the executor again."""
        if self.stopping.is_set():
            return []
        with self.store.read_session() as session:
            ids = [p.id for p in plan_store.resumable_plans(session)]
        with self._lock:
            stalled = [
                i
                for i in ids
                if i not in self._executing and ((fut := self._active_plans.get(i)) is None or fut.done())
            ]
        for plan_id in stalled:
            log.info("plan %d is running and nothing applies it; resuming it", plan_id)
            self._submit(plan_id)
        return stalled

    def _submit(self, plan_id: int) -> None:
        with self._lock:
            running = self._active_plans.get(plan_id)
            if running is not None and not running.done():
                return
            self._active_plans[plan_id] = self._runner.submit(self._run_safely, plan_id)

    def _run_safely(self, plan_id: int) -> None:
        try:
            self._execute(plan_id)
        except BasilError as err:
            log.error("plan %d: %s", plan_id, err.message)
            self._end_abandoned(plan_id, err.message)
        except Exception as err:
            log.exception("plan %d: the executor raised", plan_id)
            self._end_abandoned(plan_id, f"{type(err).__name__}: {err}")

    def _end_abandoned(self, plan_id: int, why: str) -> None:
        """A plan its executor gave up on does not stay running: with no move running it ends (cancelled
        if asked, else failed); a move still running is left for the next start to check in vCenter."""
        with self._lock:
            if self.stopping.is_set() or plan_id in self._executing:
                return
        try:
            with self.store.session() as session:
                plan = plan_store.get_plan(session, plan_id)
                if plan.state != "running" or any(m.state == "running" for m in plan.moves):
                    return
                state: plan_store.PlanState = "cancelled" if plan.cancel_requested else "failed"
                plan_store.finish_plan(
                    session, plan_id, state, f"the executor stopped: {why}", now=self.clock()
                )
        except BasilError as err:
            log.error("plan %d could not be ended: %s", plan_id, err.message)

    def resume_plans(self) -> list[int]:
        """Hand every plan left running (by a crash or a stop) back to the executor."""
        with self.store.read_session() as session:
            ids = [p.id for p in plan_store.resumable_plans(session)]
        for plan_id in ids:
            log.info("plan %d was running when the service stopped; resuming it", plan_id)
            self._submit(plan_id)
        return ids

    def wait_for_plan(self, plan_id: int, timeout_s: float | None = None) -> dict[str, Any]:
        """Block until this process has finished applying the plan (for tests, scripts and the CLI)."""
        with self._lock:
            fut = self._active_plans.get(plan_id)
        if fut is not None:
            fut.result(timeout=timeout_s)
        return self.plan(plan_id)

    def create_plan(
        self,
        actor: Actor,
        recommendation_id: str | int | None = None,
        pod: str | None = None,
        moves: list[dict[str, Any]] | None = None,
    ) -> dict[str, Any]:
        target = f"recommendation {recommendation_id}" if recommendation_id is not None else f"pod {pod}"
        with audited(self.store, actor, "plan.create", target) as note:
            if recommendation_id is not None:
                if moves is not None:
                    raise ValidationError(
                        [Problem("moves", "give recommendation_id or pod and moves, not both")]
                    )
                round_id = resolve_round_id(self.store, recommendation_id)
                with self.store.read_session() as session:
                    from basil.store.recommendations import open_recommendations  # noqa: PLC0415

                    recs = [r for r in open_recommendations(session) if r.round_id == round_id]
                pod_name = recs[0].pod if recs else ""
                if recs:
                    ensure_valid(self, self.resolved_pod(pod_name), recs)
                failure = next(
                    (p.balance.on_move_failure for p in self.config.pods if p.name == pod_name), "continue"
                )
                plan = create_plan_from_round(self.store, round_id, actor, on_move_failure=failure)
            else:
                problems = []
                if not pod:
                    problems.append(Problem("pod", "must be set (or give recommendation_id)"))
                if moves is None:
                    problems.append(Problem("moves", "must be set (or give recommendation_id)"))
                raise_if_problems(problems, "plan")
                assert pod is not None
                assert moves is not None
                resolved = self.resolved_pod(pod)  # the inventory polled once, for both
                specs = moves_from_request(moves, resolved, self.inventory(resolved.vcenter, False), self.ids)
                with self.store.session() as session:
                    plan = plan_store.create_plan(
                        session,
                        resolved.name,
                        resolved.vcenter,
                        specs,
                        created_by=actor.name,
                        on_move_failure=resolved.config.balance.on_move_failure,
                        message="moves given by hand",
                    )
            note.details = {"plan": plan.id, "moves": len(plan.moves)}
            note.message = f"plan {plan.id} with {len(plan.moves)} moves"
            return views.plan_dict(self, plan)

    def approve_plan(self, plan_id: int, actor: Actor) -> dict[str, Any]:
        with audited(self.store, actor, "plan.approve", f"plan {plan_id}"), self.store.session() as session:
            plan = plan_store.approve_plan(session, plan_id, actor.name, now=self.clock())
        return views.plan_dict(self, plan)

    def apply_plan(self, plan_id: int, actor: Actor) -> dict[str, Any]:
        """Approve if proposed, then run it now (in the background); returns the plan as it starts."""
        with audited(self.store, actor, "plan.apply", f"plan {plan_id}"):
            with self.store.session() as session:
                plan = plan_store.get_plan(session, plan_id)
                if plan.state == "proposed":
                    plan = plan_store.approve_plan(session, plan_id, actor.name, now=self.clock())
                if plan.state != "approved":
                    raise ConflictError(
                        f"plan {plan_id} is {plan.state}; only a proposed or approved plan is applied"
                    )
                plan = plan_store.start_plan(session, plan_id, now=self.clock())
            self._submit(plan_id)
        return views.plan_dict(self, plan)

    def cancel_plan(self, plan_id: int, actor: Actor) -> dict[str, Any]:
        with audited(self.store, actor, "plan.cancel", f"plan {plan_id}"), self.store.session() as session:
            plan = plan_store.cancel_plan(session, plan_id, actor.name, now=self.clock())
        return views.plan_dict(self, plan)

    # --- recommendations and placement -----------------------------------------------------

    def slo_inputs(self, pod: ResolvedPod) -> SloInputs:
        """What the SLO goal's model reads beyond the pod's snapshot (docs/slo.md)."""
        with self.store.read_session() as session:
            pools = [tree.document for tree in srp_pools.list_pools(session)]
        return SloInputs(
            self.disk_models(pod.vcenter),
            self.datastore_models(pod.vcenter),
            functools.partial(self.config.device_of, pod.vcenter),
            disk_read_latency(self.newest_disk_samples(pod.vcenter)),
            pools,
        )

    def _recommend(self, pod: ResolvedPod) -> Round:
        ps = self.pod_snapshot(pod)
        with self._lock:
            hosts = list(self.latest_hosts.get(pod.vcenter, {}).values())
        inventory = self.inventory(pod.vcenter, refresh=False)
        with self.store.read_session() as session:
            running = [
                p.id for p in plan_store.list_plans(session, pod=pod.name, states=["running"], limit=10)
            ]
        basis = round_basis(
            ps,
            pod,
            running_plans=running,
            datastore_models=self.datastore_models(pod.vcenter),
            disk_models=self.disk_models(pod.vcenter),
        )
        slo = self.slo_inputs(pod) if pod.config.goal == GOAL_SLO else None
        effect = whatif.move_effects(
            vcenter=pod.vcenter,
            inventory=inventory,
            disk_samples=self.newest_disk_samples(pod.vcenter),
            host_samples=self.newest_host_samples(pod.vcenter),
            models=self.datastore_models(pod.vcenter),
            disk_keys=ps.disk_keys,
            disk_id=lambda vm, instance: self.ids.disk_id(pod.vcenter, vm, instance),
        )
        r = run_round(
            self.store,
            pod,
            inventory,
            ps,
            self.clock(),
            host_samples=hosts,
            basis=basis,
            slo=slo,
            move_effect=effect,
        )
        record_slo_damage(self.counters, r)
        with self._lock:
            self.rounds[pod.name] = r
        self.generations.bump(ROUNDS)
        return r

    def recommend_now(self, pod: str, actor: Actor) -> dict[str, Any]:
        with audited(self.store, actor, "recommendation.create", f"pod {pod}") as note, self._round_lock:
            r = self._recommend(self.resolved_pod(pod))
            note.details = {"moves": len(r.plan.moves), "recommendation": r.round_id}
        return views.round_dict(self, r)

    def placement(self, request: Mapping[str, Any], actor: Actor) -> dict[str, Any]:
        """Rank a pod's datastores for a new disk (BASIL §5 initial placement); nothing is changed."""
        with audited(self.store, actor, "placement", f"pod {request.get('pod')}"):
            problems: list[Problem] = []
            allowed = {"pod", "size_gb", "oio", "io_size_kb", "read_pct", "random_pct", "vm", "hosts"}
            problems += [Problem(str(k), "unknown field") for k in sorted(set(request) - allowed)]
            numbers: dict[str, float] = {}
            for key in ("size_gb", "oio", "io_size_kb", "read_pct", "random_pct"):
                value = request.get(key)
                if isinstance(value, bool) or not isinstance(value, int | float):
                    problems.append(Problem(key, "must be a number"))
                else:
                    numbers[key] = float(value)
            pod_name = request.get("pod")
            if not isinstance(pod_name, str) or not pod_name:
                problems.append(Problem("pod", "must name a pod"))
            hosts = request.get("hosts") or []
            if not isinstance(hosts, list) or not all(isinstance(h, str) for h in hosts):
                problems.append(Problem("hosts", "must be a list of host ids"))
            vm = request.get("vm")
            if vm is not None and not isinstance(vm, str):
                problems.append(Problem("vm", "must be a VM id"))
            raise_if_problems(problems, "placement request")
            assert isinstance(pod_name, str)
            pod = self.resolved_pod(pod_name, refresh=False)
            ps = self.pod_snapshot(pod)
            req = PlacementRequest(
                size_gb=numbers["size_gb"],
                workload=WorkloadParams(
                    numbers["oio"], numbers["io_size_kb"], numbers["read_pct"], numbers["random_pct"]
                ),
                vm=self.ids.parse_object(vm, "VM")[1] if vm else None,
                hosts=frozenset(self.ids.parse_object(h, "host")[1] for h in hosts),
                pod=pod.name,
            )
            raise_if_problems(req.validate(ps.snapshot), "placement request")
            result = place(ps.snapshot, req, ps.params)
            return views.placement_dict(self, pod, placement_to_dict(result))

    # --- SRP pools --------------------------------------------------------------------------

    def _inventories(self) -> dict[str, Inventory]:
        out: dict[str, Inventory] = {}
        for name, link in self.links.items():
            try:
                out[name] = link.inventory()
            except BasilError as err:
                log.debug("vCenter %s: %s", name, err.message)
        return out

    def _last_inventories(self) -> dict[str, Inventory]:
        return {name: inv for name, link in self.links.items() if (inv := link.last_inventory) is not None}

    def _parse_pool(self, doc: Any, name: str | None = None) -> tuple[PoolDocument | None, list[Problem]]:
        with self.store.read_session() as session:
            trees = srp_pools.list_pools(session)
        taken = {(t.document.get("vcenter", ""), t.document.get("datastore_moid", "")): t.name for t in trees}
        return parse_pool_document(
            doc,
            self._inventories(),
            default_vcenter=self.ids.vcenters[0] if self.ids.vcenters else "",
            reservable_iops=self.config.srp.reservable_iops,
            taken=taken,
            name=name,
        )

    def validate_pool(self, doc: Any) -> list[Problem]:
        return self._parse_pool(doc)[1]

    def _stored(self, parsed: PoolDocument) -> dict[str, Any]:
        return {**parsed.document, "datastore_moid": parsed.datastore}

    def create_pool(self, doc: Any, actor: Actor) -> dict[str, Any]:
        name = doc.get("name") if isinstance(doc, dict) else None
        with audited(self.store, actor, "pool.create", f"pool {name}"):
            parsed, problems = self._parse_pool(doc)
            raise_if_problems(problems, "pool tree")
            assert parsed is not None
            with self.store.session() as session:
                tree = srp_pools.put_pools(
                    session, parsed.name, self._stored(parsed), expected_version=0, by=actor.name
                )
        self.srp.forget(parsed.name)
        return views.pool_dict(self, tree)

    def replace_pool(self, name: str, doc: Any, version: int, actor: Actor) -> dict[str, Any]:
        with audited(self.store, actor, "pool.replace", f"pool {name}"):
            with self.store.read_session() as session:
                srp_pools.get_pools(session, name)  # 404 before 400 for an unknown tree
            parsed, problems = self._parse_pool(doc, name)
            raise_if_problems(problems, "pool tree")
            assert parsed is not None
            with self.store.session() as session:
                tree = srp_pools.put_pools(
                    session, name, self._stored(parsed), expected_version=version, by=actor.name
                )
        self.srp.forget(name)
        return views.pool_dict(self, tree)

    def delete_pool(self, name: str, actor: Actor, version: int | None = None) -> None:
        with audited(self.store, actor, "pool.delete", f"pool {name}"), self.store.session() as session:
            current = srp_pools.get_pools(session, name)
            srp_pools.delete_pools(
                session, name, expected_version=current.version if version is None else version, by=actor.name
            )
        self.srp.forget(name)

    def pool_documents(self, refresh: bool = True) -> list[PoolDocument]:
        """Every stored tree, validated against the current inventory (a tree that no longer is valid,
        say its VM was deleted, is left out and logged). ``refresh=False``: against the inventories as
        last polled, cached until they, the trees or the configuration change (for the read models)."""
        if refresh:
            return self._pool_documents(self._inventories())
        inventories = self._last_inventories()
        basis = Basis(
            tuple(inventories.get(name) for name in self.links),
            self.store.generation(*SRP_POOLS) + self.generations.get(CONFIG),
        )
        return self.cache.get(("pool_documents",), basis, lambda: self._pool_documents(inventories))

    def _pool_documents(self, inventories: Mapping[str, Inventory]) -> list[PoolDocument]:
        with self.store.read_session() as session:
            trees = srp_pools.list_pools(session)
        docs: list[PoolDocument] = []
        for t in trees:
            parsed, problems = parse_pool_document(
                {k: v for k, v in t.document.items() if k != "datastore_moid"},
                inventories,
                default_vcenter=t.document.get("vcenter", ""),
                reservable_iops=self.config.srp.reservable_iops,
                taken={},
                name=t.name,
            )
            if parsed is None:
                log.warning("pool tree %s is not valid now: %s", t.name, "; ".join(map(str, problems)))
                continue
            docs.append(parsed)
        return docs

    # --- schedules and jobs -----------------------------------------------------------------

    def set_rebalance_window(self, doc: Mapping[str, Any], actor: Actor) -> dict[str, Any]:
        """Change the rebalance window (cron, timezone, duration, max_moves, max_gb, enabled); validated,
        every problem at once. Kept in the store, so it outlives a restart (see
        :mod:`basil.app.rebalance_window`); the configuration file is not rewritten."""
        # One change at a time: two admins' changes merged over the same old value would lose one.
        with self._window_lock, audited(self.store, actor, "schedules.rebalance", "rebalance window") as note:
            updated = changed_window(self.config.schedules.rebalance, doc)
            kept = {**(self.rebalance_override.value if self.rebalance_override else {}), **doc}
            with self.store.session() as session:
                self.rebalance_override = put_override(
                    session, OVERRIDE_KEY, kept, by=actor.name, now=self.clock()
                )
            self._use_rebalance_window(updated)
            note.details = {k: str(v) for k, v in doc.items()}
        return views.schedules(self)

    def reset_rebalance_window(self, actor: Actor) -> dict[str, Any]:
        """Forget the window's changes made through the API: the configuration file's window again."""
        with (
            self._window_lock,
            audited(self.store, actor, "schedules.rebalance.reset", "rebalance window") as note,
        ):
            with self.store.session() as session:
                removed = delete_override(session, OVERRIDE_KEY)
            self.rebalance_override = None
            self._use_rebalance_window(self._file_rebalance)
            note.message = "the configuration's window" + ("" if removed else " (it was in force already)")
        return views.schedules(self)

    def _use_rebalance_window(self, window: RebalanceWindowConfig) -> None:
        schedules = dataclasses.replace(self.config.schedules, rebalance=window)
        self.config = dataclasses.replace(self.config, schedules=schedules)
        self.generations.bump(CONFIG)
        if self.scheduler is not None and self.periodic:
            job_registry.register_jobs(self.scheduler, self.config)

    def _load_rebalance_override(self) -> None:
        """Apply the window's change kept in the store over the file's (an invalid one is logged and left)."""
        with self.store.read_session() as session:
            kept = get_override(session, OVERRIDE_KEY)
        if kept is None:
            return
        try:
            window = changed_window(self._file_rebalance, kept.value)
        except ValidationError as err:
            log.warning("the rebalance window kept in the store is not valid now, using the file's: %s", err)
            return
        self.rebalance_override = kept
        self._use_rebalance_window(window)
        log.info("rebalance window: the change made by %s at %s applies", kept.updated_by, kept.updated_at)

    # --- reads (see basil.app.views) --------------------------------------------------------

    def health(self) -> dict[str, Any]:
        return views.health(self)

    def vcenters(self) -> list[dict[str, Any]]:
        return views.vcenters(self)

    def vcenter_link(self, server: str) -> VCenterLink:
        """The link of a vCenter by its configured name or server host (for clone-ticket validation)."""
        for link in self.links.values():
            host = (
                link.config.server.rsplit(":", 1)[0]
                if link.config.server.count(":") == 1
                else link.config.server
            )
            if server in (link.name, link.config.server, host):
                return link
        raise NotFoundError(f"no configured vCenter {server!r}")

    def pods(self) -> list[dict[str, Any]]:
        return views.pods(self)

    def pod(self, name: str) -> dict[str, Any]:
        return views.pod(self, name)

    def pod_history(self, name: str, hours: float = 24) -> dict[str, Any]:
        return views.pod_history(self, name, hours)

    def datastore(self, ident: str) -> dict[str, Any]:
        return views.datastore(self, ident)

    def datastore_points(self, ident: str, hours: float = 24) -> list[dict[str, Any]]:
        return views.datastore_points(self, ident, hours)

    def datastore_load(self, ident: str, hours: float = 24) -> list[dict[str, Any]]:
        return views.datastore_load(self, ident, hours)

    def vm(self, ident: str) -> dict[str, Any]:
        return views.vm(self, ident)

    def inventory_list(self, kind: str, args: Mapping[str, Any]) -> dict[str, Any]:
        """A page of datastores, VMs or disks (:mod:`basil.app.lists`)."""
        return lists.listing(self, kind, args)

    def disk_model(self, ident: str, hours: float = 24) -> dict[str, Any]:
        return views.disk_model(self, ident, hours)

    def latest_recommendation(self, pod: str) -> dict[str, Any] | None:
        return views.latest_recommendation(self, pod)

    def slo_history(self, pod: str, since: str | None = None, until: str | None = None) -> dict[str, Any]:
        """The pod's SLO series (:mod:`basil.app.slo_history`)."""
        return pod_slo_history(self, pod, since, until)

    def predictions(self, pod: str) -> list[dict[str, Any]]:
        """Each applied plan's prediction for the pod against what was measured an hour later."""
        return views.predictions(self, pod)

    def plans(self, state: str | None = None, pod: str | None = None) -> list[dict[str, Any]]:
        return views.plans(self, state, pod)

    def plan(self, plan_id: int) -> dict[str, Any]:
        with self.store.read_session() as session:
            return views.plan_dict(self, plan_store.get_plan(session, plan_id))

    def pools(self) -> list[dict[str, Any]]:
        with self.store.read_session() as session:
            return [views.pool_dict(self, t) for t in srp_pools.list_pools(session)]

    def pool(self, name: str) -> dict[str, Any]:
        with self.store.read_session() as session:
            return views.pool_dict(self, srp_pools.get_pools(session, name))

    def entitlements(self, name: str) -> dict[str, Any]:
        return views.entitlements(self, name)

    def jobs(self) -> list[dict[str, Any]]:
        return views.jobs(self)

    def schedules(self) -> dict[str, Any]:
        return views.schedules(self)

    def audit(self, limit: int = 100, before: datetime | None = None) -> list[dict[str, Any]]:
        return views.audit(self, limit, before)

    def metrics(self) -> str:
        """Prometheus text exposition of the service's counters and the plans' states."""
        return views.metrics_text(self)
