"""Alembic's environment and Basil's migrations (run through :mod:`basil.store.migrate`)."""
