"""The fault suite's fixtures: a paused lab vCenter per module, a Service on it, and the checks every
fault test makes (health, the collection's continuity).

Each test injects one of the lab's faults (``/lab/faults/...``) and checks that health turns
degraded while it lasts (naming the vCenter, the job and the error), that it clears when the job
succeeds again, and that collection resumes with no gap beyond the fault. The lab runs at speed 0:
time moves only by :meth:`FaultLab.step`, so every figure is deterministic.

Tests that inject a fault while a plan applies build on the same fixtures (``fault_lab``,
``service``, :func:`collect`, :func:`assert_no_gap`, :func:`problems`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from basil.app import Service
from basil.store import Store
from basil.store.models import Disk, DiskSample, HostDatastore, HostDatastoreSample
from tests.app.conftest import PASSWORD_ENV, SCENARIOS, lab_config
from tests.vcenter.labproc import LabProcess

SCENARIO = SCENARIOS / "basil-6.2.yaml"


@pytest.fixture(scope="module")
def fault_lab() -> Iterator[LabProcess]:
    """One paused lab per module; each test starts from the scenario as written (see ``lab``)."""
    with LabProcess.start(SCENARIO, speed=0) as lab:
        yield lab


@pytest.fixture
def lab(fault_lab: LabProcess) -> LabProcess:
    """The module's lab reset (faults cleared, sessions ended, time restarted), paused, with two
    intervals solved."""
    fault_lab.control("POST", "reset")
    fault_lab.set_speed(0)
    fault_lab.step(2)
    return fault_lab


ServiceFactory = Callable[..., Service]


@pytest.fixture
def service(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ServiceFactory]:
    """``service(lab, **kw)``: a started Service (no scheduler) on *lab* with its own SQLite store;
    the configuration's own connection parameters (keep-alive, retries) apply, so the service meets
    the fault as in production. Every Service is shut down after the test."""
    made: list[Service] = []

    def make(lab: LabProcess, **kw: Any) -> Service:
        monkeypatch.setenv(PASSWORD_ENV, lab.password)
        url = f"sqlite:///{tmp_path / 'basil.db'}"
        pod = kw.pop("pod", {})
        svc = Service(
            lab_config(lab, url, **pod),
            Store(url),
            params_factory=kw.pop("params_factory", lambda _vc: lab.connection_params()),
            **kw,
        )
        svc.start(scheduler=False)
        svc.wait_connected()
        made.append(svc)
        return svc

    yield make
    for svc in made:
        if not svc.stopping.is_set():
            svc.shutdown()


def run(svc: Service, job: str) -> dict[str, Any]:
    """Run *job* once, now, in this thread; its run record."""
    return svc.run_job(job)


def collect(svc: Service) -> dict[str, Any]:
    """One collection cycle that must succeed."""
    result = run(svc, "collect")
    assert result["outcome"] == "succeeded", result
    return result


def problems(svc: Service) -> list[dict[str, Any]]:
    """What /health reports as degrading the service."""
    return list(svc.health()["problems"])


def assert_healthy(svc: Service) -> None:
    health = svc.health()
    assert health["status"] == "ok", health
    assert all(v["problems"] == [] for v in svc.vcenters()), svc.vcenters()
    assert all(v["last_error"] is None for v in svc.vcenters()), svc.vcenters()


def assert_degraded(svc: Service, job: str, error: str) -> None:
    """Health is degraded and names the lab vCenter, *job* and an error containing *error*."""
    health = svc.health()
    assert health["status"] == "degraded", health
    named = [p for p in health["problems"] if p["vcenter"] == "lab" and p["job"] == job]
    assert named, health["problems"]
    assert error in named[0]["error"], named


def stored_series(svc: Service) -> dict[tuple[str, str], list[int]]:
    """Every stored raw sample time, per disk and per (host, datastore)."""
    out: dict[tuple[str, str], list[int]] = {}
    with svc.store.read_session() as session:
        rows = list(
            session.execute(
                select(Disk.vm, Disk.instance, DiskSample.ts).join(Disk, Disk.id == DiskSample.disk_id)
            ).all()
        )
        rows += session.execute(
            select(HostDatastore.host, HostDatastore.datastore, HostDatastoreSample.ts).join(
                HostDatastore, HostDatastore.id == HostDatastoreSample.hd_id
            )
        ).all()
    for a, b, ts in rows:
        out.setdefault((str(a), str(b)), []).append(int(ts))
    return {k: sorted(v) for k, v in out.items()}


def assert_no_gap(svc: Service, lab: LabProcess, first: int | None = None) -> int:
    """Every series is stored 20 s apart, nothing twice, from its first sample (or *first*) up to the
    lab's last solved interval: nothing lost across a fault. Returns the first sample time."""
    series = stored_series(svc)
    assert series
    newest = int(datetime.fromisoformat(lab.control("GET", "time")["last_interval"]).timestamp())
    start = first if first is not None else min(times[0] for times in series.values())
    expected = list(range(start, newest + 1, 20))
    assert len(expected) >= 2
    for key, times in series.items():
        assert times == expected, (key, len(times), len(expected))
    return start
