"""Cached read models: each entry keeps the basis it was built from and is rebuilt once that basis moved.

A :class:`Basis` is the identity of each vCenter inventory a value read (a watcher replaces its
inventory object whenever it applies a change) and the generations of the other state it read: tables
of the store (counted after every commit by :meth:`basil.store.Store.generation`) and the service's
in-memory state (:class:`Generations`: newest samples, last rounds, configuration), bumped explicitly
right after that state changes. The basis is taken *before* a value is built and compared whenever it
is asked for again, so an entry may be fresher than its basis says but never staler: a change that
lands while a value is built has already moved the basis the value is stored under.

A build may ask the cache for other keys (a pod's view reads the pod's state, which reads the pod's
snapshot); such nesting must not go round in a circle, or two threads could wait for each other.
"""

from __future__ import annotations

import threading
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


def _ref(obj: object) -> Callable[[], object]:
    # Entries hold inventories weakly: a stale entry must not keep an old copy of a large inventory
    # alive. An inventory that is gone cannot be the current one, so its entry no longer matches.
    return weakref.ref(obj) if obj is not None else lambda: None


@dataclass(frozen=True)
class _Entry:
    inventories: tuple[Callable[[], object], ...]
    generations: tuple[int, ...]
    value: Any

    @classmethod
    def of(cls, basis: Basis, value: Any) -> _Entry:
        return cls(tuple(_ref(inv) for inv in basis.inventories), basis.generations, value)

    def matches(self, basis: Basis) -> bool:
        return (
            len(self.inventories) == len(basis.inventories)
            and all(ref() is inv for ref, inv in zip(self.inventories, basis.inventories, strict=True))
            and self.generations == basis.generations
        )


class ReadCache:
    """Values by key, each valid for the basis it was built on; thread-safe, least recently used evicted.

    Two threads asking for the same key on a new basis build it once: the second waits for the first.
    A build that raises stores nothing. Cached values are shared: callers must not change them.
    """

    def __init__(self, max_entries: int = 512) -> None:
        self.max_entries = max_entries
        self.hits = 0
        self.misses = 0
        self._lock = threading.Lock()
        self._entries: OrderedDict[Hashable, _Entry] = OrderedDict()
        self._gates: dict[Hashable, threading.Lock] = {}

    def _valid(self, key: Hashable, basis: Basis) -> _Entry | None:
        entry = self._entries.get(key)
        if entry is None or not entry.matches(basis):
            return None
        self._entries.move_to_end(key)
        self.hits += 1
        return entry

    def get(self, key: Hashable, basis: Basis, build: Callable[[], T]) -> T:
        """The value of *key* built on *basis*: the cached one if its basis is the same, else *build*()."""
        with self._lock:
            entry = self._valid(key, basis)
            if entry is not None:
                return cast(T, entry.value)
            gate = self._gates.setdefault(key, threading.Lock())
        with gate:
            with self._lock:
                entry = self._valid(key, basis)
                if entry is not None:
                    return cast(T, entry.value)
            value = build()
            with self._lock:
                self.misses += 1
                self._entries[key] = _Entry.of(basis, value)
                self._entries.move_to_end(key)
                while len(self._entries) > self.max_entries:
                    old, _ = self._entries.popitem(last=False)
                    self._gates.pop(old, None)
            return value

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)
