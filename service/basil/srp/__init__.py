"""The pure Storage Resource Pools core: pool tree, demand, divvy, array capacity, entitlements.

Like :mod:`basil.core` it works on plain data only and imports no vCenter, database or web code.
"""
