"""The device model on the lab's tiered scenario (SSD, FC, SATA): collection, modelling, a Storage vMotion.

Simulated time stands still (speed 0) and moves only by ``step``, so what is collected is the same on
every run. The lab reports ``totalReadLatency`` in whole milliseconds and ``readLatencyUS`` in µs,
exactly as vCenter does; the flash datastore reads 0 or 1 ms.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from basil.app import Service
from basil.app.modelling import device_samples
from basil.config import DeviceConfig
from basil.core.device_model import PER_DEVICE_P, fit_device_model
from basil.store import Store
from basil.store.fits import DatastoreModel, datastore_model_history
from basil.store.samples import device_points
from basil.vcenter._vmomi import vim
from basil.vcenter.actions import read_properties
from basil.vcenter.connection import VCenterConnection
from tests.app.conftest import SCENARIOS, lab_config, wait_until
from tests.vcenter.labproc import LabProcess

pytestmark = pytest.mark.lab

POD = {"name": "tiered", "datastore_cluster": "tiered-pod"}
COPY_MBPS = 40  # web-2's 40 GB disk copies in about 1,000 s: 50 intervals


@pytest.fixture(scope="module")
def lab() -> Iterator[LabProcess]:
    with LabProcess.start(
        SCENARIOS / "tiered.yaml",
        speed=0,
        extra=("--svmotion-mbps", str(COPY_MBPS), "--start", "2026-01-05T08:00:00Z"),
    ) as lab:
        yield lab


@pytest.fixture(scope="module")
def svc(lab: LabProcess, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    """One service for the module; sas-01 (idle system disks only) is described in basil.yaml."""
    url = f"sqlite:///{Path(tmp_path_factory.mktemp('device-model')) / 'basil.db'}"
    config = dataclasses.replace(
        lab_config(lab, url, **POD), devices={"sas-01": DeviceConfig(kind="sas10k", spindles=10)}
    )
    service = Service(config, Store(url), params_factory=lambda _vc: lab.connection_params())
    service.start(scheduler=False)
    yield service
    service.shutdown()


def advance(svc: Service, lab: LabProcess, intervals: int, chunk: int = 30) -> None:
    """Step simulated time by *intervals* 20 s intervals, collecting after each chunk."""
    assert svc.run_job("collect")["outcome"] == "succeeded"
    left = intervals
    while left > 0:
        n = min(chunk, left)
        lab.step(n)
        left -= n
        assert svc.run_job("collect")["outcome"] == "succeeded"


def models(svc: Service) -> dict[str, DatastoreModel]:
    inv = svc.inventory("lab", refresh=False)
    return {inv.datastores[ds].name: m for (_vc, ds), m in svc.datastore_models("lab").items()}


def moid(svc: Service, name: str) -> str:
    return next(ds.moid for ds in svc.inventory("lab").datastores.values() if ds.name == name)


def test_flash_gets_a_credible_p_with_an_interval_from_microseconds(svc: Service, lab: LabProcess) -> None:
    advance(svc, lab, 90)  # half an hour
    assert svc.run_job("model")["outcome"] == "succeeded"
    m = models(svc)
    ssd = m["ssd-01"]
    assert ssd.quality == "ok", ssd.details
    assert ssd.details["source"] == "fit"
    assert ssd.details["latency_resolution"] == "us"
    assert ssd.p is not None
    low, high = ssd.details["p_low"], ssd.details["p_high"]
    assert low < ssd.p < high
    assert high / low <= 3.0
    # The lab's flash (4 devices, 0.1 ms reads) is tens of OIO per ms; spindles are around 1.
    assert ssd.p > 10 * max(x.p for name, x in m.items() if name != "ssd-01" and x.p is not None)
    # The same intervals in whole milliseconds, as the device model read them before: no usable P.
    now = svc.sample_now("lab")
    assert now is not None
    with svc.store.read_session() as session:
        points = device_points(session, "lab", moid(svc, "ssd-01"), now - 3600, now + 1)
    in_ms = fit_device_model(device_samples(points))
    assert in_ms.latency_resolution == "ms"
    assert not in_ms.credible
    # A datastore without samples but with a configured device has a confident prior.
    sas = m["sas-01"]
    assert (sas.quality, sas.details["source"]) == ("ok", "prior")
    assert sas.p == pytest.approx(10 * PER_DEVICE_P["sas10k"])


def disk_classes(svc: Service, vm_name: str) -> dict[str, dict[str, Any]]:
    """The class of each modelled disk of a VM, as the API's VM view shows it."""
    vm = next(v for v in svc.inventory("lab", refresh=False).vms.values() if v.name == vm_name)
    return {
        d["instance"]: {k: d["model"][k] for k in ("class", "sequential", "traits")}
        for d in svc.vm(vm.moid)["disks"]
        if d["model"] is not None
    }


