"""Cached read models: each entry keeps the basis it was built from and is rebuilt once that basis moved.

A :class:`Basis` is the identity of each vCenter inventory a value read (a watcher replaces its
inventory object whenever it applies a change) and the generations of the other state it read: tables
of the store (counted after every commit by :meth:`basil.store.Store.generation`) and the service's
in-memory state (:class:`Generations`: newest samples, last rounds, configuration), bumped explicitly
right after that state changes. The basis is taken *before* a value is built and compared whenever it
is asked for again, so an entry may be fresher than its basis says but never staler: a change that
lands while a value is built has already moved the basis the value is stored under.

Refresh-ahead: part of a basis may be marked *lagging* (:attr:`Basis.lagging`: the generations of the
samples, which every collection chunk moves). An entry whose basis differs from the asked one only there
is still served, for at most ``max_lag_s`` after its build began, while one background thread builds it
again and swaps the new value in; the readers right after a collection then do not wait for those
builds. Every other part of a basis (plans, models, configuration, inventories) is never served stale,
so a write is seen by the next read.

A build may ask the cache for other keys (a pod's view reads the pod's state, which reads the pod's
snapshot); such nesting must not go round in a circle, or two threads could wait for each other.
"""

from __future__ import annotations

import logging
import threading
import time
import weakref
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any, TypeVar, cast

from basil.store.models import (
    DatastoreModelRow,
    DiskModelRow,
    PlanMoveRow,
    PlanRow,
    PredictionCheckRow,
    RecommendationRow,
    SrpPoolTreeRow,
)

T = TypeVar("T")
log = logging.getLogger(__name__)

#: Keys waiting for a background rebuild, at most (beyond them, a stale entry waits for its next reader).
MAX_PENDING_REFRESHES = 64

#: Tables of the store the read models are built from, by what they hold.
FITS = (DiskModelRow.__tablename__, DatastoreModelRow.__tablename__)  # workload and device models
PLANS = (PlanRow.__tablename__, PlanMoveRow.__tablename__)
RECOMMENDATIONS = (RecommendationRow.__tablename__,)
PREDICTIONS = (PredictionCheckRow.__tablename__,)
SRP_POOLS = (SrpPoolTreeRow.__tablename__,)

#: The service's in-memory state that read models depend on (the store's tables are counted by the store).
SAMPLES = "samples"  # the newest disk and host-datastore samples (collection)
ROUNDS = "rounds"  # the last recommendation round of each pod
CONFIG = "config"  # the configuration (the rebalance window can be changed at run time)
STATE = (SAMPLES, ROUNDS, CONFIG)


