"""The application layer of the Basil service: pipeline, planner, SRP control loop, read models and jobs.

:class:`basil.app.service.Service` is the one façade the web layer calls; everything else here is
what it is built from, one module per concept.
"""

from basil.app.actor import SYSTEM, Actor
from basil.app.service import Service

__all__ = ["SYSTEM", "Actor", "Service"]
