"""Pytest fixtures for the store: a migrated Store on SQLite and on a real PostgreSQL server.

Loaded from ``tests/conftest.py`` as a plugin (``pytest_plugins``). The PostgreSQL server is Debian's
(``/usr/lib/postgresql/*/bin``): one cluster per test session, ``initdb`` in a temporary directory,
started on a free loopback port as an unprivileged user when the tests run as root, and stopped at
the end. Each test gets a fresh database cloned from a migrated template, so tests do not see each
other's rows. If PostgreSQL is not installed the postgres tests FAIL (they do not skip): install it
with ``apt-get install postgresql`` (``.ci/run`` does).
"""

from __future__ import annotations

import itertools
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.exc import DBAPIError

from basil.store import Store

BACKENDS = [
    pytest.param("sqlite", id="sqlite"),
    pytest.param("postgresql", id="postgresql", marks=pytest.mark.postgres),
]
_counter = itertools.count()


def find_postgres_bin() -> Path | None:
    """The newest Debian PostgreSQL server binaries directory, or $BASIL_TEST_PG_BIN if set."""
    override = os.environ.get("BASIL_TEST_PG_BIN")
    if override:
        return Path(override)
    candidates = sorted(
        Path("/usr/lib/postgresql").glob("*/bin"),
        key=lambda p: int(p.parent.name) if p.parent.name.isdigit() else 0,
    )
    found = [p for p in candidates if (p / "initdb").exists() and (p / "pg_ctl").exists()]
    return found[-1] if found else None


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@dataclass
class PostgresServer:
    """A running throw-away PostgreSQL cluster."""

    bin_dir: Path
    root: Path
    port: int
    user: str
    run_as: tuple[int, int] | None

    def url(self, database: str = "postgres") -> str:
        return f"postgresql+psycopg://{self.user}@127.0.0.1:{self.port}/{database}"

    def admin(self, sql: str) -> None:
        engine = create_engine(self.url(), isolation_level="AUTOCOMMIT")
        try:
            with engine.connect() as conn:
                conn.execute(text(sql))
        finally:
            engine.dispose()

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        kwargs: dict[str, object] = {}
        if self.run_as is not None:
            kwargs = {"user": self.run_as[0], "group": self.run_as[1], "extra_groups": []}
        return subprocess.run(  # type: ignore[call-overload, no-any-return]
            [str(self.bin_dir / args[0]), *args[1:]],
            check=False,
            capture_output=True,
            text=True,
            cwd=self.root,
            **kwargs,
        )


def _start_postgres() -> PostgresServer:
    bin_dir = find_postgres_bin()
    if bin_dir is None:
        pytest.fail(
            "PostgreSQL server binaries not found under /usr/lib/postgresql/*/bin: the store's postgres "
            "tests need them. Install them with `apt-get install -y postgresql` (what .ci/run does), or "
            "point BASIL_TEST_PG_BIN at a bin directory holding initdb and pg_ctl.",
            pytrace=False,
        )
    root = Path(tempfile.mkdtemp(prefix="basil-pg-"))
    run_as: tuple[int, int] | None = None
    if os.geteuid() == 0:
        # PostgreSQL refuses to run as root: hand the cluster to the postgres user (or nobody).
        try:
            account = pwd.getpwnam("postgres")
        except KeyError:
            account = pwd.getpwnam("nobody")
        run_as = (account.pw_uid, account.pw_gid)
        os.chown(root, *run_as)
    server = PostgresServer(bin_dir, root, _free_port(), "basil", run_as)
    done = server.run("initdb", "-D", "data", "-U", "basil", "--auth=trust", "-E", "UTF8", "--no-sync")
    if done.returncode != 0:
        pytest.fail(f"initdb failed: {done.stderr or done.stdout}", pytrace=False)
    options = f"-p {server.port} -k {root} -c listen_addresses=127.0.0.1 -c fsync=off -c full_page_writes=off"
    done = server.run("pg_ctl", "-D", "data", "-o", options, "-l", "server.log", "-w", "-t", "60", "start")
    if done.returncode != 0:
        log = (root / "server.log").read_text(errors="replace") if (root / "server.log").exists() else ""
        pytest.fail(f"PostgreSQL did not start: {done.stderr or done.stdout}\n{log}", pytrace=False)
    return server


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """A PostgreSQL cluster for the whole test session (fails, never skips, when PostgreSQL is missing)."""
    server = _start_postgres()
    try:
        yield server
    finally:
        server.run("pg_ctl", "-D", "data", "-m", "immediate", "-w", "stop")
        shutil.rmtree(server.root, ignore_errors=True)


@pytest.fixture(scope="session")
def postgres_template(postgres_server: PostgresServer) -> str:
    """A database migrated to head once per session; test databases are cloned from it."""
    postgres_server.admin("CREATE DATABASE basil_template")
    store = Store(postgres_server.url("basil_template"))
    store.upgrade()
    store.dispose()
    return "basil_template"


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("sqlite-template") / "template.db"
    store = Store(f"sqlite:///{path}")
    store.upgrade()
    store.dispose()
    return path


def _wait_unused(server: PostgresServer, database: str) -> None:
    # Pooled connections of a disposed engine can take a moment to go away on the server side.
    for _ in range(50):
        try:
            server.admin(f"DROP DATABASE IF EXISTS {database}")
            return
        except DBAPIError:  # the database may still be in use for a moment; retry briefly
            time.sleep(0.1)
    server.admin(f"DROP DATABASE IF EXISTS {database} WITH (FORCE)")


@pytest.fixture
def empty_store_url(backend: str, request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """The URL of an empty database on the test's backend (parametrized: SQLite and PostgreSQL)."""
    if backend == "sqlite":
        yield f"sqlite:///{tmp_path / 'empty.db'}"
        return
    server: PostgresServer = request.getfixturevalue("postgres_server")
    name = f"basil_empty_{os.getpid()}_{next(_counter)}"
    server.admin(f"CREATE DATABASE {name}")
    try:
        yield server.url(name)
    finally:
        _wait_unused(server, name)


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    """Runs the test once on SQLite and once on PostgreSQL."""
    value: str = request.param
    return value


@pytest.fixture
def store(backend: str, request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    """A migrated, empty Store on the test's backend (parametrized: SQLite and PostgreSQL)."""
    if backend == "sqlite":
        template: Path = request.getfixturevalue("sqlite_template")
        path = tmp_path / "basil.db"
        shutil.copyfile(template, path)
        opened = Store(f"sqlite:///{path}")
        try:
            yield opened
        finally:
            opened.dispose()
        return
    server: PostgresServer = request.getfixturevalue("postgres_server")
    template_name: str = request.getfixturevalue("postgres_template")
    name = f"basil_test_{os.getpid()}_{next(_counter)}"
    server.admin(f"CREATE DATABASE {name} TEMPLATE {template_name}")
    opened = Store(server.url(name))
    try:
        yield opened
    finally:
        opened.dispose()
        _wait_unused(server, name)
