"""Basil's REST API (Flask): ``create_app(service)`` returns the WSGI app ``basil serve`` runs.

Modules: ``app`` (factory, errors, headers, metrics, audit of refused writes), ``operations`` (how a
route is declared), ``openapi`` (the document built from those declarations), ``schemas``,
``validation``, ``auth`` (API tokens and vCenter sessions), ``context``, ``service`` (the façade's
surface) and ``routes/`` (one blueprint per area).
"""

from basil.api.app import create_app

__all__ = ["create_app"]
