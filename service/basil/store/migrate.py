"""Alembic, driven from Python: the migrations ship inside the package, so an installed Basil can migrate.

``basil db upgrade`` and :meth:`basil.store.engine.Store.upgrade` both come here; there is no
``alembic.ini`` to find, the script location is the package resource ``basil.store:migrations``.
"""

from __future__ import annotations

import io

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Engine

SCRIPT_LOCATION = "basil.store:migrations"


def alembic_config(
    engine: Engine | None = None, *, url: str = "", output: io.StringIO | None = None
) -> Config:
    """An Alembic Config for Basil's migrations, run on *engine* (or, offline, rendered for *url*)."""
    config = Config(output_buffer=output) if output is not None else Config()
    config.set_main_option("script_location", SCRIPT_LOCATION)
    if url:
        config.set_main_option("sqlalchemy.url", url)
    config.attributes["engine"] = engine
    return config


def upgrade(engine: Engine, revision: str = "head") -> None:
    command.upgrade(alembic_config(engine), revision)


def downgrade(engine: Engine, revision: str) -> None:
    command.downgrade(alembic_config(engine), revision)


def upgrade_sql(url: str, revision: str = "head") -> str:
    """The SQL an upgrade to *revision* would run on an empty database of *url*'s kind (for a DBA to read)."""
    buffer = io.StringIO()
    command.upgrade(alembic_config(url=url, output=buffer), revision, sql=True)
    return buffer.getvalue()


def current_revision(engine: Engine) -> str | None:
    with engine.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()


def head_revision() -> str:
    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    if head is None:  # pragma: no cover - the package always ships revision 0001
        raise RuntimeError("no migration found in basil.store.migrations")
    return head


def history() -> list[tuple[str, str]]:
    """(revision, description) of every migration, oldest first."""
    script = ScriptDirectory.from_config(alembic_config())
    return [(rev.revision, rev.doc or "") for rev in reversed(list(script.walk_revisions()))]
