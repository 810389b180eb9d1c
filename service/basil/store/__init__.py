"""Basil's store: SQLAlchemy models, Alembic migrations and the repositories the jobs and the API call.

Open it with :class:`Store` (``Store(url)``, ``store.session()`` for a write transaction,
``store.read_session()`` for reads); the repository modules take a ``Session`` and return plain
dataclasses.
"""

from basil.store.engine import Store, StoreUnavailableError, create_store_engine, normalize_url

__all__ = ["Store", "StoreUnavailableError", "create_store_engine", "normalize_url"]
