"""One live link per configured vCenter: its session, inventory watcher, performance collector and actuator.

The link is the only object of the application layer holding adapter objects; everything else asks
it for the current :class:`~basil.vcenter.types.Inventory` or hands it work. A link that cannot
connect stays down and says why; the next job that needs it tries again, no sooner than an
exponential, capped back-off allows (a wrong password must not lock the service account under SSO's
lockout policy). Each job that fails on this vCenter is kept as a :class:`JobProblem` until it
succeeds again: that is what ``/health`` and ``/vcenters`` report.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TypeVar

from basil.config import VCenterConfig, vcenter_password
from basil.errors import BasilError, VCenterError
from basil.vcenter.actuator import Actuator, ActuatorParams
from basil.vcenter.connection import ConnectionParams, TLSOptions, VCenterConnection
from basil.vcenter.errors import VCenterAuthenticationError, VCenterConnectionError
from basil.vcenter.inventory import InventoryWatcher
from basil.vcenter.perf import PerfCollector
from basil.vcenter.types import Inventory

log = logging.getLogger(__name__)

T = TypeVar("T")


def connection_params(vc: VCenterConfig, **overrides: object) -> ConnectionParams:
    """The adapter's connection parameters for a configured vCenter (the password read from env or file)."""
    tls = TLSOptions(
        verify=vc.tls.verify,
        ca_bundle=vc.tls.ca_bundle or None,
        thumbprint=vc.tls.thumbprint or None,
    )
    fields: dict[str, object] = {
        "server": vc.server,
        "user": vc.user,
        "password": vcenter_password(vc),
        "tls": tls,
        "timeout_s": vc.call_timeout_s,
    }
    fields.update(overrides)
    return ConnectionParams(**fields)  # type: ignore[arg-type]


@dataclass(frozen=True)
class Backoff:
    """Waits between failed connection attempts: *first_s*, doubling after each failure, at most *cap_s*.

    With the defaults a wrong password is tried at 0, 30, 90, 210 s and then every 15 minutes: fewer
    than SSO's default lockout (5 failures within 180 s).
    """

    first_s: float = 30.0
    cap_s: float = 900.0

    def delay(self, failures: int) -> timedelta:
        """The wait after the *failures*-th failure in a row (1 = the first)."""
        return timedelta(seconds=min(self.cap_s, self.first_s * 2 ** max(0, failures - 1)))


@dataclass(frozen=True)
class JobProblem:
    """What went wrong on one vCenter in one job (or in connecting, or reading tags), and when."""

    job: str  # connect, collect, inventory, tags, model, ...
    error: str
    at: datetime

    def to_dict(self) -> dict[str, str]:
        return {"job": self.job, "error": self.error, "at": self.at.isoformat()}


def _utc_now() -> datetime:
    return datetime.now(UTC)


