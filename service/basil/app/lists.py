"""The inventory as lists: datastores, VMs and disks, filtered, sorted and paged by cursor.

Rows are built from the inventories the ``/datastores/{id}`` and ``/vms/{id}`` views read (as last
polled, never waiting for vCenter), the newest samples and the current models, once per change of
those (:mod:`basil.app.view_cache`), and sorted once per sort order; a request filters and pages that
sorted list without asking the store anything.

Paging is by key, not by offset: a cursor holds the sort order and the sort key and id of the last
item returned, and the next page starts strictly after that key. An object added or removed between
two requests therefore shifts nothing: every object present for the whole walk is returned exactly
once, an object added behind the cursor is not returned, one added ahead of it is. The cursor is
opaque to clients (URL-safe base64 of a small JSON document); one made for another list or another
sort order is refused with 400 naming ``cursor``.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from basil.app.pods import ResolvedPod
from basil.app.view_cache import CONFIG, FITS, SAMPLES, Basis
from basil.app.views import pod_state
from basil.errors import BasilError, NotFoundError, Problem, ValidationError
from basil.store.samples import DiskRef
from basil.vcenter.types import Inventory

if TYPE_CHECKING:
    from basil.app.service import Service

GB = 2**30
DEFAULT_LIMIT = 50
MAX_LIMIT = 500

#: The sort keys of each list (each also descending with a leading "-"). Numeric keys put unknown
#: values (no sample, no model yet) last in both directions.
SORT_KEYS: dict[str, tuple[str, ...]] = {
    "datastores": (
        "name",
        "latency_ms",
        "iops",
        "normalized_load",
        "load_sum_L",
        "P",
        "free_gb",
        "capacity_gb",
    ),
    "vms": ("name", "disks", "size_gb", "iops", "latency_ms"),
    "disks": ("name", "size_gb", "iops", "latency_ms", "L"),
}

#: The filters each list takes.
FILTERS: dict[str, tuple[str, ...]] = {
    "datastores": ("pod", "q", "tag"),
    "vms": ("pod", "datastore", "q", "tag"),
    "disks": ("pod", "datastore", "vm", "q", "tag"),
}


def sort_values(kind: str) -> list[str]:
    """Every accepted value of ``sort`` for the list *kind* (for the OpenAPI document)."""
    return [f"{sign}{key}" for key in SORT_KEYS[kind] for sign in ("", "-")]


@dataclass(frozen=True)
class Row:
    """One item of a list and what filters and sorts it (never changed once built).

    ``item`` holds what changes only with the inventory; a VM's or disk's newest IOPS, latency, OIO
    and load L change with every collection and fit and are added when a page is answered
    (:class:`Figures`), so that a collection does not rebuild every row.
    """

    item: Mapping[str, Any]
    vcenter: str
    search: str  # casefolded text that ``q`` is looked for in
    pods: frozenset[str]  # pod names the object is in (a VM: the pods of its disks' datastores)
    datastores: frozenset[tuple[str, str]]  # (vcenter, moid) it is on (a datastore: itself)
    vm: tuple[str, str] | None  # (vcenter, moid) of the VM (a VM's own, a disk's VM's)
    tags: frozenset[str]  # "category/name" and "name" of each tag
    keys: Mapping[str, Any]  # sort key -> value of the keys fixed by the inventory (None: unknown)
    disks: tuple[str, ...] = ()  # the instances whose samples and models make the figures


@dataclass(frozen=True)
class Page:
    items: list[Mapping[str, Any]]
    next_cursor: str | None

    def to_dict(self) -> dict[str, Any]:
        return {"items": self.items, "next_cursor": self.next_cursor}


# --- cursors ----------------------------------------------------------------------------------------


def _bad(name: str, message: str) -> ValidationError:
    return ValidationError([Problem(f"query.{name}", message)], "query")


def encode_cursor(kind: str, sort: str, key: Sequence[Any]) -> str:
    raw = json.dumps({"l": kind, "s": sort, "k": list(key)}, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(text: str, kind: str, sort: str) -> tuple[Any, ...]:
    """The key a cursor stands after; 400 naming ``cursor`` for anything this list did not make."""
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
        doc = json.loads(raw)
    except (binascii.Error, ValueError, UnicodeDecodeError):
        raise _bad("cursor", "is not a cursor this service made (pass back next_cursor as given)") from None
    key = doc.get("k") if isinstance(doc, dict) else None
    if (
        not isinstance(doc, dict)
        or not isinstance(key, list)
        or len(key) != 3
        or key[0] not in (0, 1)
        or not isinstance(key[1], str | int | float)
        or isinstance(key[1], bool)
        or not isinstance(key[2], str)
    ):
        raise _bad("cursor", "is not a cursor this service made (pass back next_cursor as given)")
    if doc.get("l") != kind:
        raise _bad("cursor", f"was made for the list of {doc.get('l')}, not of {kind}")
    if doc.get("s") != sort:
        raise _bad("cursor", f"was made for sort={doc.get('s')}, not sort={sort}: start again without it")
    return (key[0], key[1], key[2])


# --- sorting and paging -----------------------------------------------------------------------------

Ordered = list[tuple[tuple[Any, ...], Row]]


def _order_key(value: Any, ident: str, text: bool, descending: bool) -> tuple[Any, ...]:
    """(unknown?, value, id) such that ascending order of the tuple, reversed when *descending*, is
    the list's order with unknown values last either way."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return (0 if descending else 1, "" if text else 0.0, ident)
    return (1 if descending else 0, value, ident)


