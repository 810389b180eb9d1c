"""Pods, Basil's load-balancing domains: each configured pod resolved to datastores of the current inventory.

A pod names a datastore cluster (``StoragePod``), an explicit list of datastores, or a vSphere tag
(``category/name``); names or managed object ids are accepted for clusters and datastores. What is
configured but absent from vCenter is reported, not fatal: the pod balances what it can find.
"""

from __future__ import annotations

from dataclasses import dataclass

from basil.config import PodConfig
from basil.vcenter.types import Inventory


@dataclass(frozen=True)
class ResolvedPod:
    """A pod as it is now: its configuration and the moids of its datastores (sorted)."""

    config: PodConfig
    datastores: tuple[str, ...]
    missing: tuple[str, ...] = ()  # what the configuration names and vCenter does not have
    storage_pod: str | None = None  # the datastore cluster's moid, for a pod configured as one

    @property
    def name(self) -> str:
        return self.config.name

    @property
    def vcenter(self) -> str:
        return self.config.vcenter


def resolve_pod(pod: PodConfig, inventory: Inventory) -> ResolvedPod:
    """The datastores *pod* means in *inventory*."""
    found: set[str] = set()
    missing: list[str] = []
    storage_pod: str | None = None
    if pod.datastore_cluster:
        cluster = next(
            (p for p in inventory.pods.values() if pod.datastore_cluster in (p.name, p.moid)),
            None,
        )
        if cluster is None:
            missing.append(f"datastore cluster {pod.datastore_cluster}")
        else:
            storage_pod = cluster.moid
            found.update(ds for ds in cluster.datastores if ds in inventory.datastores)
    elif pod.datastores:
        by_name = {ds.name: ds.moid for ds in inventory.datastores.values()}
        for name in pod.datastores:
            moid = name if name in inventory.datastores else by_name.get(name)
            if moid is None:
                missing.append(f"datastore {name}")
            else:
                found.add(moid)
    elif pod.tag:
        tagged = [m for m in inventory.tagged(pod.tag) if m in inventory.datastores]
        if inventory.tags_error:
            missing.append(f"datastores tagged {pod.tag} (tags cannot be read: {inventory.tags_error})")
        elif not tagged:
            missing.append(f"datastores tagged {pod.tag}")
        found.update(tagged)
    return ResolvedPod(pod, tuple(sorted(found)), tuple(missing), storage_pod)


def pod_of_datastore(pods: list[ResolvedPod], vcenter: str, datastore: str) -> ResolvedPod | None:
    """The pod a datastore belongs to (the first, should the configuration let two claim it)."""
    return next((p for p in pods if p.vcenter == vcenter and datastore in p.datastores), None)


def overlapping_pods(pods: list[ResolvedPod]) -> list[str]:
    """A sentence for each two pods of one vCenter that resolved to shared datastores (a datastore
    cluster and a list naming its members, say): each would balance them its own way."""
    found: list[str] = []
    for i, a in enumerate(pods):
        for b in pods[i + 1 :]:
            shared = sorted(set(a.datastores) & set(b.datastores)) if a.vcenter == b.vcenter else []
            if shared:
                found.append(
                    f"pods {a.name} and {b.name} share datastores {', '.join(shared)} on {a.vcenter}"
                )
    return found
