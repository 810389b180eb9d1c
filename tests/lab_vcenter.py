"""The lab vCenter for tests: start the `basil-lab` binary (built by `make lab`) on a free loopback
port, wait until it answers, describe how to reach it, stop it. The `lab_factory` fixture of
tests/conftest.py is built on this."""

from __future__ import annotations

import base64
import json
import os
import queue
import re
import ssl
import subprocess
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import pytest

REPO = Path(__file__).resolve().parent.parent
LAB_BINARY = Path(os.environ.get("BASIL_LAB_BINARY", REPO / "build" / "basil-lab"))
LAB_SCENARIOS = REPO / "lab" / "scenarios"
LAB_USER = "administrator@vsphere.local"
LAB_PASSWORD = "basil-lab-test"
#: Pass as the scenario to start govmomi's stock simulator model (`basil-lab --stock`, vcsim's default
#: inventory: DC0, DC0_C0_H0, LocalDS_0, an empty DC0_POD0; any user and password log in).
STOCK = "stock"
# A large scenario is built in seconds; a slow shared machine gets a generous margin.
STARTUP_TIMEOUT_S = 120.0


@dataclass(frozen=True)
class LabInstance:
    """A running lab vCenter and how to reach it."""

    host: str
    port: int
    user: str
    password: str
    scheme: str
    scenario: Path | None  # None: the stock simulator model (STOCK)
    control_url: str  # base of the control API, ending in "/lab/"
    thumbprint: str | None = None  # SHA-1 of the certificate, "AA:BB:..." (TLS only)
    thumbprint_sha256: str | None = None
    ca_pem: Path | None = None  # the self-signed certificate, to verify TLS against (TLS only)
    log: Path = field(default=Path(os.devnull))  # the lab's stderr
    _stop: Callable[[], None] = field(default=lambda: None, repr=False, compare=False)

    def stop(self) -> None:
        """Stops the lab (the factory stops every lab at the end of the session anyway)."""
        self._stop()

    @property
    def sdk_url(self) -> str:
        return f"{self.scheme}://{self.host}:{self.port}/sdk"

    @property
    def base_url(self) -> str:
        return f"{self.scheme}://{self.host}:{self.port}"

    def control(self, method: str, path: str, body: Any = None) -> Any:
        """Calls the control API (`path` relative to /lab/) with the lab's credentials and returns
        the decoded JSON answer; an HTTP error raises LabControlError with the lab's message."""
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.control_url + path.lstrip("/"), data=data, method=method)
        req.add_header("Authorization", basic_auth(self.user, self.password))
        req.add_header("Content-Type", "application/json")  # the lab refuses a POST or PUT without it
        try:
            with urllib.request.urlopen(req, context=self._ssl_context(), timeout=120) as res:
                return json.loads(res.read() or b"null")
        except urllib.error.HTTPError as e:
            detail = e.read().decode(errors="replace")
            raise LabControlError(e.code, detail) from None

    def step(self, intervals: int = 1) -> Any:
        """Advances simulated time by whole 20 s intervals, solving each."""
        return self.control("POST", "time/step", {"intervals": intervals})

    def _ssl_context(self) -> ssl.SSLContext | None:
        if self.scheme != "https" or self.ca_pem is None:
            return None
        return ssl.create_default_context(cafile=str(self.ca_pem))


def basic_auth(user: str, password: str) -> str:
    """The Authorization header value of HTTP Basic authentication, which the control API needs."""
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode("ascii")


class LabControlError(Exception):
    """The control API refused a request."""

    def __init__(self, status: int, detail: str) -> None:
        super().__init__(f"HTTP {status}: {detail}")
        self.status = status
        self.detail = detail


class LabFactory(Protocol):
    def __call__(
        self,
        scenario: str | Path,
        *,
        speed: float = ...,
        tls: bool = ...,
        cap_realtime_queries: bool = ...,
        extra_args: tuple[str, ...] = ...,
    ) -> LabInstance: ...


