"""Storage Resource Pools: the pool trees (validated, versioned) and their live entitlements."""

from __future__ import annotations

from typing import Any

from flask import Blueprint

from basil.api import schemas as s
from basil.api.answers import Cached
from basil.api.context import current_actor, current_service
from basil.api.operations import json_body, operation, query_args
from basil.app.view_cache import SRP_POOLS
from basil.errors import Problem, ValidationError

bp = Blueprint("pools", __name__)


@operation(
    bp, "GET", "/pools", summary="Pool trees", role="viewer", response=s.array(s.ref("PoolTree")),
    cache=Cached(SRP_POOLS),
)  # fmt: skip
def pools() -> Any:
    """Every SRP pool tree with its datastore and version."""
    return current_service().pools()


@operation(
    bp, "POST", "/pools", summary="Create a pool tree", role="operator", body=s.POOL_DOCUMENT,
    response=s.ref("PoolTree"), status=201, errors=(400, 409), action="pool.create", target="pools",
)  # fmt: skip
def create_pool() -> Any:
    """Validated in full first: a 400 lists every problem (cycles, reservation above limit, unknown VMs)."""
    return current_service().create_pool(json_body(), current_actor())


@operation(
    bp, "POST", "/pools/validate", summary="Validate a pool tree without saving it", role="viewer",
    body=s.POOL_DOCUMENT, response=s.ref("PoolProblems"), errors=(400,),
)  # fmt: skip
def validate_pool() -> Any:
    """Every problem of the document, or none; nothing is saved."""
    found = current_service().validate_pool(json_body())
    return {"valid": not found, "problems": [{"field": p.field, "message": p.message} for p in found]}


@operation(
    bp,
    "GET",
    "/pools/{name}",
    summary="One pool tree",
    role="viewer",
    response=s.ref("PoolTree"),
    errors=(404,),
)
def pool(name: str) -> Any:
    """The tree as saved, with its version (send it back with PUT)."""
    return current_service().pool(name)


@operation(
    bp, "PUT", "/pools/{name}", summary="Replace a pool tree", role="operator", body=s.POOL_REPLACE,
    response=s.ref("PoolTree"), errors=(400, 404, 409), action="pool.replace", target="pool {name}",
)  # fmt: skip
def replace_pool(name: str) -> Any:
    """Optimistic concurrency: ``version`` must be the one read, else 409 and nothing changes."""
    doc = dict(json_body())
    if doc.get("name") != name:
        raise ValidationError(
            [Problem("name", f"must be {name!r}, the pool named in the path")], "request body"
        )
    version = int(doc.pop("version"))
    return current_service().replace_pool(name, doc, version, current_actor())


_VERSION = {"type": "integer", "minimum": 1, "description": "409 unless this is the current version"}


@operation(
    bp, "DELETE", "/pools/{name}", summary="Delete a pool tree", role="operator", status=204,
    query={"version": _VERSION},
    errors=(404, 409), action="pool.delete", target="pool {name}",
)  # fmt: skip
def delete_pool(name: str) -> Any:
    """The tree goes; the per-disk settings it made stay until changed (the SRP loop stops managing them)."""
    current_service().delete_pool(name, current_actor(), query_args().get("version"))
    return None


@operation(
    bp, "GET", "/pools/{name}/entitlements", summary="Live entitlements", role="viewer",
    response=s.ref("Entitlements"), errors=(404,),
)  # fmt: skip
def entitlements(name: str) -> Any:
    """Per VM and disk: reservation, limit, shares, entitlement, demand and the settings last applied."""
    return current_service().entitlements(name)
