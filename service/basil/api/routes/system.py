"""Health, the OpenAPI document, Prometheus metrics, the configured vCenters and who the caller is."""

from __future__ import annotations

from typing import Any

from flask import Blueprint, Response, current_app, g

from basil.api import schemas as s
from basil.api.context import current_service, current_state
from basil.api.metrics import CONTENT_TYPE
from basil.api.operations import operation

bp = Blueprint("system", __name__)
root_bp = Blueprint("root", __name__)


@operation(bp, "GET", "/health", summary="Service health", role=None, response=s.ref("Health"))
def health() -> Any:
    """Whether the scheduler, the store and each vCenter connection are up; needs no authentication."""
    return current_service().health()


@operation(
    bp,
    "GET",
    "/openapi.json",
    summary="This API's OpenAPI 3.1 document",
    role=None,
    response={"type": "object"},
)
def openapi_document() -> Any:
    """The normative description of every route of this service."""
    from basil.api.openapi import document  # noqa: PLC0415 (it walks the app's routes: no import cycle)

    return document(current_app)


def _metrics_text() -> Response:
    text = current_state().metrics.exposition() + current_service().metrics()
    return Response(text, mimetype=None, content_type=CONTENT_TYPE)


_METRICS = {"type": "string", "description": "Prometheus text exposition format 0.0.4"}


@operation(
    bp,
    "GET",
    "/metrics",
    summary="Prometheus metrics",
    role="viewer",
    response=_METRICS,
    media_type="text/plain",
)
def metrics() -> Response:
    """The web layer's request metrics and the service's own (jobs, collection, plans, SRP)."""
    return _metrics_text()


@operation(
    root_bp,
    "GET",
    "/metrics",
    summary="Prometheus metrics (for scrapers, with a token)",
    role="viewer",
    response=_METRICS,
    media_type="text/plain",
)
def root_metrics() -> Response:
    """The same figures as /api/v1/metrics."""
    return _metrics_text()


@operation(bp, "GET", "/me", summary="Who the caller is", role="viewer", response=s.ref("Me"))
def me() -> Any:
    """The caller's name, role and how it authenticated (API token or vCenter session)."""
    principal = g.principal
    return {"name": principal.name, "role": principal.role, "via": principal.via}


@operation(
    bp, "GET", "/vcenters", summary="Configured vCenters", role="viewer", response=s.array(s.ref("VCenter"))
)
def vcenters() -> Any:
    """Each configured vCenter with its connection state and last collection."""
    return current_service().vcenters()