def scenario_path(scenario: str | Path) -> Path:
    """A scenario file: a path, or the name of one of lab/scenarios/*.yaml."""
    path = Path(scenario)
    if path.suffix in (".yaml", ".yml") and path.exists():
        return path.resolve()
    named = LAB_SCENARIOS / f"{scenario}.yaml"
    if named.exists():
        return named
    known = sorted(p.stem for p in LAB_SCENARIOS.glob("*.yaml"))
    raise FileNotFoundError(f"no scenario {scenario!r} (a YAML file, or one of {known})")


class RunningLab:
    """A lab process and the thread draining its output."""

    def __init__(self, proc: subprocess.Popen[str], lines: queue.Queue[str | None], log: Path) -> None:
        self.proc = proc
        self.lines = lines
        self.log = log
        self.reader = threading.Thread(target=_pump, args=(proc.stdout, lines), daemon=True)
        self.reader.start()

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        self.reader.join(timeout=10)
        if self.proc.stdout is not None:
            self.proc.stdout.close()


def _pump(stream: Any, lines: queue.Queue[str | None]) -> None:
    # Keeps the pipe drained for the life of the process.
    for line in stream:
        lines.put(line.rstrip("\n"))
    lines.put(None)


def start_lab(
    tmp: Path,
    scenario: str | Path,
    *,
    speed: float,
    tls: bool,
    cap_realtime_queries: bool,
    extra_args: tuple[str, ...],
) -> tuple[LabInstance, RunningLab]:
    if not LAB_BINARY.exists():
        pytest.fail(f"{LAB_BINARY} is missing: build it with `make lab` (make pytest does)")
    path = None if scenario == STOCK else scenario_path(scenario)
    cert = tmp / "lab-cert.pem"
    log = tmp / "lab.log"
    model = ["--stock"] if path is None else ["--scenario", str(path)]
    args = [str(LAB_BINARY), *model, "--listen", "127.0.0.1:0", "--speed", str(speed)]
    args += ["--user", LAB_USER]
    env = {**os.environ, "BASIL_LAB_PASSWORD": LAB_PASSWORD}  # not on the command line, which ps shows
    if tls:
        args += ["--tls", "--cert-out", str(cert)]
    if cap_realtime_queries:
        args.append("--cap-realtime-queries")
    args += list(extra_args)
    with log.open("w") as err:
        proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=err, text=True, env=env)
    lines: queue.Queue[str | None] = queue.Queue()
    running = RunningLab(proc, lines, log)
    seen: dict[str, str] = {}
    deadline = time.monotonic() + STARTUP_TIMEOUT_S
    while "ready" not in seen:
        try:
            line = lines.get(timeout=max(0.1, deadline - time.monotonic()))
        except queue.Empty:
            running.stop()
            tail = log.read_text()[-2000:]
            pytest.fail(f"the lab did not start in {STARTUP_TIMEOUT_S:.0f}s; its log: {tail}")
        if line is None:
            running.stop()
            pytest.fail(f"the lab exited with {proc.wait()}: {log.read_text()[-2000:]}")
        match = re.match(r"basil-lab: (\w+)(?: (.*))?$", line)
        if match:
            seen[match.group(1)] = match.group(2) or ""
            if match.group(1) == "thumbprint":
                kind, value = match.group(2).split(" ", 1)
                seen["thumbprint_" + kind] = value
    url = re.match(r"(https?)://([^:/]+):(\d+)/sdk", seen["url"])
    assert url, f"unexpected url line: {seen['url']}"
    instance = LabInstance(
        host=url.group(2),
        port=int(url.group(3)),
        user=LAB_USER,
        password=LAB_PASSWORD,
        scheme=url.group(1),
        scenario=path,
        control_url=seen["control"],
        thumbprint=seen.get("thumbprint_sha1"),
        thumbprint_sha256=seen.get("thumbprint_sha256"),
        ca_pem=cert if tls else None,
        log=log,
        _stop=running.stop,
    )
    instance.control("GET", "status")  # it answers
    return instance, running
