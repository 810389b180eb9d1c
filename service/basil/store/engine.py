"""Connecting to the store: a SQLite file (WAL, foreign keys on) or PostgreSQL via psycopg 3, and sessions.

SQLite gets real transactions: pysqlite's own implicit BEGIN is switched off and Basil emits
``BEGIN IMMEDIATE`` for write sessions (so a read-then-write transaction cannot fail half-way with
"database is locked" when another writer got in between) and a plain deferred ``BEGIN`` for read
sessions, which WAL lets run beside the writer.

The store also counts, per table, the write transactions committed through it (:meth:`Store.generation`):
the application's caches of read models compare these counts to know when what they were built from
has changed.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Engine, Result, create_engine, event, inspect
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import OperationalError
from sqlalchemy.orm import ORMExecuteState, Session, UOWTransaction, sessionmaker
from sqlalchemy.pool import ConnectionPoolEntry

from basil.errors import BasilError, Problem, ValidationError

log = logging.getLogger(__name__)

_READ_ONLY = "basil_read_only"
_WRITTEN = "basil_written_tables"  # Session.info key: tables the open transaction wrote


class StoreUnavailableError(BasilError):
    """The database cannot be reached or opened."""

    http_status = 503
    code = "store_unavailable"


def normalize_url(url: str | URL) -> URL:
    """The SQLAlchemy URL to use: ``postgresql://`` means psycopg 3 here, never psycopg2."""
    parsed = make_url(url)
    backend = parsed.get_backend_name()
    if backend == "postgresql" and parsed.get_driver_name() in ("psycopg2", ""):
        parsed = parsed.set(drivername="postgresql+psycopg")
    if backend not in ("sqlite", "postgresql"):
        raise ValidationError([Problem("store.url", f"unsupported database {backend!r}")], "store URL")
    return parsed


def _sqlite_file(url: URL) -> Path | None:
    database = url.database or ""
    if database in ("", ":memory:") or database.startswith("file:"):
        return None
    return Path(database)


def _on_sqlite_connect(dbapi_connection: sqlite3.Connection, _record: ConnectionPoolEntry) -> None:
    # Let SQLAlchemy's begin event decide how each transaction starts (see module docstring).
    dbapi_connection.isolation_level = None
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA foreign_keys = ON")
    cursor.execute("PRAGMA journal_mode = WAL")
    # NORMAL is durable across application crashes in WAL mode; only an OS crash can lose the last commits.
    cursor.execute("PRAGMA synchronous = NORMAL")
    cursor.execute("PRAGMA busy_timeout = 30000")
    cursor.execute("PRAGMA cache_size = -65536")  # 64 MiB: the sample indexes stay in memory
    cursor.close()


def _on_sqlite_begin(conn: Connection) -> None:
    read_only = conn.get_execution_options().get(_READ_ONLY, False)
    conn.exec_driver_sql("BEGIN" if read_only else "BEGIN IMMEDIATE")


def create_store_engine(url: str | URL, *, echo: bool = False) -> Engine:
    """An Engine for *url* with Basil's settings for its backend; creates a SQLite file's directory."""
    parsed = normalize_url(url)
    if parsed.get_backend_name() == "sqlite":
        path = _sqlite_file(parsed)
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(parsed, echo=echo, connect_args={"check_same_thread": False})
        event.listen(engine, "connect", _on_sqlite_connect)
        event.listen(engine, "begin", _on_sqlite_begin)
        return engine
    return create_engine(parsed, echo=echo, pool_pre_ping=True, pool_size=5, max_overflow=10)


def _written(session: Session) -> set[str]:
    found: set[str] = session.info.setdefault(_WRITTEN, set())
    return found


def _note_flushed_tables(session: Session, _flush: UOWTransaction) -> None:
    for obj in (*session.new, *session.dirty, *session.deleted):
        table = getattr(obj, "__tablename__", None)
        if isinstance(table, str):
            _written(session).add(table)


def _note_statement_table(state: ORMExecuteState) -> Result[Any] | None:
    # Bulk INSERT/UPDATE/DELETE statements bypass the unit of work (and after_flush). One that matched
    # no row changed nothing (retention's periodic deletes mostly do): it is not counted.
    if not (state.is_insert or state.is_update or state.is_delete):
        return None
    name = getattr(getattr(state.statement, "table", None), "name", None)
    result = state.invoke_statement()
    if isinstance(name, str) and getattr(result, "rowcount", -1) != 0:
        _written(state.session).add(name)
    return result


def _forget_tables(session: Session) -> None:
    session.info.pop(_WRITTEN, None)


class Store:
    """The one handle on the database: an engine, write and read sessions, and the schema's migrations."""

    def __init__(self, url: str | URL, *, echo: bool = False) -> None:
        self.url = normalize_url(url)
        self.engine = create_store_engine(self.url, echo=echo)
        self._writer = sessionmaker(self.engine, expire_on_commit=False)
        read_options: dict[str, Any] = {_READ_ONLY: True}
        if self.backend == "postgresql":
            read_options["postgresql_readonly"] = True
        self._reader = sessionmaker(self.engine.execution_options(**read_options), expire_on_commit=False)
        self._generations: dict[str, int] = {}
        self._generations_lock = threading.Lock()
        event.listen(self._writer, "after_flush", _note_flushed_tables)
        event.listen(self._writer, "do_orm_execute", _note_statement_table)
        event.listen(self._writer, "after_commit", self._count_commit)
        event.listen(self._writer, "after_rollback", _forget_tables)

    @property
    def backend(self) -> str:
        return self.url.get_backend_name()

    def __repr__(self) -> str:
        return f"Store({self.url.render_as_string(hide_password=True)!r})"

    @contextmanager
    def session(self) -> Iterator[Session]:
        """A write transaction: committed when the block ends, rolled back if it raises."""
        with self._guard(), self._writer.begin() as session:
            yield session

    @contextmanager
    def read_session(self) -> Iterator[Session]:
        """A read-only transaction, which on SQLite runs beside the writer instead of waiting for it."""
        with self._guard(), self._reader.begin() as session:
            yield session

    @contextmanager
    def _guard(self) -> Iterator[None]:
        try:
            yield
        except OperationalError as err:
            # The driver's text can hold the host and user, never the password (it is not in the URL we log).
            raise StoreUnavailableError(f"database error on {self!r}: {err.orig}") from err

    def generation(self, *tables: str) -> tuple[int, ...]:
        """How many committed write transactions of this Store changed each of *tables*.

        A count moves only after the commit, so a reader that takes the counts *before* reading the
        data can tag what it builds with them: if the data changed meanwhile, the counts it tagged are
        already stale and the next reader rebuilds. Writes of other processes are not seen.
        """
        with self._generations_lock:
            return tuple(self._generations.get(t, 0) for t in tables)

    def _count_commit(self, session: Session) -> None:
        written: set[str] = session.info.pop(_WRITTEN, set())
        if written:
            with self._generations_lock:
                for table in written:
                    self._generations[table] = self._generations.get(table, 0) + 1

    def upgrade(self, revision: str = "head") -> None:
        """Bring the schema to *revision* with Alembic (creates every table on an empty database)."""
        from basil.store.migrate import upgrade  # noqa: PLC0415 (Alembic is loaded only when needed)

        upgrade(self.engine, revision)

    def table_names(self) -> list[str]:
        return sorted(inspect(self.engine).get_table_names())

    def dispose(self) -> None:
        self.engine.dispose()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.dispose()
