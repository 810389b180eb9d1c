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

from basil.app.view_cache import Basis, ReadCache
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


@dataclass(frozen=True)
class Cached:
    """What a read operation's answer is built from (besides the vCenter inventories, always included)."""

    tables: tuple[str, ...] = ()
    state: tuple[str, ...] = ()
    max_age_s: float = 0.0  # > 0: also built again when this old (answers relative to "now")


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
    ) -> None:
        self._cache = ReadCache(max_entries)
        self._clock = clock
        self.max_body_bytes = max_body_bytes

    @staticmethod
    def key(endpoint: str, role: str, path: Mapping[str, str], query: Mapping[str, Any]) -> Hashable:
        # The query's values are typed (numbers, times): their JSON text with sorted keys is one string
        # for equal queries, and two queries that differ never share it.
        query_text = json.dumps(query, sort_keys=True, default=str)
        return (endpoint, role, tuple(sorted(path.items())), query_text)

    def basis(self, cached: Cached, basis: Basis) -> Basis:
        """*basis* with the age bucket of *cached* added (a new bucket starts every max_age_s)."""
        if cached.max_age_s <= 0:
            return basis
        return Basis(basis.inventories, (*basis.generations, int(self._clock() // cached.max_age_s)))

    def get(self, key: Hashable, basis: Basis, build: Callable[[], Answer]) -> Answer:
        """The answer of *key* on *basis*: the kept one, else *build*() (kept unless it is too large)."""

        def kept() -> Answer:
            answer = build()
            if len(answer.body) > self.max_body_bytes:
                raise _NotKept(answer)  # the read cache stores nothing for a build that raises
            return answer

        try:
            return self._cache.get(key, basis, kept)
        except _NotKept as large:
            return large.answer

    @property
    def hits(self) -> int:
        return self._cache.hits

    @property
    def misses(self) -> int:
        return self._cache.misses

    def __len__(self) -> int:
        return len(self._cache)
