"""A throw-away PostgreSQL cluster from Debian's server binaries, for the store's tests and benchmarks.

``start_cluster()`` runs ``initdb`` in a new temporary directory, starts the server on a free
loopback port (as the ``postgres`` user, or ``nobody``, when run as root: PostgreSQL refuses root)
with trust authentication for the user ``basil``, and returns a handle; ``stop()`` removes it all.
No pytest here, so a benchmark script can use it too.
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import create_engine, text

from tests.ports import free_port


class ClusterError(RuntimeError):
    """PostgreSQL is missing or would not start; the message says what to do."""


def find_postgres_bin() -> Path | None:
    """The newest Debian PostgreSQL server binaries directory, or $BASIL_TEST_PG_BIN if set."""
    override = os.environ.get("BASIL_TEST_PG_BIN")
    if override:
        given = Path(override)
        return given if (given / "initdb").exists() and (given / "pg_ctl").exists() else None
    candidates = sorted(
        Path("/usr/lib/postgresql").glob("*/bin"),
        key=lambda p: int(p.parent.name) if p.parent.name.isdigit() else 0,
    )
    found = [p for p in candidates if (p / "initdb").exists() and (p / "pg_ctl").exists()]
    return found[-1] if found else None


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


def start_cluster() -> PostgresServer:
    bin_dir = find_postgres_bin()
    if bin_dir is None:
        raise ClusterError(
            "PostgreSQL server binaries not found under /usr/lib/postgresql/*/bin. Install them with "
            "`apt-get install -y postgresql` (what .ci/run does), or point BASIL_TEST_PG_BIN at a bin "
            "directory holding initdb and pg_ctl."
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
    server = PostgresServer(bin_dir, root, free_port(), "basil", run_as)
    done = server.run("initdb", "-D", "data", "-U", "basil", "--auth=trust", "-E", "UTF8", "--no-sync")
    if done.returncode != 0:
        shutil.rmtree(root, ignore_errors=True)
        raise ClusterError(f"initdb failed: {done.stderr or done.stdout}")
    options = f"-p {server.port} -k {root} -c listen_addresses=127.0.0.1 -c fsync=off -c full_page_writes=off"
    done = server.run("pg_ctl", "-D", "data", "-o", options, "-l", "server.log", "-w", "-t", "60", "start")
    if done.returncode != 0:
        log = (root / "server.log").read_text(errors="replace") if (root / "server.log").exists() else ""
        shutil.rmtree(root, ignore_errors=True)
        raise ClusterError(f"PostgreSQL did not start: {done.stderr or done.stdout}\n{log}")
    return server


def stop_cluster(server: PostgresServer) -> None:
    server.run("pg_ctl", "-D", "data", "-m", "immediate", "-w", "stop")
    shutil.rmtree(server.root, ignore_errors=True)
