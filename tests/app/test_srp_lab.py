"""Pools set through the Service become per-disk settings in the lab, and under contention the lab's
measured throughput stays within the limits and meets the reservations."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import requests

from basil.app import Actor
from basil.errors import ValidationError
from basil.srp.vsphere_allocation import vsphere_allocations
from tests.app.conftest import SCENARIOS, ServiceFactory, collect
from tests.vcenter.labproc import LabProcess

pytestmark = pytest.mark.lab

OPERATOR = Actor("tester", "operator", "127.0.0.1")
HEAVY = ("oltp-1", "oltp-2", "exchange-1", "exchange-2")
POOL_LIMIT = 300
RESERVED = ("workstation-1", 150)

TREE = {
    "name": "six-disk",
    "datastore": "6diskLUN",
    "sioc": True,
    "root": {"reservation": 400},
    "pools": [
        {"name": "capped", "limit": POOL_LIMIT, "children": [{"vm": n} for n in HEAVY]},
        {"name": "reserved", "shares": "high", "children": [{"vm": RESERVED[0], "reservation": RESERVED[1]}]},
    ],
}


@pytest.fixture(scope="module")
def lab() -> Iterator[LabProcess]:
    with LabProcess.start(SCENARIOS / "basil-6.3.yaml", speed=120) as lab:
        yield lab


def test_bad_tree_is_refused_with_every_problem(lab: LabProcess, make_service: ServiceFactory) -> None:
    svc = make_service(lab)
    bad = {
        "name": "x",
        "datastore": "nope",
        "pools": [{"name": "p", "children": [{"vm": "ghost", "reservation": -1}]}],
    }
    problems = {p.field for p in svc.validate_pool(bad)}
    assert {"datastore", "pools[0].children[0].vm"} <= problems
    with pytest.raises(ValidationError):
        svc.create_pool(bad, OPERATOR)
    assert svc.pools() == []


def test_pools_become_disk_settings_and_the_lab_honours_them(
    lab: LabProcess, make_service: ServiceFactory
) -> None:
    svc = make_service(lab)
    before = lab.truth(30)
    heavy_before = sum(d["iops"] for d in before["disks"] if d["vm"] in HEAVY and d["unit"] == "scsi0:1")
    assert heavy_before > POOL_LIMIT * 2  # the limit will bind

    created = svc.create_pool(TREE, OPERATOR)
    assert created["version"] == 1
    for _ in range(4):  # a few control steps, each on fresh samples
        collect(svc, 2, pause_s=0.7)
        run = svc.run_job("srp")
        assert run["outcome"] == "succeeded", run

    placement = lab.control("GET", "/lab/placement")
    ds = next(d for d in placement["datastores"] if d["name"] == "6diskLUN")
    assert ds["sioc_enabled"] is True
    assert ds["sioc_threshold_ms"] == 30  # L_c

    ent = svc.entitlements("six-disk")
    settings = {d["vm"]: d for d in ent["disks"]}
    lab_disks = {
        vm["name"]: next(d for d in vm["disks"] if d["unit"] == "scsi0:1") for vm in placement["vms"]
    }
    for vm in (*HEAVY, RESERVED[0]):
        applied = settings[vm]["applied"]
        assert applied is not None, settings[vm]
        assert applied["outcome"] == "ok", settings[vm]
        lab_disk = lab_disks[vm]
        assert (lab_disk["reservation"], lab_disk["limit"], lab_disk["shares"]) == (
            applied["reservation"],
            applied["limit"],
            applied["shares"],
        ), vm
    assert sum(lab_disks[vm]["limit"] for vm in HEAVY) <= POOL_LIMIT + len(HEAVY)  # rounded up per disk
    assert lab_disks[RESERVED[0]]["reservation"] >= RESERVED[1]  # its own, or more from the root R-divvy
    assert lab_disks[RESERVED[0]]["limit"] in (-1, *range(RESERVED[1], 100_000))  # unlimited or above R

    # Let the settings work for a while, re-issuing as demand moves, then read the truth.
    for _ in range(6):
        collect(svc, 2, pause_s=0.7)
        svc.run_job("srp")
    truth = lab.truth(20)
    by_vm = {d["vm"]: d for d in truth["disks"] if d["unit"] == "scsi0:1"}
    heavy_after = sum(by_vm[vm]["iops"] for vm in HEAVY)
    assert heavy_after <= POOL_LIMIT * 1.05, heavy_after
    assert by_vm[RESERVED[0]]["iops"] >= RESERVED[1] * 0.95, by_vm[RESERVED[0]]
    audit = svc.audit(limit=10_000)
    assert any(a["action"] == "srp.apply" and a["outcome"] == "ok" for a in audit)
    assert any(a["action"] == "pool.create" and a["who"] == "tester" for a in audit)
    # One entry per setting issued, naming the disk's VM, with vCenter's task; and the SIOC change.
    issued = [a for a in audit if a["action"] == "srp.disk_settings"]
    assert {a["detail"]["vm_name"] for a in issued} >= {*HEAVY, RESERVED[0]}
    assert all(a["detail"]["task"] and a["detail"]["task"] in a["message"] for a in issued)
    assert all(a["outcome"] == "ok" and a["who"] == "basil" for a in issued)
    (sioc,) = [a for a in audit if a["action"] == "srp.sioc"]
    assert sioc["message"].startswith("SIOC on 6diskLUN for pool tree six-disk: manual, 30 ms")


# --- tag leaves --------------------------------------------------------------------------------------

TAGGED = {
    "name": "tagged",
    "datastore": "6diskLUN",
    "root": {"reservation": 300},
    "pools": [
        {
            "name": "busy",
            "limit": 600,
            "children": [{"tag": "workload/exchange"}, {"tag": "workload/oltp"}],
        },
        # basil-tier/fc is on the datastores only: a known tag that brings no VM.
        {
            "name": "desk",
            "children": [{"tag": "workload/workstation", "reservation": 100}, {"tag": "basil-tier/fc"}],
        },
    ],
}


class Tagging:
    """The lab's Automation API (REST), to attach and detach tags as an administrator would."""

    def __init__(self, lab: LabProcess) -> None:
        self.base = f"https://{lab.server}"
        self.http = requests.Session()
        self.http.trust_env = False  # else REQUESTS_CA_BUNDLE overrides the session's verify
        self.http.verify = lab.pem
        res = self.http.post(self.base + "/api/session", auth=(lab.user, lab.password))
        res.raise_for_status()
        self.http.headers["vmware-api-session-id"] = res.json()

    def _get(self, path: str) -> Any:
        res = self.http.get(self.base + path)
        res.raise_for_status()
        return res.json()

    def tag_id(self, path: str) -> str:
        category, name = path.split("/", 1)
        for tag_id in self._get("/api/cis/tagging/tag"):
            tag = self._get(f"/api/cis/tagging/tag/{tag_id}")
            if (
                tag["name"] == name
                and self._get(f"/api/cis/tagging/category/{tag['category_id']}")["name"] == category
            ):
                return str(tag_id)
        raise AssertionError(f"no tag {path} in the lab")

    def _association(self, action: str, tag: str, vm_moid: str) -> None:
        res = self.http.post(
            f"{self.base}/api/cis/tagging/tag-association/{self.tag_id(tag)}?action={action}",
            json={"object_id": {"type": "VirtualMachine", "id": vm_moid}},
        )
        res.raise_for_status()

    def attach(self, tag: str, vm_moid: str) -> None:
        self._association("attach", tag, vm_moid)

    def detach(self, tag: str, vm_moid: str) -> None:
        self._association("detach", tag, vm_moid)