class Generations:
    """Counters of the service's in-memory state, each bumped right after that state changed."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts = dict.fromkeys(STATE, 0)

    def bump(self, *names: str) -> None:
        with self._lock:
            for name in names:
                self._counts[name] += 1

    def get(self, *names: str) -> tuple[int, ...]:
        with self._lock:
            return tuple(self._counts[name] for name in names)


@dataclass(frozen=True, eq=False)
class Basis:
    """What a cached value was built from: inventory objects (compared by identity) and generations."""

    inventories: tuple[object, ...]
    generations: tuple[int, ...]
    lagging: tuple[int, ...] = ()  # generations a value may lag behind for a while (see module docstring)


@dataclass(frozen=True)
class Refresh:
    """How an entry served lagging is built again off the request path: the basis as it is when the
    rebuild starts (taken by the refresher), the build, and how long a value may be served lagging."""

    basis: Callable[[], Basis]
    build: Callable[[], Any]
    max_lag_s: float


def _ref(obj: object) -> Callable[[], object]:
    # Entries hold inventories weakly: a stale entry must not keep an old copy of a large inventory
    # alive. An inventory that is gone cannot be the current one, so its entry no longer matches.
    return weakref.ref(obj) if obj is not None else lambda: None


@dataclass(frozen=True)
class _Entry:
    inventories: tuple[Callable[[], object], ...]
    generations: tuple[int, ...]
    lagging: tuple[int, ...]
    value: Any
    built_at: float  # the cache's clock when the build began

    @classmethod
    def of(cls, basis: Basis, value: Any, built_at: float) -> _Entry:
        inventories = tuple(_ref(inv) for inv in basis.inventories)
        return cls(inventories, basis.generations, basis.lagging, value, built_at)

    def matches(self, basis: Basis) -> bool:
        return self.matches_but_lagging(basis) and self.lagging == basis.lagging

    def matches_but_lagging(self, basis: Basis) -> bool:
        return (
            len(self.inventories) == len(basis.inventories)
            and all(ref() is inv for ref, inv in zip(self.inventories, basis.inventories, strict=True))
            and self.generations == basis.generations
        )


class ReadCache:
    """Values by key, each valid for the basis it was built on; thread-safe, least recently used evicted.

    Two threads asking for the same key on a new basis build it once: the second waits for the first.
    A build that raises stores nothing. Cached values are shared: callers must not change them. With a
    :class:`Refresh`, an entry that lags only in its basis's lagging part is served at once and built
    again by the cache's refresher (one thread, started when there is work, ending when there is none;
    at most ``max_pending`` keys wait, each once).
    """

    def __init__(
        self,
        max_entries: int = 512,
        *,
        clock: Callable[[], float] = time.monotonic,
        max_pending: int = MAX_PENDING_REFRESHES,
    ) -> None:
        self.max_entries = max_entries
        self.max_pending = max_pending
        self.hits = 0
        self.misses = 0
        self.lagging_hits = 0  # served while lagging, rebuilt in the background
        self.refreshes = 0  # background rebuilds stored
        self._clock = clock
        self._lock = threading.Lock()
        self._entries: OrderedDict[Hashable, _Entry] = OrderedDict()
        self._gates: dict[Hashable, threading.Lock] = {}
        self._pending: OrderedDict[Hashable, Refresh] = OrderedDict()
        self._refresher: threading.Thread | None = None

    def _valid(self, key: Hashable, basis: Basis) -> _Entry | None:
        entry = self._entries.get(key)
        if entry is None or not entry.matches(basis):
            return None
        self._entries.move_to_end(key)
        self.hits += 1
        return entry

    def _lagging(self, key: Hashable, basis: Basis, refresh: Refresh | None) -> _Entry | None:
        """The entry of *key* if it may be served while it is built again (lock held)."""
        entry = self._entries.get(key)
        if (
            refresh is None
            or entry is None
            or not entry.matches_but_lagging(basis)
            or self._clock() - entry.built_at > refresh.max_lag_s
        ):
            return None
        self._entries.move_to_end(key)
        self.lagging_hits += 1
        if key not in self._pending and len(self._pending) < self.max_pending:
            self._pending[key] = refresh
            if self._refresher is None:
                self._refresher = threading.Thread(
                    target=self._refresh_all, name="basil-refresh", daemon=True
                )
                self._refresher.start()
        return entry

    def get(self, key: Hashable, basis: Basis, build: Callable[[], T], refresh: Refresh | None = None) -> T:
        """The value of *key* built on *basis*: the cached one if its basis is the same, else *build*().

        With *refresh*, a cached value whose basis differs only in its lagging part, built less than
        ``refresh.max_lag_s`` ago, is returned at once and built again in the background."""
        with self._lock:
            entry = self._valid(key, basis) or self._lagging(key, basis, refresh)
            if entry is not None:
                return cast(T, entry.value)
            gate = self._gates.setdefault(key, threading.Lock())
        with gate:
            with self._lock:
                entry = self._valid(key, basis)
                if entry is not None:
                    return cast(T, entry.value)
            return self._store(key, basis, build)

    def _store(self, key: Hashable, basis: Basis, build: Callable[[], T]) -> T:
        """Build *key* on *basis* and keep it (its gate held)."""
        started = self._clock()
        value = build()
        with self._lock:
            self.misses += 1
            self._entries[key] = _Entry.of(basis, value, started)
            self._entries.move_to_end(key)
            while len(self._entries) > self.max_entries:
                old, _ = self._entries.popitem(last=False)
                self._gates.pop(old, None)
        return value

    def _refresh_all(self) -> None:
        """The refresher: build the waiting keys one at a time, oldest first, then end."""
        while True:
            with self._lock:
                if not self._pending:
                    self._refresher = None
                    return
                key, refresh = self._pending.popitem(last=False)
                gate = self._gates.setdefault(key, threading.Lock())
            try:
                with gate:
                    basis = refresh.basis()  # taken before the build, as a reader's is
                    with self._lock:
                        entry = self._entries.get(key)
                        if entry is None or entry.matches(basis):
                            continue  # evicted meanwhile, or a reader built it already
                    self._store(key, basis, refresh.build)
                    with self._lock:
                        self.refreshes += 1
            except Exception:  # the lagging value stays until max_lag_s; then its reader builds it
                log.warning("refreshing the cached %r failed", key, exc_info=True)

    def refreshing(self) -> bool:
        """True while the refresher has work (for tests and benchmarks)."""
        with self._lock:
            return self._refresher is not None

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._pending.clear()

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)