def _sorted(rows: Sequence[Row], sort: str, value: Callable[[Row, str], Any]) -> Ordered:
    descending = sort.startswith("-")
    key = sort.lstrip("-")
    text = key == "name"
    keyed = [(_order_key(value(r, key), str(r.item["id"]), text, descending), r) for r in rows]
    keyed.sort(key=lambda kr: kr[0], reverse=descending)
    return keyed


def _after(k: tuple[Any, ...], cursor: tuple[Any, ...], descending: bool) -> bool:
    try:
        return k < cursor if descending else k > cursor
    except TypeError:  # a cursor whose value has the wrong type for this key
        raise _bad("cursor", "does not fit this sort order (pass back next_cursor as given)") from None


def page(
    kind: str,
    ordered: Sequence[tuple[tuple[Any, ...], Row]],
    keep: Callable[[Row], bool],
    *,
    sort: str,
    limit: int,
    cursor: str | None,
) -> tuple[list[Row], str | None]:
    """Up to *limit* kept rows after *cursor* in *ordered*, and the cursor of the next page."""
    descending = sort.startswith("-")
    start = 0
    if cursor is not None:
        after = decode_cursor(cursor, kind, sort)
        # The first position after the cursor's key (the order is a total order on (flag, value, id)).
        lo, hi = 0, len(ordered)
        while lo < hi:
            mid = (lo + hi) // 2
            if _after(ordered[mid][0], after, descending):
                hi = mid
            else:
                lo = mid + 1
        start = lo
    rows: list[Row] = []
    last: tuple[Any, ...] | None = None
    more = False
    for k, row in ordered[start:]:
        if not keep(row):
            continue
        if len(rows) == limit:
            more = True
            break
        rows.append(row)
        last = k
    return rows, (encode_cursor(kind, sort, last) if more and last is not None else None)


# --- building rows ----------------------------------------------------------------------------------


def _finite(x: float | None) -> float | None:
    if x is None or not math.isfinite(x):
        return None
    return float(x)


def _available(svc: Service) -> list[tuple[str, Inventory]]:
    """Each configured vCenter's inventory as last polled (a vCenter never reached is left out)."""
    out: list[tuple[str, Inventory]] = []
    for vc in svc.config.vcenters:
        try:
            out.append((vc.name, svc.inventory(vc.name, refresh=False)))
        except BasilError:
            continue
    return out


def _basis(svc: Service, inventories: Sequence[tuple[str, Inventory]]) -> Basis:
    return Basis(
        tuple(inv for _name, inv in inventories),
        svc.store.generation(*FITS) + svc.generations.get(SAMPLES, CONFIG),
    )


def _tag_names(inv: Inventory, moid: str) -> frozenset[str]:
    found: set[str] = set()
    for tag in inv.tags_of(moid):
        found.update((tag.path, tag.name))
    return frozenset(found)


def _pods_by_datastore(pods: Iterable[ResolvedPod]) -> dict[tuple[str, str], str]:
    out: dict[tuple[str, str], str] = {}
    for p in pods:
        for ds in p.datastores:
            out.setdefault((p.vcenter, ds), p.name)
    return out


def _datastore_figures(svc: Service, vcenter: str) -> dict[str, tuple[float, float, float]]:
    """Per datastore moid: (read IOPS, write IOPS, IOPS-weighted latency sum) of the newest host samples."""
    out: dict[str, tuple[float, float, float]] = {}
    for (_host, ds), s in svc.newest_host_samples(vcenter).items():
        r, w = s.read_iops or 0.0, s.write_iops or 0.0
        lat = (s.read_latency_ms or 0.0) * r + (s.write_latency_ms or 0.0) * w
        r0, w0, l0 = out.get(ds, (0.0, 0.0, 0.0))
        out[ds] = (r0 + r, w0 + w, l0 + lat)
    return out


