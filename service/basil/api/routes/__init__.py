"""The API's blueprints, one module per area of API-CONTRACT.md; the app factory registers them all."""

from __future__ import annotations

from flask import Blueprint

from basil.api.routes import admin, inventory, plans, pools, schedules, system, vm_capacity, whatif

#: Served under /api/v1.
API_BLUEPRINTS: tuple[Blueprint, ...] = (
    system.bp,
    inventory.bp,
    plans.bp,
    pools.bp,
    schedules.bp,
    admin.bp,
    whatif.bp,
    vm_capacity.bp,
)
#: Served at the root: /metrics for scrapers that do not know the API's prefix.
ROOT_BLUEPRINT: Blueprint = system.root_bp

__all__ = ["API_BLUEPRINTS", "ROOT_BLUEPRINT"]
