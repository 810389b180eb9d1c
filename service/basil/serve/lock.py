"""One ``basil serve`` per store: the lock that keeps a second process (and its scheduler) out.

APScheduler 3 cannot share a job store between processes: two services on one database would each
run every job. So the serving process holds an exclusive lock for its whole life, tied to the
store: an ``flock`` on a file beside a SQLite database, a session-level advisory lock on
PostgreSQL. The operating system (or the database server) drops the lock when the process dies, so a
crash never leaves a stale lock behind.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from sqlalchemy import URL, text

from basil.errors import ConflictError
from basil.store import Store

# Any fixed 64-bit number: the advisory lock's key, the same for every Basil on one database.
_PG_LOCK_KEY = 0x0BA511_5E27E


def sqlite_file(url: URL) -> Path | None:
    """The file a SQLite URL opens, or None for an in-memory database.

    Both forms SQLite reads: a plain file name, and a ``file:`` URI (``sqlite:///file:basil.db?uri=true``,
    ``file:///var/lib/basil/basil.db``, percent-escapes, ``mode=memory``).
    """
    database = url.database or ""
    if database in ("", ":memory:"):
        return None
    if not database.startswith("file:"):
        return Path(database)
    parts = urlsplit(database)
    if parts.netloc not in ("", "localhost"):
        return None  # SQLite opens no remote file
    name = unquote(parts.path)
    options = dict(url.query) | {k: v for k, _, v in (p.partition("=") for p in parts.query.split("&") if p)}
    if name in ("", ":memory:") or options.get("mode") == "memory":
        return None
    return Path(name)


class ServeLock:
    """Held from :meth:`acquire` until :meth:`release` (or the process ends)."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._file: Any = None
        self._connection: Any = None

    @property
    def path(self) -> Path | None:
        """The lock file of a SQLite store (None for PostgreSQL or an in-memory database).

        It sits beside the database file itself, symbolic links resolved, whichever way the URL names
        the file (a path, a relative path, a symbolic link, a ``file:`` URI), so that every spelling of
        one database takes the same lock.
        """
        if self.store.backend != "sqlite":
            return None
        database = sqlite_file(self.store.url)
        if database is None:
            return None
        real = database.resolve()
        return real.with_name(real.name + ".serve.lock")

    def acquire(self) -> None:
        """Take the lock or raise ConflictError naming the holder."""
        if self.store.backend == "postgresql":
            self._acquire_postgres()
            return
        path = self.path
        if path is None:
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        handle = path.open("a+", encoding="utf-8")
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or "another process"
            handle.close()
            raise ConflictError(
                f"another basil serve (pid {holder}) already runs on {self.store.url.database}; "
                "one process per store, so that there is only one scheduler"
            ) from None
        handle.seek(0)
        handle.truncate()
        handle.write(str(os.getpid()))
        handle.flush()
        self._file = handle

    def _acquire_postgres(self) -> None:
        connection = self.store.engine.connect()
        got = connection.execute(text("SELECT pg_try_advisory_lock(:key)"), {"key": _PG_LOCK_KEY}).scalar()
        connection.commit()
        if not got:
            connection.close()
            raise ConflictError(
                "another basil serve already runs on this PostgreSQL database; "
                "one process per store, so that there is only one scheduler"
            )
        self._connection = connection

    def release(self) -> None:
        if self._file is not None:
            fcntl.flock(self._file.fileno(), fcntl.LOCK_UN)
            self._file.close()
            self._file = None
        if self._connection is not None:
            self._connection.execute(text("SELECT pg_advisory_unlock(:key)"), {"key": _PG_LOCK_KEY})
            self._connection.close()
            self._connection = None

    def __enter__(self) -> ServeLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()
