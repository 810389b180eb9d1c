"""Pods, datastores, VMs and disks: the inventory as Basil models it (reads only)."""

from __future__ import annotations

from typing import Any

from flask import Blueprint

from basil.api import schemas as s
from basil.api.answers import APPLIED, DEVICE_SAMPLES, JOB_RUNS, Cached
from basil.api.context import current_service
from basil.api.operations import operation, query_args
from basil.app.lists import DEFAULT_LIMIT, FILTERS, MAX_LIMIT, sort_values
from basil.app.view_cache import CONFIG, FITS, PLANS, PREDICTIONS, RECOMMENDATIONS, ROUNDS, SAMPLES, SRP_POOLS

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

# What the cached answers are built from (basil.api.answers; the inventories always count).
#: A pod's view (basil.app.views._pod_basis).
_POD = Cached(FITS + PLANS + RECOMMENDATIONS + PREDICTIONS, (SAMPLES, ROUNDS, CONFIG))
#: Modelling runs within the last hours: built again every few seconds as the window moves.
_RUNS = Cached(JOB_RUNS, (CONFIG,), max_age_s=5.0)

_FILTER_DOCS = {
    "pod": "only objects in this pod (by name; a VM is in the pods of its disks' datastores)",
    "datastore": "only objects on this datastore (id, or name)",
    "vm": "only the disks of this VM (id, or name)",
    "q": "name contains this text, case-insensitively (disks: the VM's name, the disk's label or unit)",
    "tag": "only objects carrying this vSphere tag, as category/name or name (disks: their VM's tags)",
}


def _list_query(kind: str) -> dict[str, s.Schema]:
    """The query parameters of a list: its filters, sort, limit and cursor (see basil.app.lists)."""
    query: dict[str, s.Schema] = {
        name: {"type": "string", "minLength": 1, "maxLength": 200, "description": _FILTER_DOCS[name]}
        for name in FILTERS[kind]
    }
    query["sort"] = {
        "type": "string",
        "enum": sort_values(kind),
        "default": "name",
        "description": "sort key, descending with a leading '-'; unknown values sort last",
    }
    query["limit"] = {
        "type": "integer",
        "minimum": 1,
        "maximum": MAX_LIMIT,
        "default": DEFAULT_LIMIT,
        "description": "items per page",
    }
    query["cursor"] = {
        "type": "string",
        "minLength": 1,
        "maxLength": 2000,
        "description": "next_cursor of the previous page (opaque; made for this list and sort order)",
    }
    return query


@operation(
    bp, "GET", "/datastores", summary="Datastores, filtered, sorted and paged", role="viewer",
    response=s.list_page("DatastoreListItem"), query=_list_query("datastores"), errors=(400,),
)  # fmt: skip
def datastores() -> Any:
    """Every datastore of the configured vCenters with its pod, capacity, latency, IOPS, N and P."""
    return current_service().inventory_list("datastores", query_args())


@operation(
    bp, "GET", "/vms", summary="VMs, filtered, sorted and paged", role="viewer",
    response=s.list_page("VMListItem"), query=_list_query("vms"), errors=(400,),
)  # fmt: skip
def vms() -> Any:
    """Every VM with its pod, the datastores its disks are on and its number of disks."""
    return current_service().inventory_list("vms", query_args())


@operation(
    bp, "GET", "/disks", summary="Virtual disks, filtered, sorted and paged", role="viewer",
    response=s.list_page("DiskListItem"), query=_list_query("disks"), errors=(400,),
)  # fmt: skip
def disks() -> Any:
    """Every virtual disk with its VM, datastore, size, newest IOPS and latency and its load L."""
    return current_service().inventory_list("disks", query_args())


@operation(
    bp,
    "GET",
    "/pods",
    summary="Pods (load-balancing domains)",
    role="viewer",
    response=s.array(s.ref("Pod")),
    cache=_POD,
)
def pods() -> Any:
    """Every pod with its datastores, imbalance, pending moves and last recommendation."""
    return current_service().pods()


@operation(
    bp,
    "GET",
    "/pods/{pod}",
    summary="One pod",
    role="viewer",
    response=s.ref("Pod"),
    errors=(404,),
    cache=_POD,
)
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
    cache=_RUNS,
)
def pod_history(pod: str) -> Any:
    """The pod's imbalance and each datastore's normalized load N over the last hours."""
    return current_service().pod_history(pod, query_args()["hours"])


@operation(
    bp, "GET", "/datastores/{id}", summary="One datastore and its device model", role="viewer",
    response=s.ref("Datastore"), errors=(404,), cache=Cached(FITS, (SAMPLES, CONFIG)),
)  # fmt: skip
def datastore(id: str) -> Any:
    """DatastoreSummary plus the device model: P = 1/slope, fit quality, points used."""
    return current_service().datastore(id)


@operation(
    bp, "GET", "/datastores/{id}/model/points", summary="The samples behind the device model", role="viewer",
    response=s.array(s.ref("ModelPoint")), query=_HISTORY, errors=(400, 404),
    cache=Cached(DEVICE_SAMPLES, (SAMPLES,)),
)  # fmt: skip
def datastore_points(id: str) -> Any:
    """The <OIO, latency> scatter the device model is fitted to (BASIL §4)."""
    return current_service().datastore_points(id, query_args()["hours"])


@operation(
    bp, "GET", "/datastores/{id}/load", summary="Normalized load over time", role="viewer",
    response=s.array(s.ref("LoadPoint")), query=_HISTORY, errors=(400, 404), cache=_RUNS,
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
    cache=Cached(FITS + APPLIED + SRP_POOLS, (SAMPLES, CONFIG)),
)
def vm(id: str) -> Any:
    """The VM's disks with their workload models, pool membership and SRP settings."""
    return current_service().vm(id)


@operation(
    bp, "GET", "/disks/{id}/model", summary="A disk's workload model over time", role="viewer",
    response=s.ref("DiskModel"), query=_HISTORY, errors=(400, 404), cache=Cached(FITS, max_age_s=5.0),
)  # fmt: skip
def disk_model(id: str) -> Any:
    """The four workload parameters' 90th percentiles and the load L over time (BASIL eq. 1)."""
    return current_service().disk_model(id, query_args()["hours"])
