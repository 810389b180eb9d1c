"""Rendered answers of read operations, cached by what they were built from.

An operation opts in with ``cache=Cached(...)`` (see :func:`basil.api.operations.operation`), naming
what its answer depends on: the store's tables it reads, the service's in-memory state
(:mod:`basil.app.view_cache`: ``SAMPLES``, ``ROUNDS``, ``CONFIG``) and, always, the vCenter
inventories. The answer's JSON bytes are then kept under (operation, caller's role, path values, query
values) with the :class:`~basil.app.view_cache.Basis` taken *before* the view ran, and a later request
with the same key is answered from them while that basis has not moved: a dict lookup after
authentication, instead of the view's queries and the JSON encoding. A write that changes one of the
named tables or states moves the basis, so the next request builds the answer again; an error (404,
400) is never cached. Answers that also depend on the clock ("the last 24 hours") name ``max_age_s``:
they are built again at least that often.

Refresh-ahead: the samples' part of a basis (``SAMPLES`` and the :data:`LAGGING_TABLES`, moved by every
stored collection chunk, never by a request), the readings of vCenter's clock (taken by collections) and
the age bucket are its *lagging* part
(:mod:`basil.app.view_cache`): after a collection, a kept answer built less than ``max_lag_s`` ago (one
and a half collection periods by default) is served at once while one background thread builds it again
and swaps it in, instead of its first reader building it. Every other table and state a request can
write (plans, models, pools, configuration, audit) still makes the next read build the answer.

What must not opt in: answers that differ between two callers of the same role (``/me``), answers
that read state not listed here (the scheduler's next run times, health), and writes.

To opt a new read operation in, list every table its view reads (``Cached(tables=("plans",
"plan_moves"))``, or the groups of :mod:`basil.app.view_cache`) and the state it uses; a table left out
is a stale answer after a write to it, so each opted-in operation has a test that writes and reads
again (tests/api/test_answers.py).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass
from typing import Any

from basil.app.view_cache import SAMPLES, Basis, ReadCache, Refresh
from basil.store.models import (
    AppliedDiskSettingRow,
    AuditRow,
    HostDatastore,
    HostDatastoreRollup,
    HostDatastoreSample,
    JobRunRow,
    RollupState,
)

#: Tables of the store some cached answers read, besides the groups of basil.app.view_cache.
AUDIT = (AuditRow.__tablename__,)
JOB_RUNS = (JobRunRow.__tablename__,)  # the modelling runs' details: pod and datastore history
DEVICE_SAMPLES = (  # a datastore's <OIO, latency> points
    HostDatastore.__tablename__,
    HostDatastoreSample.__tablename__,
    HostDatastoreRollup.__tablename__,
    RollupState.__tablename__,
)
APPLIED = (AppliedDiskSettingRow.__tablename__,)
#: What may lag in a cached answer for a while (written by collection and roll-ups only, never by a request).
LAGGING_TABLES = DEVICE_SAMPLES
LAGGING_STATE = (SAMPLES,)
#: How long after its build began an answer may be served lagging, by default (1.5 collection periods of
#: the default 20 s: a key read every cycle is rebuilt within the next, with room for a late cycle).
MAX_LAG_S = 30.0


@dataclass(frozen=True)
class Cached:
    """What a read operation's answer is built from (besides the vCenter inventories, always included)."""

    tables: tuple[str, ...] = ()
    state: tuple[str, ...] = ()
    max_age_s: float = 0.0  # > 0: also built again when this old (answers relative to "now")

    @property
    def strict(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """The tables and state whose change makes the next read build the answer."""
        return (
            tuple(t for t in self.tables if t not in LAGGING_TABLES),
            tuple(n for n in self.state if n not in LAGGING_STATE),
        )

    @property
    def lagging(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """The tables and state whose change has the answer built again in the background."""
        return (
            tuple(t for t in self.tables if t in LAGGING_TABLES),
            tuple(n for n in self.state if n in LAGGING_STATE),
        )


@dataclass(frozen=True)
class Answer:
    """A rendered answer: its status and JSON body."""

    status: int
    body: bytes


#: Answers larger than this are served but not kept (an audit page of 1,000 entries is about 300 KB):
#: with MAX_ENTRIES, the cache holds at most about 128 MB whatever clients ask.
MAX_BODY_BYTES = 256 * 1024
MAX_ENTRIES = 512


class _NotKept(Exception):  # noqa: N818 (not an error: carries an answer past the cache, which keeps nothing)
    def __init__(self, answer: Answer) -> None:
        super().__init__()
        self.answer = answer


class AnswerCache:
    """Rendered answers by key, valid while their basis holds (a :class:`ReadCache` underneath)."""

    def __init__(
        self,
        max_entries: int = MAX_ENTRIES,
        clock: Callable[[], float] = time.monotonic,
        max_body_bytes: int = MAX_BODY_BYTES,
        max_lag_s: float = MAX_LAG_S,
    ) -> None:
        self._cache = ReadCache(max_entries, clock=clock)
        self._clock = clock
        self.max_body_bytes = max_body_bytes
        self.max_lag_s = max_lag_s

    @staticmethod
    def key(endpoint: str, role: str, path: Mapping[str, str], query: Mapping[str, Any]) -> Hashable:
        # The query's values are typed (numbers, times): their JSON text with sorted keys is one string
        # for equal queries, and two queries that differ never share it.
        query_text = json.dumps(query, sort_keys=True, default=str)
        return (endpoint, role, tuple(sorted(path.items())), query_text)

    def basis(self, cached: Cached, basis: Basis) -> Basis:
        """*basis* with the age bucket of *cached* added to its lagging part (a new bucket starts every
        max_age_s)."""
        if cached.max_age_s <= 0:
            return basis
        bucket = int(self._clock() // cached.max_age_s)
        return Basis(basis.inventories, basis.generations, (*basis.lagging, bucket))

    def get(
        self,
        key: Hashable,
        basis: Basis,
        build: Callable[[], Answer],
        rebuild: tuple[Callable[[], Basis], Callable[[], Answer]] | None = None,
    ) -> Answer:
        """The answer of *key* on *basis*: the kept one, else *build*() (kept unless it is too large).

        *rebuild* (the basis as it will be then, and a build that runs on any thread): a kept answer that
        lags only in the lagging part of *basis* is returned and built again in the background."""

        def kept(make: Callable[[], Answer]) -> Callable[[], Answer]:
            def checked() -> Answer:
                answer = make()
                if len(answer.body) > self.max_body_bytes:
                    raise _NotKept(answer)  # the read cache stores nothing for a build that raises
                return answer

            return checked

        refresh = None
        if rebuild is not None and basis.lagging:
            refresh = Refresh(rebuild[0], kept(rebuild[1]), self.max_lag_s)
        try:
            return self._cache.get(key, basis, kept(build), refresh)
        except _NotKept as large:
            return large.answer

    @property
    def hits(self) -> int:
        return self._cache.hits

    @property
    def misses(self) -> int:
        return self._cache.misses

    @property
    def lagging_hits(self) -> int:
        return self._cache.lagging_hits

    @property
    def refreshes(self) -> int:
        return self._cache.refreshes

    def refreshing(self) -> bool:
        return self._cache.refreshing()

    def __len__(self) -> int:
        return len(self._cache)
