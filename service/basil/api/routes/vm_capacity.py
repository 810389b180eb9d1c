"""A VM's request trace and the SRP reservation it suggests (Lu's capacity search, issue 16).

The trace is planned once on upload and only the answer is kept (:mod:`basil.app.vm_capacity`).
"""

from __future__ import annotations

from typing import Any

from flask import Blueprint

from basil.api import schemas as s
from basil.api.context import current_actor, current_service
from basil.api.operations import json_body, operation
from basil.api.routes.whatif import CAPACITY_QUESTION
from basil.app import vm_capacity
from basil.app.service import Service
from basil.errors import BasilError

bp = Blueprint("vm_capacity", __name__)

_N_LIMIT = {**s.N_NUMBER, "description": "IOPS; null when unlimited"}

_SRP = {
    "type": ["object", "null"],
    "description": "the VM's place in the first pool tree (by name) holding it; null when none does",
    "required": ["pool_tree", "datastore", "pool", "reservation", "limit", "shares", "leaves", "dynamic"],
    "properties": {
        "pool_tree": s.STRING,
        "datastore": s.STRING,
        "pool": {**s.N_STRING, "description": "the pool the VM's leaf hangs from (null: the root, or mixed)"},
        "reservation": {**s.NUMBER, "description": "IOPS the tree reserves for the VM (its leaves' sum)"},
        "limit": _N_LIMIT,
        "shares": s.NUMBER,
        "leaves": s.array(
            {
                "type": "object",
                "required": ["leaf", "pool", "reservation", "limit", "shares"],
                "properties": {
                    "leaf": s.STRING,
                    "disk": s.N_STRING,
                    "pool": s.N_STRING,
                    "reservation": s.NUMBER,
                    "limit": _N_LIMIT,
                    "shares": s.NUMBER,
                },
            }
        ),
        "dynamic": {
            "type": ["object", "null"],
            "description": "the SRP loop's last control step for the VM (null before the first)",
            "properties": {
                "reservation": s.NUMBER,
                "limit": _N_LIMIT,
                "shares": s.NUMBER,
                "entitlement": s.NUMBER,
                "demand": s.NUMBER,
                "computed_at": s.N_TIME,
            },
        },
    },
}

_SUGGESTION = {
    "type": ["object", "null"],
    "description": "null until a trace was uploaded for the VM",
    "required": [
        "reservation_iops",
        "rounding",
        "fraction",
        "bound_ms",
        "capacity_iops",
        "capacity_full_iops",
        "curve",
        "trace",
        "uploaded_at",
        "uploaded_by",
    ],
    "properties": {
        "reservation_iops": {**s.INTEGER, "description": "capacity_iops rounded up to a whole IOPS"},
        "rounding": s.STRING,
        "fraction": s.NUMBER,
        "bound_ms": s.NUMBER,
        "capacity_iops": {**s.NUMBER, "description": "the least capacity for the fraction within the bound"},
        "capacity_full_iops": {**s.NUMBER, "description": "the least capacity for every IO within the bound"},
        "overflow_fraction": s.N_NUMBER,
        "curve": s.array(
            {
                "type": "object",
                "required": ["fraction", "capacity_iops"],
                "properties": {"fraction": s.NUMBER, "capacity_iops": s.NUMBER},
            }
        ),
        "trace": {
            "type": "object",
            "properties": {
                "requests": s.INTEGER,
                "duration_s": s.NUMBER,
                "mean_iops": s.N_NUMBER,
                "read_fraction": s.N_NUMBER,
                "mean_size_bytes": s.N_NUMBER,
                "reordered": s.BOOLEAN,
                "format": s.STRING,
            },
        },
        "uploaded_at": s.N_TIME,
        "uploaded_by": s.STRING,
    },
}

RESERVATION: dict[str, Any] = {
    "type": "object",
    "required": ["vm", "vm_name", "suggestion", "srp", "meets_target"],
    "properties": {
        "vm": s.STRING,
        "vm_name": s.STRING,
        "suggestion": _SUGGESTION,
        "srp": _SRP,
        "meets_target": {
            **s.nullable("boolean"),
            "description": "whether the tree's reservation is at least the capacity for the target "
            "(null without a trace or a pool tree)",
        },
    },
}


def _service() -> Service:
    svc = current_service()
    if not isinstance(svc, Service):  # reads the inventory, the pool trees and the store
        raise BasilError("VM traces need the full service")
    return svc


@operation(
    bp, "PUT", "/vms/{id}/trace", summary="Upload a VM's request trace and target", role="operator",
    body=CAPACITY_QUESTION, response=RESERVATION, errors=(400, 404, 413),
    action=vm_capacity.UPLOAD_ACTION, target="vm {id}",
)  # fmt: skip
def put_vm_trace(id: str) -> Any:
    """The trace (SPC or CSV, as for ``POST /capacity``) is planned once for the target; the answer
    replaces the VM's previous one and the trace is not kept. Answers the VM's reservation suggestion."""
    return vm_capacity.upload_trace(_service(), id, json_body(), current_actor())


@operation(
    bp, "GET", "/vms/{id}/reservation", summary="A VM's suggested SRP reservation", role="viewer",
    response=RESERVATION, errors=(404,),
)  # fmt: skip
def vm_reservation(id: str) -> Any:
    """The reservation that meets the target of the VM's uploaded trace, beside its pool settings."""
    return vm_capacity.reservation(_service(), id)


@operation(
    bp, "DELETE", "/vms/{id}/trace", summary="Forget a VM's trace answer", role="operator", status=204,
    errors=(404,), action=vm_capacity.DELETE_ACTION, target="vm {id}",
)  # fmt: skip
def delete_vm_trace(id: str) -> Any:
    """The kept capacity of the VM goes; 404 when none was kept."""
    vm_capacity.delete_trace(_service(), id, current_actor())
    return None
