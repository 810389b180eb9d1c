"""``basil db`` (schema migrations) and ``basil token`` (API tokens, which live in the store)."""

from __future__ import annotations

import getpass
import json
from datetime import UTC, datetime

import click

from basil.cli.config import config_option
from basil.config import load_config, store_url
from basil.config.durations import parse_duration
from basil.errors import Problem, ValidationError
from basil.store import Store, audit
from basil.store.migrate import current_revision, head_revision, history, upgrade_sql
from basil.store.models import ROLES
from basil.store.tokens import create_token, list_tokens, revoke_token

url_option = click.option(
    "--url", default=None, help="Database URL (default: store.url of the configuration)."
)


def open_store(config_path: str | None, url: str | None) -> Store:
    """The store named by --url, or by the configuration (with its password from env or file)."""
    if url:
        return Store(url)
    return Store(store_url(load_config(config_path).store))


@click.group("db")
def db_group() -> None:
    """Create and migrate Basil's database (SQLite file or PostgreSQL)."""


@db_group.command("upgrade")
@config_option
@url_option
@click.option("--revision", default="head", show_default=True, help="Target revision.")
@click.option("--sql", "as_sql", is_flag=True, help="Print the SQL instead of running it (for a DBA).")
def upgrade(config_path: str | None, url: str | None, revision: str, as_sql: bool) -> None:
    """Bring the schema to the latest revision (creates every table on an empty database)."""
    if as_sql:
        target = url or store_url(load_config(config_path).store)
        click.echo(upgrade_sql(target, revision), nl=False)
        return
    with open_store(config_path, url) as store:
        before = current_revision(store.engine)
        store.upgrade(revision)
        after = current_revision(store.engine)
        click.echo(f"{store!r}: {before or 'empty'} -> {after}")


@db_group.command("current")
@config_option
@url_option
def current(config_path: str | None, url: str | None) -> None:
    """Show the schema revision of the database and whether it is the latest."""
    with open_store(config_path, url) as store:
        revision = current_revision(store.engine)
        head = head_revision()
        state = "up to date" if revision == head else f"behind (latest is {head}); run `basil db upgrade`"
        click.echo(f"{store!r}: {revision or 'empty'} — {state}")


@db_group.command("history")
def show_history() -> None:
    """List the migrations shipped with this Basil."""
    for revision, doc in history():
        click.echo(f"{revision}  {doc.splitlines()[0] if doc else ''}")


@click.group("token")
def token_group() -> None:
    """Create, list and revoke API tokens (stored hashed; a token is shown only once)."""


def _actor() -> str:
    try:
        return f"cli:{getpass.getuser()}"
    except (KeyError, OSError):
        return "cli"


@token_group.command("create")
@click.argument("name")
@click.option(
    "--role", type=click.Choice(ROLES), required=True, help="viewer reads; operator applies; admin all."
)
@click.option("--expires", default=None, help="Lifetime such as 90d (default: never expires).")
@config_option
@url_option
def token_create(name: str, role: str, expires: str | None, config_path: str | None, url: str | None) -> None:
    """Create the token NAME and print it once: it cannot be shown again."""
    expires_at = None
    if expires:
        try:
            expires_at = datetime.now(UTC) + parse_duration(expires)
        except ValueError as err:
            raise ValidationError([Problem("--expires", str(err))], "option") from err
    with open_store(config_path, url) as store, store.session() as session:
        token, info = create_token(session, name, role, created_by=_actor(), expires_at=expires_at)
        audit.record(session, audit.AuditEntry(_actor(), "cli", "token.create", f"token/{name}", "cli", "ok",
                                               details={"role": role}))  # fmt: skip
    click.echo(token)
    click.echo(
        f"token {info.name!r} ({info.role}) created; copy it now, Basil keeps only a hash of it.", err=True
    )


@token_group.command("list")
@click.option("--json", "as_json", is_flag=True, help="JSON output.")
@config_option
@url_option
def token_list(as_json: bool, config_path: str | None, url: str | None) -> None:
    """List tokens (name, role, state, dates); the tokens themselves are not stored and cannot be shown."""
    with open_store(config_path, url) as store, store.read_session() as session:
        tokens = list_tokens(session)
    if as_json:
        rows = [
            {
                "name": t.name, "role": t.role, "id": t.lookup_id, "active": t.active,
                "created_at": t.created_at.isoformat(), "created_by": t.created_by,
                "expires_at": t.expires_at.isoformat() if t.expires_at else None,
                "last_used_at": t.last_used_at.isoformat() if t.last_used_at else None,
                "revoked_at": t.revoked_at.isoformat() if t.revoked_at else None,
            }
            for t in tokens
        ]  # fmt: skip
        click.echo(json.dumps(rows, indent=2))
        return
    if not tokens:
        click.echo("no tokens; create one with `basil token create NAME --role viewer|operator|admin`")
        return
    click.echo(f"{'NAME':<24} {'ROLE':<9} {'STATE':<8} {'CREATED':<20} LAST USED")
    for t in tokens:
        state = "active" if t.active else ("revoked" if t.revoked_at else "expired")
        used = t.last_used_at.strftime("%Y-%m-%d %H:%M") if t.last_used_at else "never"
        click.echo(f"{t.name:<24} {t.role:<9} {state:<8} {t.created_at:%Y-%m-%d %H:%M}     {used}")


@token_group.command("revoke")
@click.argument("name")
@config_option
@url_option
def token_revoke(name: str, config_path: str | None, url: str | None) -> None:
    """Revoke the token NAME at once."""
    with open_store(config_path, url) as store, store.session() as session:
        revoke_token(session, name)
        audit.record(session, audit.AuditEntry(_actor(), "cli", "token.revoke", f"token/{name}", "cli", "ok"))
    click.echo(f"token {name!r} revoked")