def _pod_loads(svc: Service, pods: Sequence[ResolvedPod]) -> dict[tuple[str, str], tuple[Any, Any]]:
    """(normalized load N, ΣL) per (vcenter, datastore moid) of the pods whose state can be computed."""
    out: dict[tuple[str, str], tuple[Any, Any]] = {}
    for p in pods:
        try:
            state = pod_state(svc, p)
        except BasilError:
            continue
        for ds in p.datastores:
            out[(p.vcenter, ds)] = (state["normalized_load"].get(ds), state["load_sum_L"].get(ds))
    return out


def datastore_rows(svc: Service) -> list[Row]:
    inventories = _available(svc)

    def build() -> list[Row]:
        pods = svc.resolved_pods(refresh=False)
        pod_of = _pods_by_datastore(pods)
        loads = _pod_loads(svc, pods)
        rows: list[Row] = []
        for vcenter, inv in inventories:
            models = svc.datastore_models(vcenter)
            figures = _datastore_figures(svc, vcenter)
            for ds in inv.datastores.values():
                pod = pod_of.get((vcenter, ds.moid))
                model = models.get((vcenter, ds.moid))
                n, load = loads.get((vcenter, ds.moid), (None, None))
                fig = figures.get(ds.moid)
                iops = fig[0] + fig[1] if fig else None
                latency = (fig[2] / iops if iops else 0.0) if fig and iops is not None else None
                p = _finite(model.p) if model is not None and model.quality == "ok" else None
                tags = _tag_names(inv, ds.moid)
                item = {
                    "id": svc.ids.object_id(vcenter, ds.moid),
                    "name": ds.name,
                    "vcenter": vcenter,
                    "pod": pod,
                    "type": ds.type,
                    "capacity_gb": ds.capacity_bytes / GB,
                    "free_gb": ds.free_bytes / GB,
                    "maintenance": ds.in_maintenance,
                    "accessible": ds.accessible,
                    "P": p,
                    "model_status": model.quality if model is not None else "no_model",
                    "normalized_load": _finite(n),
                    "load_sum_L": _finite(load),
                    "latency_ms": latency,
                    "read_iops": fig[0] if fig else None,
                    "write_iops": fig[1] if fig else None,
                    "iops": iops,
                    "tags": sorted(t for t in tags if "/" in t),
                }
                rows.append(
                    Row(
                        item=item,
                        vcenter=vcenter,
                        search=ds.name.casefold(),
                        pods=frozenset({pod}) if pod else frozenset(),
                        datastores=frozenset({(vcenter, ds.moid)}),
                        vm=None,
                        tags=tags,
                        keys={
                            "name": ds.name.casefold(),
                            "latency_ms": latency,
                            "iops": iops,
                            "normalized_load": item["normalized_load"],
                            "load_sum_L": item["load_sum_L"],
                            "P": p,
                            "free_gb": item["free_gb"],
                            "capacity_gb": item["capacity_gb"],
                        },
                    )
                )
        return rows

    return svc.cache.get(("list_rows", "datastores"), _basis(svc, inventories), build)


class Figures:
    """The newest IOPS, latency and OIO of each disk and its workload model's L, as the service holds
    them now, for the VMs and disks of a page or a sort by one of them."""

    def __init__(self, svc: Service, vcenters: Iterable[str]) -> None:
        self.samples = {vc: svc.newest_disk_samples(vc) for vc in vcenters}
        self.models = {vc: svc.disk_models(vc) for vc in self.samples}

    def disk(self, vcenter: str, vm: str, instance: str) -> dict[str, float | None]:
        sample = self.samples.get(vcenter, {}).get((vm, instance))
        model = self.models.get(vcenter, {}).get(DiskRef(vcenter, vm, instance))
        return {
            "iops": _finite(sample.iops) if sample is not None else None,
            "latency_ms": _finite(sample.latency_ms) if sample is not None else None,
            "oio": _finite(sample.oio) if sample is not None else None,
            "L": _finite(model.load) if model is not None else None,
        }

    def vm(self, vcenter: str, vm: str, instances: Sequence[str]) -> dict[str, float | None]:
        """The VM's IOPS (sum over its disks) and IOPS-weighted latency; None with no sample."""
        latest = self.samples.get(vcenter, {})
        iops = weighted = 0.0
        seen = False
        for instance in instances:
            sample = latest.get((vm, instance))
            if sample is None or sample.iops is None:
                continue
            seen = True
            iops += sample.iops
            weighted += (sample.latency_ms or 0.0) * sample.iops
        if not seen:
            return {"iops": None, "latency_ms": None}
        return {"iops": _finite(iops), "latency_ms": _finite(weighted / iops if iops > 0 else 0.0)}

    def of(self, kind: str, row: Row) -> dict[str, float | None]:
        assert row.vm is not None
        if kind == "vms":
            return self.vm(row.vcenter, row.vm[1], row.disks)
        return self.disk(row.vcenter, row.vm[1], row.disks[0])


