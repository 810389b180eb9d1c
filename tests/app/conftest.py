"""Fixtures of the application-layer tests: a Service on a SQLite store, talking to the lab vCenter.

The lab is started by the adapter's launcher (``tests.vcenter.labproc.LabProcess``), the one lab
launcher of the test suite; the Service connects with the launcher's connection parameters.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from basil.app import Service
from basil.config import BasilConfig, PodConfig, StoreConfig, TLSOptions, VCenterConfig
from basil.store import Store
from tests.vcenter.labproc import LabProcess

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = ROOT / "lab" / "scenarios"
PASSWORD_ENV = "BASIL_TEST_LAB_PASSWORD"


def lab_config(lab: LabProcess, store_url: str, **pod: Any) -> BasilConfig:
    """A configuration with the lab as vCenter ``lab`` and one pod (the scenario's datastore cluster)."""
    fields: dict[str, Any] = {"name": "basil-pod", "vcenter": "lab", "datastore_cluster": "basil-pod"}
    fields.update(pod)
    return BasilConfig(
        vcenters=(
            VCenterConfig(
                name="lab",
                server=lab.server,
                user=lab.user,
                password_env=PASSWORD_ENV,
                tls=TLSOptions(ca_bundle=lab.pem),
            ),
        ),
        pods=(PodConfig(**fields),),
        store=StoreConfig(url=store_url),
    )


ServiceFactory = Callable[..., Service]


@pytest.fixture
def make_service(tmp_path: Path) -> Iterator[ServiceFactory]:
    """Builds started Services (no scheduler) on a lab; all are shut down after the test."""
    made: list[Service] = []

    def make(lab: LabProcess, store: Store | None = None, **kw: Any) -> Service:
        url = f"sqlite:///{tmp_path / 'basil.db'}"
        pod = kw.pop("pod", {})
        srp = kw.pop("srp", {})  # SrpConfig fields to change, e.g. {"max_changes_per_run": 2}
        config = lab_config(lab, url, **pod)
        if srp:
            config = dataclasses.replace(config, srp=dataclasses.replace(config.srp, **srp))
        svc = Service(
            config,
            store if store is not None else Store(url),
            params_factory=lambda _vc: lab.connection_params(),
            **kw,
        )
        svc.start(scheduler=False)
        made.append(svc)
        return svc

    yield make
    for svc in made:
        if not svc.stopping.is_set():
            svc.shutdown()


def collect(svc: Service, cycles: int, pause_s: float = 0.5) -> None:
    """Run the collection job *cycles* times, letting the lab's clock move in between."""
    for _ in range(cycles):
        run = svc.run_job("collect")
        assert run["outcome"] == "succeeded", run
        time.sleep(pause_s)


def wait_until(check: Callable[[], bool], timeout_s: float = 120.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")
