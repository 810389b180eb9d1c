"""The what-if's device model with its disks' destaging separated, from the service's own samples.

A small lab (speed 0, stepped): two 6 × 15k FC RAID 5 LUNs of random 8 KB disks with ranged OIO
(70 % read, 100 % random), one behind a write-back cache (writes acknowledged at 0.4 ms: cached,
destaged later), one without a cache (every write waits for the devices: nothing to separate).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from basil.app import Service
from basil.app.whatif import datastore_whatif, device_params, move_effects
from basil.core.consolidation import STRIPE_ASSUMED, WRITE_COST_LOWER_BOUND
from basil.store import Store
from basil.store.fits import DatastoreModel
from tests.app.conftest import lab_config
from tests.vcenter.labproc import LabProcess

pytestmark = pytest.mark.lab

SCENARIO = """
name: destage
description: Random disks on a cached and an uncached RAID 5 LUN, for the separated device model.
seed: 16
clusters:
  - name: c1
    hosts: [esx-01, esx-02]
datastores:
  - {name: cached-01, capacity_gb: 2000, pod: destage-pod,
     device: {kind: fc15k, disks: 6, raid: "5", cache_mb: 1024}}
  - {name: uncached-01, capacity_gb: 2000, pod: destage-pod,
     device: {kind: fc15k, disks: 6, raid: "5", cache_mb: 0}}
vms:
"""


def _vm(name: str, host: str, datastore: str, oio: str, read_pct: int) -> str:
    return (
        f"  - name: {name}\n    host: {host}\n    disks:\n"
        f'      - unit: "scsi0:1"\n        size_gb: 50\n        datastore: {datastore}\n'
        f"        workload: {{oio: {oio}, io_size_kb: 8, read_pct: {read_pct}, random_pct: 100}}\n"
    )


VMS = [
    ("oltp-1", "esx-01", "cached-01", "{min: 1, max: 16}", 70),
    ("mail-2", "esx-02", "cached-01", "{min: 1, max: 12}", 30),
    ("oltp-3", "esx-01", "uncached-01", "{min: 1, max: 16}", 70),
    ("oltp-4", "esx-02", "uncached-01", "{min: 1, max: 12}", 70),
]


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabProcess]:
    path = tmp_path_factory.mktemp("destage-lab") / "destage.yaml"
    path.write_text(SCENARIO + "".join(_vm(*v) for v in VMS), encoding="utf-8")
    with LabProcess.start(path, speed=0) as lab:
        yield lab


@pytest.fixture(scope="module")
def svc(lab: LabProcess, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    url = f"sqlite:///{Path(tmp_path_factory.mktemp('destage')) / 'basil.db'}"
    config = lab_config(lab, url, name="destage", datastore_cluster="destage-pod")
    service = Service(config, Store(url), params_factory=lambda _vc: lab.connection_params())
    service.start(scheduler=False)
    assert service.run_job("collect")["outcome"] == "succeeded"
    for _ in range(3):
        lab.step(30)
        assert service.run_job("collect")["outcome"] == "succeeded"
    assert service.run_job("model")["outcome"] == "succeeded"
    yield service
    service.shutdown()


def models(svc: Service) -> dict[str, DatastoreModel]:
    inv = svc.inventory("lab", refresh=False)
    return {inv.datastores[ds].name: m for (_vc, ds), m in svc.datastore_models("lab").items()}


def plain_line(model: DatastoreModel) -> tuple[float, float]:
    """(intercept a, slope b) of a model's stored plain line."""
    assert model.intercept is not None
    assert model.slope is not None
    return model.intercept, model.slope


def ident(svc: Service, name: str) -> tuple[str, str]:
    """(moid, API id) of a datastore."""
    moid = next(ds.moid for ds in svc.inventory("lab", refresh=False).datastores.values() if ds.name == name)
    return moid, svc.ids.object_id("lab", moid)


def disk_of(svc: Service, vm_name: str) -> tuple[str, str]:
    """(API id, VM moid) of a VM's data disk."""
    vm = next(v for v in svc.inventory("lab", refresh=False).vms.values() if v.name == vm_name)
    return svc.ids.disk_id("lab", vm.moid, "scsi0:1"), vm.moid


