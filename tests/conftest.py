"""Shared pytest configuration; each area's fixtures live in a plugin module of their own."""

pytest_plugins = ["tests.fixtures_store"]
