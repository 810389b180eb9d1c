"""Pods, datastores, VMs and disks: the inventory as Basil models it (reads only)."""

from __future__ import annotations

from typing import Any

from flask import Blueprint

from basil.api import schemas as s
from basil.api.context import current_service
from basil.api.operations import operation, query_args

bp = Blueprint("inventory", __name__)

#: History windows: a day by default, at most the 90 days hourly rollups are kept by default.
HOURS = {
    "type": "number",
    "exclusiveMinimum": 0,
    "maximum": 2160,
    "default": 24,
    "description": "hours of history",
}
_HISTORY = {"hours": HOURS}


@operation(
    bp, "GET", "/pods", summary="Pods (load-balancing domains)", role="viewer", response=s.array(s.ref("Pod"))
)
def pods() -> Any:
    """Every pod with its datastores, imbalance, pending moves and last recommendation."""
    return current_service().pods()


@operation(bp, "GET", "/pods/{pod}", summary="One pod", role="viewer", response=s.ref("Pod"), errors=(404,))
def pod(pod: str) -> Any:
    """One pod with its datastores and its recent and pending moves."""
    return current_service().pod(pod)


@operation(
    bp,
    "GET",
    "/pods/{pod}/history",
    summary="Imbalance and normalized loads over time",
    role="viewer",
    response=s.ref("PodHistory"),
    query=_HISTORY,
    errors=(400, 404),
)
def pod_history(pod: str) -> Any:
    """The pod's imbalance and each datastore's normalized load N over the last hours."""
    return current_service().pod_history(pod, query_args()["hours"])


@operation(
    bp, "GET", "/datastores/{id}", summary="One datastore and its device model", role="viewer",
    response=s.ref("Datastore"), errors=(404,),
)  # fmt: skip
def datastore(id: str) -> Any:
    """DatastoreSummary plus the device model: P = 1/slope, fit quality, points used."""
    return current_service().datastore(id)


@operation(
    bp, "GET", "/datastores/{id}/model/points", summary="The samples behind the device model", role="viewer",
    response=s.array(s.ref("ModelPoint")), query=_HISTORY, errors=(400, 404),
)  # fmt: skip
def datastore_points(id: str) -> Any:
    """The <OIO, latency> scatter the device model is fitted to (BASIL §4)."""
    return current_service().datastore_points(id, query_args()["hours"])


@operation(
    bp, "GET", "/datastores/{id}/load", summary="Normalized load over time", role="viewer",
    response=s.array(s.ref("LoadPoint")), query=_HISTORY, errors=(400, 404),
)  # fmt: skip
def datastore_load(id: str) -> Any:
    """The datastore's normalized load N = ΣL / P over the last hours."""
    return current_service().datastore_load(id, query_args()["hours"])


@operation(
    bp,
    "GET",
    "/vms/{id}",
    summary="One VM with its disks",
    role="viewer",
    response=s.ref("VM"),
    errors=(404,),
)
def vm(id: str) -> Any:
    """The VM's disks with their workload models, pool membership and SRP settings."""
    return current_service().vm(id)


@operation(
    bp, "GET", "/disks/{id}/model", summary="A disk's workload model over time", role="viewer",
    response=s.ref("DiskModel"), query=_HISTORY, errors=(400, 404),
)  # fmt: skip
def disk_model(id: str) -> Any:
    """The four workload parameters' 90th percentiles and the load L over time (BASIL eq. 1)."""
    return current_service().disk_model(id, query_args()["hours"])
