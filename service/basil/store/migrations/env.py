"""Alembic environment: migrate the engine :mod:`basil.store.migrate` hands over, or render SQL offline."""

from __future__ import annotations

from alembic import context

from basil.store.models import Base

config = context.config


def run_offline() -> None:
    context.configure(
        url=config.get_main_option("sqlalchemy.url"),
        target_metadata=Base.metadata,
        literal_binds=True,
        render_as_batch=True,
    )
    with context.begin_transaction():
        context.run_migrations()


def run_online() -> None:
    engine = config.attributes.get("engine")
    if engine is None:
        raise RuntimeError("run Basil's migrations with `basil db upgrade`, not the alembic command")
    with engine.begin() as connection:
        # Batch mode lets later migrations alter SQLite tables (copy-and-move), PostgreSQL ignores it.
        context.configure(connection=connection, target_metadata=Base.metadata, render_as_batch=True)
        with context.begin_transaction():
            context.run_migrations()


if context.is_offline_mode():
    run_offline()
else:
    run_online()
