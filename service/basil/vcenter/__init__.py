"""Basil's only door to vCenter: connection, inventory, tags, performance collection and actions.

Modules: ``types`` (plain data, no pyVmomi), ``connection``, ``inventory``, ``tags``, ``perf``,
``actions``, ``actuator``, ``errors``, ``settings``. This package module imports none of them, so
``basil.vcenter.types`` and ``basil.vcenter.errors`` stay usable without loading the vSphere SDKs.
"""
