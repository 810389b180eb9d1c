"""Basil: automatic IO load balancing and storage QoS for VMware vSphere.

The pure decision core (workload and device models, the load balancer, Storage Resource Pools)
lives in :mod:`basil.core` and :mod:`basil.srp`; everything that talks to vCenter, a database or
the web sits in its own edge package around it.
"""

__version__ = "0.1.0"