def test_tag_leaves_follow_vcenter_tags(lab: LabProcess, make_service: ServiceFactory) -> None:
    svc = make_service(lab)
    inventory = svc.inventory("lab")
    moid = {vm.name: vm.moid for vm in inventory.vms.values()}
    members = ("exchange-1", "exchange-2", "oltp-1", "oltp-2", "workstation-1", "workstation-2")

    bad = {
        **TAGGED,
        "pools": [
            {"name": "busy", "children": [{"tag": "workload/exchange"}, {"tag": "workload/nope"}]},
            {"name": "named", "children": [{"vm": "exchange-2"}]},
        ],
    }
    problems = {p.field: p.message for p in svc.validate_pool(bad)}
    assert "unknown tag 'workload/nope'" in problems["pools[0].children[1].tag"]
    assert problems["pools[0].children[0].tag"].startswith(
        "VM 'exchange-2' carries tag 'workload/exchange' and is also in the tree by name at "
        "pools[1].children[0]"
    )

    assert svc.validate_pool(TAGGED) == []
    svc.create_pool(TAGGED, OPERATOR)
    (doc,) = svc.pool_documents()
    assert doc.tree.vm_names() == {moid[n] for n in members}
    assert doc.document["pools"][0]["children"][0] == {"tag": "workload/exchange"}  # stored as given
    collect(svc, 2, pause_s=0.7)
    assert svc.run_job("srp")["outcome"] == "succeeded"
    ent = svc.entitlements("tagged")
    assert sorted(v["vm"] for v in ent["vms"]) == sorted(members)
    assert all(d["applied"] is not None and d["applied"]["outcome"] == "ok" for d in ent["disks"]), ent[
        "disks"
    ]
    by_vm = {v["vm"]: v for v in ent["vms"]}
    assert all(by_vm[n]["reservation"] >= 100 - 1e-6 for n in ("workstation-1", "workstation-2"))

    # A tag attached in vCenter brings its VM into the tree at the next inventory refresh, and a
    # VM reached by tags of two pools is refused by name.
    tagging = Tagging(lab)
    tagging.attach("workload/exchange", moid["webserver-1"])
    try:
        assert svc.run_job("inventory")["outcome"] == "succeeded"
        (doc,) = svc.pool_documents()
        assert doc.tree.vm_names() == {moid[n] for n in (*members, "webserver-1")}
        two_pools = {
            **TAGGED,
            "name": "other",
            "pools": [*TAGGED["pools"], {"name": "web", "children": [{"tag": "workload/webserver"}]}],
        }
        found = [str(p) for p in svc.validate_pool(two_pools)]
        assert any(
            "VM 'webserver-1' carries tags 'workload/exchange' (in pool 'busy'" in p
            and "(in pool 'web')" in p
            for p in found
        ), found
    finally:
        tagging.detach("workload/exchange", moid["webserver-1"])
    assert svc.run_job("inventory")["outcome"] == "succeeded"
    (doc,) = svc.pool_documents()
    assert moid["webserver-1"] not in doc.tree.vm_names()