def test_disks_are_classed_where_eq_1_is_weakest(svc: Service) -> None:
    # Runs on what the first test collected and modelled.
    backup = disk_classes(svc, "backup-1")["scsi0:1"]  # 64 KB, 5 % random, on 15 min of the hour
    assert backup["class"] == "sequential"
    assert backup["sequential"] is True
    oltp = disk_classes(svc, "oltp-db-1")
    assert oltp["scsi0:1"]["class"] == "random"  # 8 KB, 70 % read, 100 % random
    assert oltp["scsi0:1"]["sequential"] is False
    assert set(oltp["scsi0:2"]["traits"]) == {"sequential", "write_heavy"}  # the log: writes, 5 % random
    batch = disk_classes(svc, "batch-1")["scsi0:1"]  # OIO 2, 24 from minute 20 to 40
    assert "bursty" in batch["traits"]


def start_move(conn: VCenterConnection, vm: str, key: int, target: str) -> str:
    locator = vim.vm.RelocateSpec.DiskLocator(diskId=key, datastore=conn.ref(vim.Datastore, target))
    task = conn.ref(vim.VirtualMachine, vm).RelocateVM_Task(spec=vim.vm.RelocateSpec(disk=[locator]))
    return str(task._moId)


def task_state(conn: VCenterConnection, task: str) -> Any:
    return read_properties(conn, conn.ref(vim.Task, task), ["info.state"]).get("info.state")


def test_a_storage_vmotion_copy_does_not_move_the_fits(svc: Service, lab: LabProcess) -> None:
    before = models(svc)
    inv = svc.inventory("lab")
    web2 = next(v for v in inv.vms.values() if v.name == "web-2")
    disk = web2.disk("scsi0:1")
    link = svc.links["lab"]
    task = link.call(lambda c: start_move(c, web2.moid, disk.key, moid(svc, "ssd-01")))
    steps = 0
    while link.call(lambda c: str(task_state(c, task))) != "success":
        advance(svc, lab, 10, chunk=10)
        steps += 10
        assert steps < 200, "the copy did not finish"
    # The inventory follows vCenter's updates a moment later; a model run before that would see the
    # task but not yet the disk's new datastore (the next run refits the window and would).
    ssd = moid(svc, "ssd-01")
    wait_until(lambda: svc.inventory("lab").vms[web2.moid].disk("scsi0:1").datastore == ssd, 30, "the move")
    advance(svc, lab, 20)  # some intervals after the move
    assert svc.run_job("model")["outcome"] == "succeeded"
    after = models(svc)
    for name in ("sata-01", "ssd-01"):  # the copy read the source and wrote the target
        m, b = after[name], before[name]
        assert m.details["dropped"]["storage_vmotion"] >= steps - 10, (name, m.details)
        assert m.quality == "ok", (name, m.details)
        assert m.p is not None
        assert b.p is not None
        assert abs(math.log(m.p / b.p)) < math.log(1.25), (name, b.p, m.p, m.details["summary"])
    with svc.store.read_session() as session:
        history = datastore_model_history(session, "lab", moid(svc, "ssd-01"))
    assert [h.details["source"] for h in history] == ["fit", "fit"]
