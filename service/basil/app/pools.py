"""SRP pool tree documents: one tree per datastore (as in the paper's prototype), checked against vCenter.

A document, as the API takes it::

    {"name": "gold-ds1", "datastore": "ds1" | "datastore-42", "vcenter": "lab" (optional),
     "sioc": true,                                   # enable SIOC with L_c as its threshold
     "root": {"reservation", "limit", "shares"},     # optional
     "pools": [{"name": "gold", "shares": "high", "children": [{"vm": "db-1", "reservation": 400},
                                                                {"vm": "web-2", "disk": "scsi0:1"},
                                                                {"tag": "qos/gold", "limit": 800}]}]}

Leaves name VMs by name or moid, or by a vSphere tag (``category/name``: every VM carrying it, from
the inventory's tags); the tree is built over moids so that demand, results and settings key on what
vCenter keys on. Tag leaves are expanded again at every validation, so the SRP loop follows tags as
they are attached and removed. Validation reports every problem at once: the document's shape, the
tree's own rules (:func:`basil.srp.pools_file.pools_from_data`, admission control against the
datastore's reservable IOPS when configured, tag conflicts), unknown datastores, VMs and tags, and a
second tree on a datastore that has one.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from basil.errors import Problem
from basil.srp.pools_file import pools_from_data
from basil.srp.tree import PoolTree
from basil.vcenter.types import Inventory

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,62}")
_KEYS = {"name", "datastore", "vcenter", "sioc", "root", "pools", "version"}


@dataclass(frozen=True)
class PoolDocument:
    """A validated pool tree document and the tree built from it (VMs as moids)."""

    name: str
    vcenter: str
    datastore: str  # moid
    sioc: bool
    tree: PoolTree
    document: dict[str, Any]  # as given (VM names kept), minus ``version``
    vm_names: Mapping[str, str]  # moid -> name, for the read models


def vm_tags(inventory: Inventory) -> dict[str, tuple[str, ...]]:
    """Every tag of the inventory (``category/name``) and the moids of the VMs carrying it (sorted)."""
    out: dict[str, list[str]] = {tag.path: [] for tag in inventory.tags.values()}
    for moid, ids in inventory.tag_assignments.items():
        if moid not in inventory.vms:
            continue  # tags on datastores do not make VMs members
        for tag_id in dict.fromkeys(ids):
            tag = inventory.tags.get(tag_id)
            if tag is not None:
                out[tag.path].append(moid)
    return {path: tuple(sorted(moids)) for path, moids in out.items()}


def _walk_leaves(nodes: Any, path: str, visit: Any) -> None:
    if not isinstance(nodes, list):
        return
    for i, node in enumerate(nodes):
        if not isinstance(node, dict):
            continue
        here = f"{path}[{i}]"
        if "vm" in node:
            visit(node, here)
        if "children" in node:
            _walk_leaves(node["children"], f"{here}.children", visit)


def parse_pool_document(  # noqa: PLR0912, PLR0915 - every field checked, all problems reported
    doc: Any,
    inventories: Mapping[str, Inventory],
    *,
    default_vcenter: str,
    reservable_iops: Mapping[str, float],
    taken: Mapping[tuple[str, str], str],
    name: str | None = None,
) -> tuple[PoolDocument | None, list[Problem]]:
    """Validate *doc*; *taken* maps (vcenter, datastore moid) to the tree already on it."""
    problems: list[Problem] = []
    if not isinstance(doc, dict):
        return None, [Problem("", "must be an object with name, datastore, root and pools")]
    for key in sorted(set(doc) - _KEYS):
        problems.append(
            Problem(str(key), "unknown field (expected name, datastore, vcenter, sioc, root, pools)")
        )
    tree_name = doc.get("name", name)
    if name is not None and doc.get("name", name) != name:
        problems.append(Problem("name", f"is {doc.get('name')!r}, but the tree being replaced is {name!r}"))
    if not isinstance(tree_name, str) or not _NAME.fullmatch(tree_name):
        problems.append(Problem("name", "must be set: letters, digits, '.', '_' and '-' (at most 63)"))
        tree_name = ""
    vcenter = doc.get("vcenter", default_vcenter)
    inventory = inventories.get(vcenter) if isinstance(vcenter, str) else None
    if inventory is None:
        problems.append(Problem("vcenter", f"{vcenter!r} is not a configured, connected vCenter"))
    sioc = doc.get("sioc", False)
    if not isinstance(sioc, bool):
        problems.append(Problem("sioc", "must be true or false"))
        sioc = False
    datastore = ""
    ds_text = doc.get("datastore")
    if not isinstance(ds_text, str) or not ds_text:
        problems.append(
            Problem("datastore", "must name the datastore the tree controls (one tree per datastore)")
        )
    elif inventory is not None:
        match = next((d for d in inventory.datastores.values() if ds_text in (d.name, d.moid)), None)
        if match is None:
            problems.append(Problem("datastore", f"no datastore {ds_text!r} in vCenter {vcenter}"))
        else:
            datastore = match.moid
            other = taken.get((str(vcenter), datastore))
            if other is not None and other != tree_name:
                problems.append(Problem("datastore", f"{match.name} already has pool tree {other!r}"))
    tree_data = {k: copy.deepcopy(doc[k]) for k in ("root", "pools") if k in doc}
    names: dict[str, str] = {}
    if inventory is not None:
        by_name = {vm.name: vm.moid for vm in inventory.vms.values()}

        def to_moid(node: dict[str, Any], where: str) -> None:
            ref = node.get("vm")
            if not isinstance(ref, str) or not ref:
                return  # the tree's own validation names it
            moid = ref if ref in inventory.vms else by_name.get(ref)
            if moid is None:
                problems.append(Problem(f"{where}.vm", f"no VM {ref!r} in vCenter {vcenter}"))
                return
            vm = inventory.vms[moid]
            disk = node.get("disk")
            if isinstance(disk, str) and not any(d.instance == disk for d in vm.disks):
                problems.append(Problem(f"{where}.disk", f"VM {vm.name} has no disk {disk}"))
            names[moid] = vm.name
            node["vm"] = moid

        _walk_leaves(tree_data.get("pools"), "pools", to_moid)
    ds_name = inventory.datastores[datastore].name if inventory is not None and datastore else ""
    capacity = reservable_iops.get(ds_name) if ds_name else None
    tags = vm_tags(inventory) if inventory is not None else None
    labels = {moid: vm.name for moid, vm in inventory.vms.items()} if inventory is not None else None
    tree, tree_problems = pools_from_data(tree_data, capacity, source="pools", tags=tags, labels=labels)
    if tree is not None and labels is not None:
        names.update((moid, labels[moid]) for moid in tree.vm_names() if moid in labels)
    # pools_from_data prefixes its fields with the source; the API's fields are the document's own.
    problems += [Problem(p.field.removeprefix("pools:"), p.message) for p in tree_problems]
    if problems or tree is None:
        return None, problems
    document = {k: v for k, v in doc.items() if k != "version"}
    document.setdefault("vcenter", vcenter)
    return PoolDocument(tree_name, str(vcenter), datastore, bool(sioc), tree, document, names), []