#: The sort keys of VMs and disks that change with collections and fits (the others: with the inventory).
DYNAMIC_KEYS = {"vms": frozenset({"iops", "latency_ms"}), "disks": frozenset({"iops", "latency_ms", "L"})}


def _static_basis(svc: Service, inventories: Sequence[tuple[str, Inventory]]) -> Basis:
    return Basis(tuple(inv for _name, inv in inventories), svc.generations.get(CONFIG))


def _vm_and_disk_rows(svc: Service) -> tuple[list[Row], list[Row]]:
    """Every VM's and disk's row, built again only when an inventory (or the pods) changed."""
    inventories = _available(svc)

    def build() -> tuple[list[Row], list[Row]]:
        pod_of = _pods_by_datastore(svc.resolved_pods(refresh=False))
        vm_rows: list[Row] = []
        disk_rows: list[Row] = []
        for vcenter, inv in inventories:
            names = {moid: ds.name for moid, ds in inv.datastores.items()}
            for v in inv.vms.values():
                vm_id = svc.ids.object_id(vcenter, v.moid)
                vm_ref = {"id": vm_id, "name": v.name}
                vm_tags = _tag_names(inv, v.moid)
                on: dict[str, dict[str, str]] = {}
                for d in v.disks:
                    ds_ref = on.get(d.datastore)
                    if ds_ref is None:
                        ds_ref = {
                            "id": svc.ids.object_id(vcenter, d.datastore),
                            "name": names.get(d.datastore, d.datastore),
                        }
                        on[d.datastore] = ds_ref
                    pod = pod_of.get((vcenter, d.datastore))
                    item = {
                        "id": f"{vm_id}:{d.instance}",
                        "unit": d.instance,
                        "label": d.label,
                        "vcenter": vcenter,
                        "vm": vm_ref,
                        "datastore": ds_ref,
                        "pod": pod,
                        "size_gb": d.capacity_gb,
                        "thin": d.thin,
                    }
                    disk_rows.append(
                        Row(
                            item=item,
                            vcenter=vcenter,
                            search=f"{v.name} {d.label} {d.instance}".casefold(),
                            pods=frozenset({pod}) if pod else frozenset(),
                            datastores=frozenset({(vcenter, d.datastore)}),
                            vm=(vcenter, v.moid),
                            tags=vm_tags,
                            keys={"name": f"{v.name.casefold()}\x00{d.instance}", "size_gb": item["size_gb"]},
                            disks=(d.instance,),
                        )
                    )
                pods = sorted({pod_of[(vcenter, m)] for m in on if (vcenter, m) in pod_of})
                home_pod = pod_of.get((vcenter, v.home_datastore or ""))
                size = sum(d.capacity_gb for d in v.disks)
                item_vm = {
                    "id": vm_id,
                    "name": v.name,
                    "vcenter": vcenter,
                    "pod": home_pod if home_pod is not None else (pods[0] if pods else None),
                    "pods": pods,
                    "power_state": v.power_state,
                    "host": svc.ids.object_id(vcenter, v.host) if v.host else None,
                    "host_name": inv.hosts[v.host].name
                    if v.host is not None and v.host in inv.hosts
                    else None,
                    "datastores": sorted(on.values(), key=lambda r: (r["name"], r["id"])),
                    "disks": len(v.disks),
                    "size_gb": size,
                    "tags": sorted(t for t in vm_tags if "/" in t),
                }
                vm_rows.append(
                    Row(
                        item=item_vm,
                        vcenter=vcenter,
                        search=v.name.casefold(),
                        pods=frozenset(pods),
                        datastores=frozenset((vcenter, m) for m in on),
                        vm=(vcenter, v.moid),
                        tags=vm_tags,
                        keys={"name": v.name.casefold(), "disks": len(v.disks), "size_gb": size},
                        disks=tuple(d.instance for d in v.disks),
                    )
                )
        return vm_rows, disk_rows

    return svc.cache.get(("list_rows", "vms+disks"), _static_basis(svc, inventories), build)


