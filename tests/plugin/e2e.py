"""End-to-end harness of the plugin's browser tests: the lab vCenter, the real service serving the built
plugin over HTTPS (in this process; its scheduler runs only the jobs the tests ask for), and Debian's
chromium driven by Playwright. Screenshots go to test-artifacts/plugin/."""

from __future__ import annotations

import json
import os
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import requests

from basil.app import Service
from basil.config import (
    BasilConfig,
    PodConfig,
    ServerConfig,
    ServerTLSConfig,
    StoreConfig,
    TLSOptions,
    VCenterConfig,
)
from basil.serve.server import BasilServer
from basil.store.tokens import create_token
from tests.ports import free_port
from tests.vcenter.labproc import LabProcess

ROOT = Path(__file__).resolve().parents[2]
DIST = ROOT / "plugin" / "dist"
ARTIFACTS = ROOT / "test-artifacts" / "plugin"
CHROMIUM = Path("/usr/bin/chromium")
# The launch flags this machine needs: no sandbox as root, and nothing that reaches for the network.
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
PASSWORD_ENV = "BASIL_TEST_PLUGIN_VC_PASSWORD"
POD = "basil"
VIEWPORT = {"width": 1280, "height": 800}


class ManualService(Service):
    """The service whose scheduler runs only what the tests ask for through the API (collect, model, srp)."""

    def start(self, scheduler: bool = True, periodic: bool = False) -> None:
        super().start(scheduler=True, periodic=False)


@dataclass
class Basil:
    """A running service: its base URL, certificate, tokens, and a client for the API."""

    url: str
    cert: Path
    sha256: str
    tokens: dict[str, str]
    lab: LabProcess

    def api(self, method: str, path: str, role: str = "admin", body: Any = None, expect: int = 200) -> Any:
        resp = requests.request(
            method,
            f"{self.url}/api/v1{path}",
            headers={"Authorization": f"Bearer {self.tokens[role]}"},
            json=body,
            verify=str(self.cert),
            timeout=120,
        )
        assert resp.status_code == expect, (method, path, resp.status_code, resp.text)
        return resp.json() if resp.content else None

    def run_job(self, job: str) -> None:
        """Ask the service's scheduler to run *job* and follow the run until it ends."""
        run = self.api("POST", f"/jobs/{job}/run", expect=202)
        deadline = time.monotonic() + 300
        while run["outcome"] == "running":
            assert time.monotonic() < deadline, f"run {run['id']} of job {job} did not end"
            time.sleep(0.1)
            run = self.api("GET", f"/jobs/{job}/runs/{run['id']}")
        assert run["outcome"] in ("succeeded", "skipped"), run

    def collect(self, cycles: int, pause_s: float = 0.5) -> None:
        """Collect *cycles* times, letting the lab's clock (120x) run 3 intervals in between."""
        for _ in range(cycles):
            self.run_job("collect")
            time.sleep(pause_s)

    def placement(self) -> dict[tuple[str, str], dict[str, Any]]:
        """The lab's ground truth: (VM name, unit) -> {datastore, reservation, limit, shares}."""
        found = self.lab.control("GET", "/lab/placement")
        return {(vm["name"], d["unit"]): d for vm in found["vms"] for d in vm["disks"]}


def basil_config(lab: LabProcess, work: Path) -> BasilConfig:
    return BasilConfig(
        vcenters=(
            VCenterConfig(
                name="lab", server=lab.server, user=lab.user, password_env=PASSWORD_ENV,
                tls=TLSOptions(ca_bundle=lab.pem),
            ),
        ),
        pods=(PodConfig(name=POD, vcenter="lab", datastore_cluster="basil-pod"),),
        store=StoreConfig(url=f"sqlite:///{work / 'basil.db'}"),
        server=ServerConfig(
            listen=f"127.0.0.1:{free_port()}", threads=8, shutdown_grace_s=5,
            tls=ServerTLSConfig(self_signed=True, dir=str(work / "tls")),
        ),
    )  # fmt: skip


def start_basil(
    lab: LabProcess, adjust: Callable[[BasilConfig], BasilConfig] | None = None
) -> Iterator[Basil]:
    """The service on *lab*, serving the built plugin (its configuration changed by *adjust*, if given);
    stopped gracefully afterwards."""
    if not (DIST / "index.html").is_file():
        raise AssertionError(f"the plugin is not built in {DIST}: run `make plugin` (make pytest does)")
    os.environ[PASSWORD_ENV] = lab.password
    with (
        tempfile.TemporaryDirectory(prefix="basil-plugin-e2e-") as tmp,
        open(os.devnull, "w", encoding="utf-8") as quiet,
    ):
        config = basil_config(lab, Path(tmp))
        server = BasilServer(adjust(config) if adjust else config, ManualService.from_config, out=quiet)
        listening = server.prepare()
        thread = threading.Thread(target=server.serve, name="basil-e2e-server", daemon=True)
        thread.start()
        try:
            assert server.service is not None
            assert listening.certificate is not None
            tokens: dict[str, str] = {}
            with server.service.store.session() as session:
                for role in ("viewer", "operator", "admin"):
                    tokens[role], _ = create_token(session, f"e2e-{role}", role, created_by="tests")
            yield Basil(
                listening.base_url,
                Path(listening.certificate.cert),
                listening.certificate.sha256,
                tokens,
                lab,
            )
        finally:
            server.stop()
            thread.join(timeout=60)


def stub_script(config: dict[str, Any]) -> str:
    """The htmlClientSdk stand-in with its configuration filled in."""
    text = (Path(__file__).parent / "htmlClientSdk_stub.js").read_text(encoding="utf-8")
    return text.replace("__BASIL_STUB_CONFIG__", json.dumps(config))


def lab_session_token(lab: LabProcess) -> str:
    """A session token as the vSphere Client holds one: an Automation API session of the lab."""
    resp = requests.post(
        f"https://{lab.server}/api/session", auth=(lab.user, lab.password), verify=lab.pem, timeout=30
    )
    resp.raise_for_status()
    token: str = resp.json()
    return token


NO_TRANSITIONS = "*, *::before, *::after, ::-webkit-progress-value { transition: none !important; }"


def shot(page: Any, name: str, full_page: bool = False) -> Path:
    """Saves a screenshot under test-artifacts/plugin/ (git-ignored) for a person to look at."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    # Without transitions, so the picture shows the state the page is in: Clarity's progress bar eases its
    # width on a pseudo-element that Playwright's animations="disabled" does not reach.
    page.add_style_tag(content=NO_TRANSITIONS)
    page.screenshot(path=str(path), full_page=full_page, animations="disabled")
    return path
