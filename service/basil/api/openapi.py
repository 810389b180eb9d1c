"""The OpenAPI 3.1 document, built from the app's own URL map and the operations declared on it.

Every rule of the URL map must belong to a declared :class:`~basil.api.operations.Operation` (else
building the document fails, so an undocumented route cannot ship), and only routed operations are
documented. Request schemas that are components are referred to by ``$ref``.
"""

from __future__ import annotations

import re
from typing import Any

from flask import Flask

from basil import __version__
from basil.api import schemas
from basil.api.operations import OPERATIONS, Operation

_RULE_PARAM = re.compile(r"<(?:[a-z]+:)?([A-Za-z_][A-Za-z0-9_]*)>")
_AUTOMATIC_METHODS = {"HEAD", "OPTIONS"}

_STATUS_TEXT = {
    200: "OK",
    201: "Created",
    202: "Accepted: it runs in the background; the Location header says where to follow it",
    204: "No content",
    400: "Invalid request: every problem is listed with its field",
    401: "Not authenticated",
    403: "The caller's role does not allow this",
    404: "Not found",
    409: "Conflicts with the current state (plan state, pool version, ...)",
    413: "Request body too large",
    429: "Too many refused vCenter sessions from this address: retry after Retry-After seconds",
    502: "vCenter refused or failed",
    503: "vCenter or the store cannot be reached",
}


def openapi_path(rule: str) -> str:
    """``/api/v1/plans/<id>`` -> ``/api/v1/plans/{id}``."""
    return _RULE_PARAM.sub(r"{\1}", rule)


def _component_names() -> dict[int, str]:
    return {id(schema): name for name, schema in schemas.COMPONENTS.items()}


def _schema(schema: Any, names: dict[int, str]) -> Any:
    name = names.get(id(schema))
    return schemas.ref(name) if name is not None else schema


def _error(status: int) -> dict[str, Any]:
    return {
        "description": _STATUS_TEXT.get(status, "Error"),
        "content": {"application/json": {"schema": schemas.ref("Error")}},
    }


def _operation_object(op: Operation, names: dict[int, str]) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "operationId": op.endpoint.replace(".", "_"),
        "summary": op.summary,
        "tags": [op.tag],
    }
    if op.description:
        doc["description"] = op.description
    parameters: list[dict[str, Any]] = [
        {"name": name, "in": "path", "required": True, "schema": {"type": "string"}}
        for name in op.path_params
    ]
    for name, schema in op.query.items():
        param_schema = {k: v for k, v in schema.items() if k != "description"}
        entry: dict[str, Any] = {"name": name, "in": "query", "required": False, "schema": param_schema}
        if "description" in schema:
            entry["description"] = schema["description"]
        parameters.append(entry)
    if parameters:
        doc["parameters"] = parameters
    if op.body is not None:
        doc["requestBody"] = {
            "required": op.body_required,
            "content": {"application/json": {"schema": _schema(op.body, names)}},
        }
    success: dict[str, Any] = {"description": _STATUS_TEXT.get(op.status, "OK")}
    if op.headers:
        success["headers"] = {
            name: {"description": text, "schema": {"type": "string"}} for name, text in op.headers.items()
        }
    if op.status != 204 and op.response is not None:
        success["content"] = {op.media_type: {"schema": _schema(op.response, names)}}
    responses: dict[str, Any] = {str(op.status): success}
    statuses = set(op.errors)
    if op.body is not None or op.query:
        statuses.add(400)
    if op.role is not None:
        statuses |= {401, 403, 429}
        doc["security"] = [{"apiToken": []}, {"vcenterSession": [], "vcenterServer": []}]
        doc["x-basil-role"] = op.role
    else:
        doc["security"] = []
    for status in sorted(statuses):
        responses[str(status)] = _error(status)
    doc["responses"] = responses
    return doc


def build_document(app: Flask) -> dict[str, Any]:
    """The OpenAPI 3.1 document of *app*; raises LookupError naming any route that is not declared."""
    names = _component_names()
    paths: dict[str, dict[str, Any]] = {}
    undeclared: list[str] = []
    for rule in app.url_map.iter_rules():
        op = OPERATIONS.get(rule.endpoint)
        if op is None:
            undeclared.append(f"{rule.rule} ({rule.endpoint})")
            continue
        for method in sorted((rule.methods or set()) - _AUTOMATIC_METHODS):
            if method != op.method:
                undeclared.append(f"{method} {rule.rule} ({rule.endpoint})")
                continue
            paths.setdefault(openapi_path(rule.rule), {})[method.lower()] = _operation_object(op, names)
    if undeclared:
        raise LookupError("routes without a declared operation: " + ", ".join(sorted(undeclared)))
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "Basil",
            "version": __version__,
            "summary": "IO load balancing and storage QoS for VMware vSphere",
            "description": (
                "Recommendations and plans of Storage vMotions that balance datastores' IO load (BASIL), "
                "and Storage Resource Pools (reservations, limits, shares). Every route but /api/v1/health "
                "and /api/v1/openapi.json needs an API token (`Authorization: Bearer ...`) or a vSphere "
                "Client session (X-Basil-VC-Session and X-Basil-VC-Server). Roles: viewer reads; operator "
                "also runs recommendations, plans, placement and pools; admin also schedules, jobs, tokens."
            ),
        },
        "servers": [{"url": "/"}],
        "paths": dict(sorted(paths.items())),
        "components": {
            "schemas": schemas.COMPONENTS,
            "securitySchemes": {
                "apiToken": {
                    "type": "http",
                    "scheme": "bearer",
                    "description": "basil token create NAME --role ...",
                },
                "vcenterSession": {
                    "type": "apiKey",
                    "in": "header",
                    "name": "X-Basil-VC-Session",
                    "description": "the vSphere Client's session token, checked with vCenter (clone ticket)",
                },
                "vcenterServer": {
                    "type": "apiKey",
                    "in": "header",
                    "name": "X-Basil-VC-Server",
                    "description": "the vCenter the session belongs to (its configured name or host[:port])",
                },
            },
        },
    }


def document(app: Flask) -> dict[str, Any]:
    """The document of *app*, built once."""
    cached: dict[str, Any] | None = app.extensions.get("basil.openapi")
    if cached is None:
        cached = build_document(app)
        app.extensions["basil.openapi"] = cached
    return cached