class VCenterLink:
    """The service's connection to one vCenter; thread-safe (jobs run in parallel threads)."""

    def __init__(
        self,
        config: VCenterConfig,
        params_factory: Callable[[VCenterConfig], ConnectionParams] = connection_params,
        with_tags: bool = True,
        *,
        backoff: Backoff | None = None,
        clock: Callable[[], datetime] = _utc_now,
    ) -> None:
        self.config = config
        self.name = config.name
        self._params_factory = params_factory
        self._with_tags = with_tags and config.tags
        self.backoff = backoff or Backoff()
        self._clock = clock
        self._lock = threading.RLock()
        self._problems_lock = threading.Lock()
        self.conn: VCenterConnection | None = None
        self._watcher: InventoryWatcher | None = None
        self._collector: PerfCollector | None = None
        self.problems: dict[str, JobProblem] = {}  # job -> its last failure, until it succeeds
        self.last_collection: datetime | None = None  # vCenter time of the newest sample collected
        self.instance_uuid: str | None = None  # vCenter's instance UUID, known once connected
        self.errors = 0  # vCenter errors seen (for the metrics)
        self.connect_failures = 0  # failed connection attempts in a row
        self.next_attempt: datetime | None = None  # no connection attempt before this
        self.attempts = 0  # connection attempts made (each logs in once)

    @property
    def tags_enabled(self) -> bool:
        return self._with_tags

    @property
    def connected(self) -> bool:
        return self.conn is not None and self._watcher is not None

    @property
    def last_error(self) -> str:
        """The newest problem still standing ("" once every failed job has succeeded again)."""
        newest = self._newest_problem()
        return newest.error if newest is not None else ""

    @property
    def last_error_at(self) -> datetime | None:
        newest = self._newest_problem()
        return newest.at if newest is not None else None

    def _newest_problem(self) -> JobProblem | None:
        with self._problems_lock:
            return max(self.problems.values(), key=lambda p: p.at, default=None)

    def job_failed(self, job: str, message: str) -> None:
        """Record that *job* failed on this vCenter (kept until :meth:`job_succeeded`)."""
        with self._problems_lock:
            self.problems[job] = JobProblem(job, message, self._clock())

    def job_succeeded(self, job: str) -> None:
        with self._problems_lock:
            self.problems.pop(job, None)

    def problem_list(self) -> list[JobProblem]:
        with self._problems_lock:
            return sorted(self.problems.values(), key=lambda p: p.job)

    def connect(self) -> None:
        """Log in and take the first inventory; raises the adapter's error when vCenter refuses.

        After a failure the next attempt waits (:class:`Backoff`); an attempt asked for before then
        raises at once, naming the time of the next one, and does not reach vCenter.
        """
        with self._lock:
            if self.connected:
                return
            now = self._clock()
            if self.next_attempt is not None and now < self.next_attempt:
                raise VCenterConnectionError(
                    f"vCenter {self.name} is not tried again before {self.next_attempt.isoformat()} "
                    f"({self.connect_failures} failed attempt(s) in a row; last: {self._connect_error()})"
                )
            self.attempts += 1
            conn = VCenterConnection(self._params_factory(self.config))
            try:
                conn.connect()
                watcher = InventoryWatcher(conn, with_tags=self._with_tags)
                watcher.start()
            except BasilError as err:
                conn.close()
                self._connect_failed(err)
                raise
            self.conn, self._watcher = conn, watcher
            self.instance_uuid = conn.instance_uuid or None
            self._collector = PerfCollector(conn)
            self._read_counter_list(self._collector)
            self.connect_failures = 0
            self.next_attempt = None
            self.job_succeeded("connect")
            self._note_tags(watcher)
            log.info("vCenter %s: connected", self.name)

    def _read_counter_list(self, collector: PerfCollector) -> None:
        """Read vCenter's performance counter list now, on connecting, rather than in the first collection:
        in ``basil serve`` that collection runs beside the API (reading the list through pyVmomi takes
        0.1-0.2 s of CPU alone, most of a second in a busy process). A failure is left to that collection."""
        try:
            collector.counter_ids()
        except BasilError as err:
            log.info("vCenter %s: performance counters not read on connecting: %s", self.name, err.message)

    def _connect_error(self) -> str:
        with self._problems_lock:
            problem = self.problems.get("connect")
        return problem.error if problem is not None else "unknown"

    def _connect_failed(self, err: BasilError) -> None:
        self.errors += 1
        self.connect_failures += 1
        self.next_attempt = self._clock() + self.backoff.delay(self.connect_failures)
        self.job_failed("connect", err.message)
        log.warning(
            "vCenter %s: %s; next attempt at %s", self.name, err.message, self.next_attempt.isoformat()
        )

    def _note_tags(self, watcher: InventoryWatcher) -> None:
        if not self._with_tags:
            return
        if watcher.tags_error:
            self.job_failed("tags", watcher.tags_error)
        else:
            self.job_succeeded("tags")

    def note_error(self, err: BasilError) -> None:
        """What a caller outside :meth:`call` does with a vCenter error it caught: the same as inside."""
        if isinstance(err, VCenterAuthenticationError):
            self._failed(err)

    def _failed(self, err: BasilError) -> None:
        """A vCenter error in a call: counted; a refused login drops the session (see :meth:`connect`)."""
        self.errors += 1
        log.warning("vCenter %s: %s", self.name, err.message)
        if isinstance(err, VCenterAuthenticationError):
            # The session was lost and logging in again was refused (a changed password, a locked
            # account): every later call would try again at once. Start over, behind the back-off.
            with self._lock:
                self._connect_failed(err)
                self._drop()

    def call(self, fn: Callable[[VCenterConnection], T]) -> T:
        """Run *fn* with the session (connecting first); a vCenter error is counted and re-raised."""
        self.connect()
        assert self.conn is not None
        try:
            return fn(self.conn)
        except VCenterError as err:
            self._failed(err)
            raise

    def inventory(self, refresh: bool = True) -> Inventory:
        """The current inventory: the watcher's copy with vCenter's pending changes applied (a round trip
        to vCenter), or with ``refresh=False`` the copy as last polled (by the jobs and around moves)."""
        watcher = self._watcher
        if not refresh and watcher is not None:
            # The watcher swaps in a whole new Inventory when it applies changes: reading the reference
            # needs no lock, so readers never queue behind a poll or a job holding the link.
            return watcher.inventory
        with self._lock:
            self.connect()
            assert self._watcher is not None
            if not refresh:
                return self._watcher.inventory
            try:
                return self._watcher.poll(0)
            except VCenterError as err:
                self._failed(err)
                raise

    @property
    def last_inventory(self) -> Inventory | None:
        """The inventory as last polled, or None while the link is down (never connects, never waits)."""
        watcher = self._watcher
        return watcher.inventory if watcher is not None else None

    def refresh_tags(self) -> Inventory:
        with self._lock:
            self.connect()
            assert self._watcher is not None
            if not self._with_tags:
                return self._watcher.inventory
            inv = self._watcher.refresh_tags()
            self._note_tags(self._watcher)
            return inv

    def reread(self) -> Inventory:
        """Read the whole inventory again (not only the change feed's deltas) and the tags; the
        inventory keeps its version when nothing differs."""
        with self._lock:
            self.connect()
            watcher = self._watcher
            assert watcher is not None
            try:
                watcher.rebuild()
                inv = watcher.refresh_tags() if self._with_tags else watcher.inventory
            except VCenterError as err:
                self._failed(err)
                raise
            self._note_tags(watcher)
            return inv

    @property
    def watcher_rebuilds(self) -> int:
        """How often the inventory was read again in full on this session (re-logins, re-reads)."""
        watcher = self._watcher
        return watcher.rebuilds if watcher is not None else 0

    @property
    def collector(self) -> PerfCollector:
        self.connect()
        assert self._collector is not None
        return self._collector

    def actuator(self, params: ActuatorParams | None = None) -> Actuator:
        self.connect()
        assert self.conn is not None
        return Actuator(self.conn, params)

    def close(self) -> None:
        with self._lock:
            self._drop()

    def _drop(self) -> None:
        with self._lock:
            watcher, conn = self._watcher, self.conn
            self._watcher = self.conn = self._collector = None
            if watcher is not None:
                try:
                    watcher.close()
                except BasilError as err:
                    log.debug("closing the watcher of %s: %s", self.name, err.message)
            if conn is not None:
                conn.close()
