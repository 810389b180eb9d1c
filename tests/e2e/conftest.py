"""End-to-end harness: the lab vCenter and ``basil serve`` as real subprocesses, spoken to over HTTPS.

Nothing is shared with the service's process: the configuration is a YAML file, the token comes from
``basil token create``, requests go through TLS verified against the certificate the service
generated, and the lab's ground truth is read through its control API.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any, TypeVar

import pytest
import requests
import yaml

from basil.serve import READY_LINE
from tests.ports import free_port
from tests.vcenter.labproc import ROOT, LabProcess

BASIL = [sys.executable, "-m", "basil"]
PASSWORD_ENV = "BASIL_E2E_VC_PASSWORD"
T = TypeVar("T")


def wait_for(what: str, probe: Callable[[], T | None], timeout_s: float = 180, every_s: float = 1.0) -> T:
    """Poll *probe* until it returns something other than None/False (a condition, never a timing claim)."""
    deadline = time.monotonic() + timeout_s
    last: Any = None
    while time.monotonic() < deadline:
        last = probe()
        if last is not None and last is not False:
            return last
        time.sleep(every_s)
    raise AssertionError(f"gave up waiting for {what} after {timeout_s:.0f} s (last: {last!r})")


def write_config(workdir: Path, lab: LabProcess, **sections: Any) -> Path:
    """A basil.yaml for *lab* in *workdir*: SQLite store and self-signed TLS under it, fast schedules."""
    doc: dict[str, Any] = {
        "vcenters": [
            {"name": "lab", "server": lab.server, "user": lab.user, "password_env": PASSWORD_ENV,
             "tls": {"ca_bundle": lab.pem}},
        ],
        "pods": [{"name": "basil", "vcenter": "lab", "datastore_cluster": "basil-pod", "mode": "manual"}],
        "schedules": {"collect_s": 5, "inventory_s": 30, "model_s": 10, "recommend_s": 3600, "srp_s": 3600,
                      "maintenance_s": 60},
        "store": {"url": f"sqlite:///{workdir / 'basil.db'}"},
        "server": {"listen": f"127.0.0.1:{free_port()}",
                   "tls": {"self_signed": True, "dir": str(workdir / "tls")}},
    }  # fmt: skip
    for key, value in sections.items():
        doc[key] = {**doc.get(key, {}), **value} if isinstance(value, dict) else value
    path = workdir / "basil.yaml"
    path.write_text(yaml.safe_dump(doc), encoding="utf-8")
    return path


def _drain(stream: IO[str], path: Path) -> None:
    with path.open("a", encoding="utf-8") as out:
        for line in stream:
            out.write(line)
            out.flush()


class ServeProcess:
    """One ``basil serve`` subprocess on a config file."""

    def __init__(
        self, config: Path, env: dict[str, str], proc: subprocess.Popen[str], banner: list[str]
    ) -> None:
        self.config = config
        self.env = env
        self.proc = proc
        self.banner = banner
        self.workdir = config.parent
        self.base = next(
            line.split(" API ", 1)[1].split("/api/v1/", 1)[0] for line in banner if " API " in line
        )
        self.cert = self.workdir / "tls" / "basil.crt"
        self.token = ""
        self.drain: threading.Thread | None = None

    @classmethod
    def start(cls, config: Path, env: dict[str, str], timeout_s: float = 180) -> ServeProcess:
        log = config.parent / "serve.log"
        with log.open("a", encoding="utf-8") as stderr:
            proc = subprocess.Popen(
                [*BASIL, "serve", "--config", str(config)], stdout=subprocess.PIPE,
                stderr=stderr, text=True, env=env, cwd=config.parent,
            )  # fmt: skip
        assert proc.stdout is not None
        banner: list[str] = []
        deadline = time.monotonic() + timeout_s
        for line in proc.stdout:
            banner.append(line.rstrip("\n"))
            if line.strip() == READY_LINE or time.monotonic() > deadline:
                break
        if not banner or banner[-1] != READY_LINE:
            proc.kill()
            proc.wait(timeout=30)
            proc.stdout.close()
            raise RuntimeError(f"basil serve did not start: {banner}\n{log.read_text(encoding='utf-8')}")
        serve = cls(config, env, proc, banner)
        serve.drain = threading.Thread(
            target=_drain, args=(proc.stdout, config.parent / "serve.out"), daemon=True
        )
        serve.drain.start()
        return serve

    def url(self, path: str) -> str:
        return f"{self.base}{path}"

    def request(self, method: str, path: str, *, token: str | None = None, **kw: Any) -> requests.Response:
        headers = kw.pop("headers", {})
        if token or self.token:
            headers.setdefault("Authorization", f"Bearer {token or self.token}")
        return requests.request(
            method, self.url(path), headers=headers, verify=str(self.cert), timeout=120, **kw
        )

    def get(self, path: str, **kw: Any) -> Any:
        resp = self.request("GET", path, **kw)
        assert resp.status_code == 200, (path, resp.status_code, resp.text)
        return resp.json()

    def post(self, path: str, body: Any = None, expect: int = 200, **kw: Any) -> Any:
        resp = self.request("POST", path, json=body, **kw)
        assert resp.status_code == expect, (path, resp.status_code, resp.text)
        return resp.json() if resp.content else None

    def stop(self, sig: int = signal.SIGTERM, timeout_s: float = 180) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired as err:
                self.proc.send_signal(signal.SIGUSR2)  # every thread's stack into serve.out, then kill
                time.sleep(2)
                self.proc.kill()
                self.proc.wait(timeout=30)
                if self.drain is not None:
                    self.drain.join(timeout=30)
                raise AssertionError(
                    f"basil serve did not stop in {timeout_s} s after {sig!r}:\n{self.log()[-20000:]}"
                ) from err
        if self.drain is not None:
            self.drain.join(timeout=30)
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        return self.proc.returncode

    def log(self) -> str:
        return "\n".join(
            p.read_text(encoding="utf-8")
            for p in (self.workdir / "serve.log", self.workdir / "serve.out")
            if p.exists()
        )


def basil_cli(env: dict[str, str], *args: str) -> str:
    result = subprocess.run(
        [*BASIL, *args], capture_output=True, text=True, env=env, timeout=300, check=False
    )
    assert result.returncode == 0, (args, result.stdout, result.stderr)
    return result.stdout


def lab_env(lab: LabProcess) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("BASIL_")}
    env[PASSWORD_ENV] = lab.password
    return env


def start_service(lab: LabProcess, workdir: Path, **sections: Any) -> ServeProcess:
    """Migrate the store, create an admin token with the CLI, and start ``basil serve``."""
    env = lab_env(lab)
    config = write_config(workdir, lab, **sections)
    basil_cli(env, "db", "upgrade", "--config", str(config))
    token = basil_cli(env, "token", "create", "e2e-admin", "--role", "admin", "--config", str(config)).strip()
    serve = ServeProcess.start(config, env)
    serve.token = token
    return serve


@pytest.fixture
def lab_63() -> Iterator[LabProcess]:
    """The BASIL §6.3 scenario: all eight workloads on the 6-disk LUN, the 3- and 9-disk LUNs empty."""
    with LabProcess.start(ROOT / "lab" / "scenarios" / "basil-6.3.yaml", speed=60) as lab:
        yield lab
