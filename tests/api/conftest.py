"""Fixtures of the API tests: a real Service on SQLite against the lab vCenter, the Flask app over it,
and one API token per role. Everything is real but the HTTP transport (Flask's test client)."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import requests
from flask import Flask
from flask.testing import FlaskClient

from basil.api import create_app
from basil.app import Service
from basil.config import TLSOptions
from basil.config.schema import BasilConfig, PodConfig, SchedulesConfig, StoreConfig, VCenterConfig
from basil.store.tokens import create_token
from tests.vcenter.labproc import ROOT, LabProcess

SCENARIO = ROOT / "lab" / "scenarios" / "basil-6.3.yaml"
PASSWORD_ENV = "BASIL_TEST_API_VC_PASSWORD"
ROLES = ("viewer", "operator", "admin")


@dataclass
class ApiEnv:
    """One started Service on the lab, its app, and a token per role."""

    lab: LabProcess
    service: Service
    app: Flask
    tokens: dict[str, str]
    config: BasilConfig

    def run_jobs(self, *jobs: str) -> None:
        """Run jobs through the API, one after the other, as an admin would (the scheduler runs only
        what it is asked in these tests), each followed until it ended."""
        for job in jobs:
            resp = self.post(f"/api/v1/jobs/{job}/run", role="admin")
            assert resp.status_code == 202, resp.get_data(as_text=True)
            run = self.wait_for_run(resp.headers["Location"])
            assert run["outcome"] in ("succeeded", "skipped"), run

    def wait_for_run(self, location: str, timeout_s: float = 300.0) -> dict[str, Any]:
        """GET a job run until it is no longer running."""
        deadline = time.monotonic() + timeout_s
        while True:
            resp = self.get(location)
            assert resp.status_code == 200, resp.get_data(as_text=True)
            run: dict[str, Any] = resp.get_json()
            if run["outcome"] != "running":
                return run
            assert time.monotonic() < deadline, f"{location} still running after {timeout_s:g} s"
            time.sleep(0.05)

    def recommendation(self, timeout_s: float = 120.0) -> dict[str, Any]:
        """A fresh recommendation with moves for the pod, after collecting and modelling what the lab
        has run. Each module resets the lab, whose clock then restarts: called at once, the lab may
        have solved too few intervals for any datastore to have been seen above the latency
        threshold, and the balancer rightly waits (a round without moves, ``id`` null). So it
        collects, models and asks again, once a second of wall time (a minute of the lab's), until
        the round has moves."""
        deadline = time.monotonic() + timeout_s
        while True:
            self.run_jobs("collect", "model")
            resp = self.post("/api/v1/pods/basil/recommendations")
            assert resp.status_code == 201, resp.get_data(as_text=True)
            body: dict[str, Any] = resp.get_json()
            if body["moves"]:
                assert body["id"] is not None, body
                return body
            assert time.monotonic() < deadline, f"no move after {timeout_s:g} s: {body['stop_reason']}"
            time.sleep(1.0)

    def client(self) -> FlaskClient:
        return self.app.test_client()

    def headers(self, role: str | None) -> dict[str, str]:
        return {} if role is None else {"Authorization": f"Bearer {self.tokens[role]}"}

    def get(self, path: str, role: str | None = "viewer", **kw: Any) -> Any:
        return self.client().get(path, headers={**self.headers(role), **kw.pop("headers", {})}, **kw)

    def post(self, path: str, role: str | None = "operator", **kw: Any) -> Any:
        return self.client().post(path, headers={**self.headers(role), **kw.pop("headers", {})}, **kw)

    def put(self, path: str, role: str | None = "operator", **kw: Any) -> Any:
        return self.client().put(path, headers={**self.headers(role), **kw.pop("headers", {})}, **kw)

    def delete(self, path: str, role: str | None = "operator", **kw: Any) -> Any:
        return self.client().delete(path, headers={**self.headers(role), **kw.pop("headers", {})}, **kw)


def lab_config(lab: LabProcess, db: Path, **more: Any) -> BasilConfig:
    """The service's configuration for *lab*: one vCenter, the BASIL pod, a SQLite store in *db*."""
    return BasilConfig(
        vcenters=(
            VCenterConfig(
                name="lab", server=lab.server, user=lab.user, password_env=PASSWORD_ENV,
                tls=TLSOptions(ca_bundle=lab.pem),
            ),
        ),
        pods=(PodConfig(name="basil", vcenter="lab", datastore_cluster="basil-pod"),),
        schedules=SchedulesConfig(collect_s=20, model_s=60, recommend_s=60),
        store=StoreConfig(url=f"sqlite:///{db}"),
        **more,
    )  # fmt: skip


@pytest.fixture(scope="session")
def api_lab() -> Iterator[LabProcess]:
    with LabProcess.start(SCENARIO, speed=60) as lab:
        yield lab


@pytest.fixture(scope="module")
def api_env(api_lab: LabProcess, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ApiEnv]:
    """A Service whose scheduler runs only the jobs the tests ask for through the API, fresh per module."""
    os.environ[PASSWORD_ENV] = api_lab.password
    api_lab.reset()
    config = lab_config(api_lab, tmp_path_factory.mktemp("api") / "basil.db")
    service = Service.from_config(config)
    service.start(periodic=False)
    tokens: dict[str, str] = {}
    with service.store.session() as session:
        for role in ROLES:
            tokens[role], _ = create_token(session, f"test-{role}", role, created_by="tests")
    try:
        yield ApiEnv(api_lab, service, create_app(service), tokens, config)
    finally:
        service.shutdown()


def lab_session_token(lab: LabProcess) -> str:
    """A vSphere session token as the vSphere Client holds it: an Automation API session of the lab."""
    resp = requests.post(
        f"https://{lab.server}/api/session", auth=(lab.user, lab.password), verify=lab.pem, timeout=30
    )
    resp.raise_for_status()
    token = resp.json()
    assert isinstance(token, str)
    return token