def _rows(svc: Service, kind: str) -> list[Row]:
    if kind == "datastores":
        return datastore_rows(svc)
    vms, disks = _vm_and_disk_rows(svc)
    return vms if kind == "vms" else disks


def _ordered(svc: Service, kind: str, sort: str) -> Ordered:
    """The rows of *kind* in the order of *sort*: sorted again when what the key depends on changed."""
    inventories = _available(svc)
    key = sort.lstrip("-")
    if kind in DYNAMIC_KEYS and key in DYNAMIC_KEYS[kind]:
        names = [name for name, _inv in inventories]

        def by_figures() -> Ordered:
            figures = Figures(svc, names)
            return _sorted(_rows(svc, kind), sort, lambda r, k: figures.of(kind, r)[k])

        return svc.cache.get(("list_sorted", kind, sort), _basis(svc, inventories), by_figures)
    basis = _basis(svc, inventories) if kind == "datastores" else _static_basis(svc, inventories)
    return svc.cache.get(
        ("list_sorted", kind, sort),
        basis,
        lambda: _sorted(_rows(svc, kind), sort, lambda r, k: r.keys.get(k)),
    )


# --- filters ----------------------------------------------------------------------------------------


def _object(svc: Service, name: str, text: str, what: str) -> tuple[str, str]:
    """(vcenter, moid) of the object id *text* given as filter *name*; 400 naming it when unknown."""
    try:
        vcenter, moid = svc.ids.parse_object(text, what)
        inv = svc.inventory(vcenter, refresh=False)
    except NotFoundError as err:
        raise _bad(name, err.message) from None
    objects: Mapping[str, Any] = inv.datastores if what == "datastore" else inv.vms
    if moid in objects:
        return vcenter, moid
    by_name = next((o.moid for o in objects.values() if o.name == moid), None)
    if by_name is None:
        raise _bad(name, f"no {what} {text!r}")
    return vcenter, by_name


def _filter(svc: Service, kind: str, args: Mapping[str, Any]) -> Callable[[Row], bool]:
    checks: list[Callable[[Row], bool]] = []
    pod = args.get("pod")
    if pod is not None:
        if not any(p.name == pod for p in svc.config.pods):
            known = ", ".join(p.name for p in svc.config.pods) or "none"
            raise _bad("pod", f"no pod named {pod!r} (known: {known})")
        checks.append(lambda r: pod in r.pods)
    datastore = args.get("datastore")
    if datastore is not None:
        ds_ref = _object(svc, "datastore", datastore, "datastore")
        checks.append(lambda r: ds_ref in r.datastores)
    vm = args.get("vm")
    if vm is not None:
        vm_ref = _object(svc, "vm", vm, "VM")
        checks.append(lambda r: r.vm == vm_ref)
    q = args.get("q")
    if q:
        needle = q.casefold()
        checks.append(lambda r: needle in r.search)
    tag = args.get("tag")
    if tag is not None:
        checks.append(lambda r: tag in r.tags)
    if not checks:
        return lambda _r: True
    if len(checks) == 1:
        return checks[0]
    return lambda r: all(c(r) for c in checks)


def listing(svc: Service, kind: str, args: Mapping[str, Any]) -> dict[str, Any]:
    """One page of the list *kind* ("datastores", "vms", "disks") for the query *args*."""
    sort = args.get("sort") or "name"
    if sort.lstrip("-") not in SORT_KEYS[kind] or sort.count("-") > 1:
        raise _bad("sort", f"must be one of {', '.join(sort_values(kind))}, got {sort!r}")
    limit = args.get("limit", DEFAULT_LIMIT)
    if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= MAX_LIMIT:
        raise _bad("limit", f"must be a whole number from 1 to {MAX_LIMIT}, got {limit!r}")
    unknown = sorted(set(args) - {"sort", "limit", "cursor", *FILTERS[kind]})
    if unknown:
        raise _bad(unknown[0], f"is not a filter of {kind} (filters: {', '.join(FILTERS[kind])})")
    keep = _filter(svc, kind, args)
    cursor = args.get("cursor")
    rows, next_cursor = page(kind, _ordered(svc, kind, sort), keep, sort=sort, limit=limit, cursor=cursor)
    if kind == "datastores":
        items: list[Mapping[str, Any]] = [r.item for r in rows]
    else:
        figures = Figures(svc, sorted({r.vcenter for r in rows}))
        items = [{**r.item, **figures.of(kind, r)} for r in rows]
    return Page(items, next_cursor).to_dict()
