"""One live link per configured vCenter: its session, inventory watcher, performance collector and actuator.

The link is the only object of the application layer holding adapter objects; everything else asks
it for the current :class:`~basil.vcenter.types.Inventory` or hands it work. A link that cannot
connect stays down and says why (``state``); the next job that needs it tries again.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TypeVar

from basil.config import VCenterConfig, vcenter_password
from basil.errors import BasilError, VCenterError
from basil.vcenter.actuator import Actuator, ActuatorParams
from basil.vcenter.connection import ConnectionParams, TLSOptions, VCenterConnection
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


class VCenterLink:
    """The service's connection to one vCenter; thread-safe (jobs run in parallel threads)."""

    def __init__(
        self,
        config: VCenterConfig,
        params_factory: Callable[[VCenterConfig], ConnectionParams] = connection_params,
        with_tags: bool = True,
    ) -> None:
        self.config = config
        self.name = config.name
        self._params_factory = params_factory
        self._with_tags = with_tags
        self._lock = threading.RLock()
        self.conn: VCenterConnection | None = None
        self._watcher: InventoryWatcher | None = None
        self._collector: PerfCollector | None = None
        self.last_error = ""
        self.last_error_at: datetime | None = None
        self.last_collection: datetime | None = None  # vCenter time of the newest sample collected
        self.instance_uuid: str | None = None  # vCenter's instance UUID, known once connected
        self.errors = 0  # vCenter errors seen (for the metrics)

    @property
    def connected(self) -> bool:
        return self.conn is not None and self._watcher is not None

    def connect(self) -> None:
        """Log in and take the first inventory; raises the adapter's error when vCenter refuses."""
        with self._lock:
            if self.connected:
                return
            conn = VCenterConnection(self._params_factory(self.config))
            try:
                conn.connect()
                watcher = InventoryWatcher(conn, with_tags=self._with_tags)
                watcher.start()
            except BasilError as err:
                conn.close()
                self._failed(err)
                raise
            self.conn, self._watcher = conn, watcher
            self.instance_uuid = conn.instance_uuid or None
            self._collector = PerfCollector(conn)
            self.last_error = ""

    def _failed(self, err: BasilError) -> None:
        self.errors += 1
        self.last_error = err.message
        self.last_error_at = datetime.now(UTC)
        log.warning("vCenter %s: %s", self.name, err.message)

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
            return self._watcher.refresh_tags()

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
            watcher, conn = self._watcher, self.conn
            self._watcher = self.conn = self._collector = None
            if watcher is not None:
                try:
                    watcher.close()
                except BasilError as err:
                    log.debug("closing the watcher of %s: %s", self.name, err.message)
            if conn is not None:
                conn.close()
