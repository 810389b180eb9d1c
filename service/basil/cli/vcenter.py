"""``basil vcenter ...``: look at a vCenter the way Basil sees it (inventory, real-time samples).

The vSphere SDKs are imported inside the commands, so ``basil --help`` and the offline commands do
not pay for loading them.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])


def connection_options(f: F) -> F:
    """The options every vcenter command takes to find and trust the vCenter."""
    options = [
        click.option("--server", help="vCenter host[:port] (or BASIL_VCENTER_SERVER)."),
        click.option("--user", help="User name (or BASIL_VCENTER_USER)."),
        click.option(
            "--password",
            help="Password (or BASIL_VCENTER_PASSWORD, which keeps it out of the process list).",
        ),
        click.option(
            "--insecure",
            is_flag=True,
            default=None,
            help="Do not verify the certificate (logged as a warning).",
        ),
        click.option("--ca-bundle", type=click.Path(dir_okay=False), help="PEM file of CAs to trust."),
        click.option("--thumbprint", help="Pinned SHA-1 or SHA-256 certificate thumbprint."),
        click.option(
            "--config", "config", type=click.Path(dir_okay=False), help="basil.yaml with a vcenters: list."
        ),
        click.option(
            "--vcenter", "vcenter_name", help="Which entry of the config file (default: the first)."
        ),
    ]
    for option in reversed(options):
        f = option(f)
    return f


def _params(kw: dict[str, Any]) -> Any:
    from basil.vcenter.settings import resolve_connection  # noqa: PLC0415

    return resolve_connection(
        server=kw.pop("server"),
        user=kw.pop("user"),
        password=kw.pop("password"),
        insecure=kw.pop("insecure"),
        ca_bundle=kw.pop("ca_bundle"),
        thumbprint=kw.pop("thumbprint"),
        config=kw.pop("config"),
        vcenter=kw.pop("vcenter_name"),
    )


@click.group("vcenter")
def vcenter() -> None:
    """Look at a vCenter the way Basil sees it (diagnostics; changes nothing)."""


@vcenter.command("inventory")
@connection_options
@click.option("--json", "as_json", is_flag=True, help="The whole inventory as JSON.")
@click.option("--no-tags", is_flag=True, help="Skip reading tags (no Automation API session).")
def inventory_cmd(as_json: bool, no_tags: bool, **kw: Any) -> None:
    """Datacenters, clusters, hosts, datastores, datastore clusters and VMs with their disks."""
    from basil.vcenter.connection import VCenterConnection  # noqa: PLC0415
    from basil.vcenter.inventory import fetch_inventory  # noqa: PLC0415

    params = _params(kw)
    with VCenterConnection(params) as conn:
        inv = fetch_inventory(conn, with_tags=not no_tags)
    if inv.tags_error:
        click.echo(f"warning: no tags: {inv.tags_error}", err=True)
    if as_json:
        click.echo(json.dumps(inv.to_dict(), indent=2, sort_keys=True))
        return
    disks = sum(len(vm.disks) for vm in inv.vms.values())
    click.echo(
        f"{inv.server}: {len(inv.datacenters)} datacenter(s), {len(inv.clusters)} cluster(s), "
        f"{len(inv.hosts)} host(s), {len(inv.datastores)} datastore(s), {len(inv.pods)} datastore "
        f"cluster(s), {len(inv.vms)} VM(s) with {disks} disk(s), {len(inv.tags)} tag(s)"
    )
    click.echo(f"{'datastore':<24} {'type':<6} {'capacity GB':>12} {'free GB':>10} {'VM disks':>9}  pod")
    per_ds: dict[str, int] = {}
    for vm in inv.vms.values():
        for d in vm.disks:
            per_ds[d.datastore] = per_ds.get(d.datastore, 0) + 1
    for ds in sorted(inv.datastores.values(), key=lambda d: d.name):
        pod = inv.pods[ds.pod].name if ds.pod is not None and ds.pod in inv.pods else "-"
        flags = "" if ds.accessible else " (inaccessible)"
        flags += " (maintenance)" if ds.in_maintenance else ""
        click.echo(
            f"{ds.name:<24} {ds.type:<6} {ds.capacity_bytes / 2**30:>12.1f} {ds.free_bytes / 2**30:>10.1f} "
            f"{per_ds.get(ds.moid, 0):>9}  {pod}{flags}"
        )


@vcenter.command("sample")
@connection_options
@click.option("--once", is_flag=True, help="One collection cycle, then exit.")
@click.option("--json", "as_json", is_flag=True, help="Samples as JSON (one document per cycle).")
@click.option("--interval", default=20.0, show_default=True, help="Seconds between cycles (without --once).")
@click.option("--count", type=int, default=0, help="Stop after this many cycles (0: until interrupted).")
@click.option("--workers", type=int, default=4, show_default=True, help="QueryPerf requests in flight.")
def sample_cmd(once: bool, as_json: bool, interval: float, count: int, workers: int, **kw: Any) -> None:
    """Real-time (20 s) samples: per virtual disk, and per host and datastore."""
    from basil.vcenter.connection import VCenterConnection  # noqa: PLC0415
    from basil.vcenter.inventory import fetch_inventory  # noqa: PLC0415
    from basil.vcenter.perf import CollectorParams, PerfCollector  # noqa: PLC0415

    params = _params(kw)
    cycles = 1 if once else count
    with VCenterConnection(params) as conn:
        inv = fetch_inventory(conn, with_tags=False)
        collector = PerfCollector(conn, CollectorParams(workers=workers))
        n = 0
        while True:
            report = collector.collect(inv)
            n += 1
            if as_json:
                click.echo(json.dumps(report.to_dict(), indent=None if not once else 2, sort_keys=True))
            else:
                _print_report(report, inv)
            if cycles and n >= cycles:
                break
            time.sleep(interval)


def _print_report(report: Any, inv: Any) -> None:
    click.echo(
        f"{report.finished_at:%H:%M:%S} {len(report.disk_samples)} disk samples, "
        f"{len(report.host_datastore_samples)} host/datastore samples from {report.entities} entities in "
        f"{report.requests} queries ({(report.finished_at - report.started_at).total_seconds():.2f}s); "
        f"{len(report.missing)} missing, {len(report.errors)} failed batch(es)"
    )
    for s in sorted(report.host_datastore_samples, key=lambda s: (s.datastore, s.host))[:50]:
        ds = inv.datastores[s.datastore].name if s.datastore in inv.datastores else s.datastore
        host = inv.hosts[s.host].name if s.host in inv.hosts else s.host
        lat = f"{s.latency_ms:.1f}" if s.latency_ms is not None else "-"
        click.echo(f"  {ds:<20} {host:<20} iops {s.iops or 0:>8.0f} oio {s.oio or 0:>6.1f} latency {lat} ms")


@vcenter.command("thumbprint")
@click.argument("server")
@click.option("--sha1", is_flag=True, help="SHA-1 instead of SHA-256.")
def thumbprint_cmd(server: str, sha1: bool) -> None:
    """Print the certificate thumbprint SERVER presents (check it out of band before pinning it)."""
    from basil.vcenter.connection import fetch_server_thumbprint  # noqa: PLC0415

    tp = fetch_server_thumbprint(server, length=40 if sha1 else 64)
    click.echo(":".join(tp[i : i + 2] for i in range(0, len(tp), 2)).upper())