def test_cached_random_writers_give_the_destage_cost_from_the_services_samples(svc: Service) -> None:
    model = models(svc)["cached-01"]
    assert model.quality == "ok", model.details
    sep = model.details["destage_separation"]
    assert sep is not None, model.details["destage_separation_note"]
    assert sep["points"] >= 5
    assert sep["destage_ms"] > 0
    assert sep["slope_rel_error"] <= 0.2
    assert sep["destage_rel_error"] <= 0.2
    # The plain line's slope carries the destaging of the disks' cached writes (docs/whatif.md):
    # without it the reads' line is flatter, so m = a / b is larger.
    assert sep["slope_ms"] < plain_line(model)[1]
    a, b = plain_line(model)
    m_sep, m_plain = sep["intercept_ms"] / sep["slope_ms"], a / b
    assert m_sep > m_plain
    # A destaged write costs the devices less than t_pos / m of the plain line (sorted destaging).
    assert sep["destage_ms"] < a / m_plain

    disk, _vm = disk_of(svc, "oltp-3")  # from the uncached LUN
    _moid, target = ident(svc, "cached-01")
    answer = datastore_whatif(svc, target, [disk])
    source = f"device model, destaging separated ({sep['points']} intervals)"
    assert answer["destage_ms"] == pytest.approx(sep["destage_ms"])
    assert answer["destage_source"] == f"{source} (c)"
    assert answer["parallelism"] == pytest.approx(m_sep)
    assert answer["parallelism_source"] == f"{source} (a / b)"
    assert answer["positioning_ms"] == pytest.approx(sep["intercept_ms"])
    assert answer["positioning_source"] == f"{source} (a)"
    assert answer["write_cost"] == 1
    assert "carries the RAID write cost" in answer["write_cost_source"]
    assert answer["destage_util"] is not None
    # the disks' IO sizes come from vCenter's readIOSize/writeIOSize: 8 KB, within one stripe unit
    assert answer["stripe_source"] == STRIPE_ASSUMED
    for given in answer["inputs"]:
        assert given["read_io_kb"] == pytest.approx(8.0, rel=0.1), given
        assert given["write_io_kb"] == pytest.approx(8.0, rel=0.1), given
    assert {w["fork_join"] for w in answer["workloads"]} == {1.0}


def test_without_cached_writes_the_plain_line_is_kept(svc: Service) -> None:
    model = models(svc)["uncached-01"]
    assert model.quality == "ok", model.details
    sep = model.details["destage_separation"]
    assert sep is not None
    assert sep["destage_ms"] is None
    disk, _vm = disk_of(svc, "oltp-1")  # from the cached LUN
    _moid, target = ident(svc, "uncached-01")
    answer = datastore_whatif(svc, target, [disk])
    a, b = plain_line(model)
    m_plain = a / b
    assert answer["parallelism"] == pytest.approx(m_plain)
    assert answer["parallelism_source"] == "device model (intercept / slope)"
    assert answer["positioning_ms"] == pytest.approx(a)
    assert answer["destage_ms"] == pytest.approx(a / m_plain)  # t_pos / m
    assert answer["destage_source"].endswith(
        "(device model, destaging not separated: no cached writes to separate)"
    )
    assert answer["write_cost_source"] == WRITE_COST_LOWER_BOUND


def test_the_moves_predictions_use_the_separated_line(svc: Service) -> None:
    inv = svc.inventory("lab", refresh=False)
    disk, vm = disk_of(svc, "oltp-3")
    key = inv.vms[vm].disk("scsi0:1").key
    models_now = svc.datastore_models("lab")
    effect = move_effects(
        vcenter="lab",
        inventory=inv,
        disk_samples=svc.newest_disk_samples("lab"),
        host_samples=svc.newest_host_samples("lab"),
        models=models_now,
        disk_keys={disk: (vm, "scsi0:1", key)},
        disk_id=lambda vm_moid, instance: svc.ids.disk_id("lab", vm_moid, instance),
    )
    cached, _ = ident(svc, "cached-01")
    uncached, _ = ident(svc, "uncached-01")
    out = effect(uncached, cached, [disk])
    assert out is not None
    sep = models(svc)["cached-01"].details["destage_separation"]
    assert out["target"]["parallelism"] == pytest.approx(sep["intercept_ms"] / sep["slope_ms"])
    a, b = plain_line(models(svc)["uncached-01"])
    assert out["source"]["parallelism"] == pytest.approx(a / b)
    # The same device as the route's (one reading of the models for both).
    device, _ = device_params("lab", cached, svc.newest_host_samples("lab"), models_now)
    assert (device.destage_ms, device.parallelism) == (sep["destage_ms"], out["target"]["parallelism"])
