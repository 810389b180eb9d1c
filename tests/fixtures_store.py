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
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy.exc import DBAPIError

from basil.store import Store
from tests.pg_cluster import ClusterError, PostgresServer, start_cluster, stop_cluster

BACKENDS = [
    pytest.param("sqlite", id="sqlite"),
    pytest.param("postgresql", id="postgresql", marks=pytest.mark.postgres),
]
_counter = itertools.count()


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """A PostgreSQL cluster for the whole test session (fails, never skips, when PostgreSQL is missing)."""
    try:
        server = start_cluster()
    except ClusterError as err:
        pytest.fail(f"the store's postgres tests need a PostgreSQL server: {err}", pytrace=False)
    try:
        yield server
    finally:
        stop_cluster(server)


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