# --- rate limit and hysteresis -----------------------------------------------------------------------

ALL_VMS = (*HEAVY, "webserver-1", "webserver-2", "workstation-1", "workstation-2")
SPREAD = {
    "name": "spread",
    "datastore": "6diskLUN",
    "root": {"reservation": 800},
    "pools": [{"name": "all", "children": [{"vm": n, "reservation": 50} for n in ALL_VMS]}],
}
DEFAULT_IO = (0, -1)  # what the scenario's disks start with: no reservation, unlimited


def lab_settings(lab: LabProcess) -> dict[str, tuple[int, int, int]]:
    """(reservation, limit, shares) of each VM's data disk, as vCenter (the lab) has it now."""
    return {
        vm["name"]: next(
            (d["reservation"], d["limit"], d["shares"]) for d in vm["disks"] if d["unit"] == "scsi0:1"
        )
        for vm in lab.control("GET", "/lab/placement")["vms"]
    }


def test_rate_limit_defers_changes_to_later_runs(lab: LabProcess, make_service: ServiceFactory) -> None:
    lab.reset()
    svc = make_service(lab, srp={"max_changes_per_run": 3, "manage_sioc": False})
    assert all(lab_settings(lab)[n][:2] == DEFAULT_IO for n in ALL_VMS)
    svc.create_pool(SPREAD, OPERATOR)
    collect(svc, 2, pause_s=0.7)
    first = svc.run_job("srp")
    assert first["outcome"] == "succeeded", first
    # Eight disks need settings; three are issued, five wait for the next run.
    assert (first["details"]["changes"], first["details"]["deferred"]) == (3, 5), first
    assert svc.srp.states["spread"].deferred == 5
    changed = [n for n in ALL_VMS if lab_settings(lab)[n][:2] != DEFAULT_IO]
    assert len(changed) == 3, lab_settings(lab)

    issued = [3]
    for _ in range(6):  # each later run issues at most three, the deferred ones among them
        if all(lab_settings(lab)[n][:2] != DEFAULT_IO for n in ALL_VMS):
            break
        collect(svc, 2, pause_s=0.7)
        run = svc.run_job("srp")
        assert run["outcome"] == "succeeded", run
        assert run["details"]["changes"] <= 3, run
        issued.append(run["details"]["changes"])
    assert all(lab_settings(lab)[n][:2] != DEFAULT_IO for n in ALL_VMS), (issued, lab_settings(lab))
    assert sum(issued) >= len(ALL_VMS)


def _within(old: float, new: float, fraction: float, floor: float) -> bool:
    """The hysteresis as the configuration documents it: a change no larger than the fraction of the
    current value (and, for IOPS, than the floor) is not re-issued. -1 (unlimited) changes are never small."""
    if (old == -1) != (new == -1):
        return False
    return abs(new - old) <= max(fraction * abs(old), floor)


def test_changes_within_the_hysteresis_are_not_reissued(
    lab: LabProcess, make_service: ServiceFactory
) -> None:
    lab.reset()
    svc = make_service(lab, srp={"hysteresis_pct": 50, "manage_sioc": False})
    svc.create_pool(SPREAD, OPERATOR)
    collect(svc, 2, pause_s=0.7)
    assert svc.run_job("srp")["details"]["changes"] == len(ALL_VMS)  # from the defaults: every disk
    names = {vm.moid: vm.name for vm in svc.inventory("lab").vms.values()}

    held_back = 0
    for _ in range(5):
        reissued = 0
        before = lab_settings(lab)
        collect(svc, 2, pause_s=0.7)
        run = svc.run_job("srp")
        assert run["outcome"] == "succeeded", run
        after = lab_settings(lab)
        result = svc.srp.states["spread"].result
        assert result is not None
        desired = vsphere_allocations(result.disks, svc.srp.alloc_params)
        for key, want in desired.items():
            name = names[key.vm]
            old, now = before[name], after[name]
            small = (
                _within(old[0], want.reservation, 0.5, 10)
                and _within(old[1], want.limit, 0.5, 10)
                and _within(old[2], want.shares, 0.5, 0)
            )
            if small:
                assert now == old, (name, old, want, now)  # not re-issued to vCenter
                held_back += (want.reservation, want.limit, want.shares) != old
            else:
                assert now == (want.reservation, want.limit, want.shares), (name, old, want, now)
                reissued += 1
        assert run["details"]["changes"] == reissued, (run, reissued)
    # The loop computed different settings, and the hysteresis kept them from vCenter.
    assert held_back > 0, "no run computed a setting that differed from vCenter's within the hysteresis"
