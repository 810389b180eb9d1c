"""``basil db`` and ``basil token`` against a real database file."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from basil.cli import main
from basil.store import Store
from basil.store.migrate import head_revision
from basil.store.tokens import verify_token


def test_db_upgrade_then_tokens(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'cli.db'}"
    runner = CliRunner()
    done = runner.invoke(main, ["db", "upgrade", "--url", url])
    assert done.exit_code == 0, done.output
    assert f"empty -> {head_revision()}" in done.output
    assert "up to date" in runner.invoke(main, ["db", "current", "--url", url]).output
    created = runner.invoke(main, ["token", "create", "ansible", "--role", "operator", "--url", url])
    assert created.exit_code == 0, created.output
    token = created.stdout.strip()
    store = Store(url)
    try:
        with store.session() as session:
            assert verify_token(session, token).role == "operator"
    finally:
        store.dispose()
    listed = json.loads(runner.invoke(main, ["token", "list", "--json", "--url", url]).stdout)
    assert [(t["name"], t["active"]) for t in listed] == [("ansible", True)]
    assert token not in json.dumps(listed)
    assert runner.invoke(main, ["token", "revoke", "ansible", "--url", url]).exit_code == 0
    listed = json.loads(runner.invoke(main, ["token", "list", "--json", "--url", url]).stdout)
    assert listed[0]["active"] is False


def test_token_errors_exit_2_with_the_field(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'cli.db'}"
    runner = CliRunner()
    runner.invoke(main, ["db", "upgrade", "--url", url])
    bad = runner.invoke(main, ["token", "create", "x", "--role", "admin", "--expires", "soon", "--url", url])
    assert bad.exit_code == 2
    assert "--expires" in bad.output
    missing = runner.invoke(main, ["token", "revoke", "nobody", "--url", url])
    assert missing.exit_code == 2
    assert "no token named 'nobody'" in missing.output


def test_db_upgrade_sql_prints_ddl() -> None:
    done = CliRunner().invoke(main, ["db", "upgrade", "--sql", "--url", "postgresql://basil@db/basil"])
    assert done.exit_code == 0, done.output
    assert "CREATE TABLE disk_samples" in done.output
