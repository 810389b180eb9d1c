"""Starts the lab vCenter binary on a scenario and talks to its /lab/ control API (tests and benchmarks).

Basil itself never uses the control API; only tests and benchmarks do, to step simulated time, read
the ground truth and inject faults.
"""

from __future__ import annotations

import json
import os
import ssl
import subprocess
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from types import TracebackType
from typing import IO, Any

import yaml

from basil.vcenter.connection import ConnectionParams, TLSOptions

ROOT = Path(__file__).resolve().parents[2]
USER = "administrator@vsphere.local"
PASSWORD = "basil-lab-adapter-secret"


def _drain(stream: IO[str] | None, path: Path) -> None:
    if stream is None:
        return
    with path.open("a", encoding="utf-8") as out:
        for line in stream:
            out.write(line)


def lab_binary() -> Path:
    """The basil-lab binary built by ``make lab`` (or named by BASIL_LAB_BINARY)."""
    env = os.environ.get("BASIL_LAB_BINARY")
    candidates = [Path(env)] if env else []
    candidates += [
        ROOT / "build" / "basil-lab",  # make lab
        ROOT / "lab" / "bin" / "basil-lab",
        ROOT / ".lab" / "basil-lab",
        ROOT / "bin" / "basil-lab",
    ]
    for c in candidates:
        if c.is_file() and os.access(c, os.X_OK):
            return c
    raise FileNotFoundError(
        f"no basil-lab binary (looked at {', '.join(map(str, candidates))}); run `make lab`"
    )


class LabProcess:
    """One running basil-lab serving HTTPS on a free loopback port."""

    def __init__(
        self, proc: subprocess.Popen[str], workdir: Path, scenario: Path, lines: dict[str, str]
    ) -> None:
        self.proc = proc
        self.workdir = workdir
        self.scenario_path = scenario
        self.scenario: dict[str, Any] = yaml.safe_load(scenario.read_text(encoding="utf-8"))
        url = lines["url"]  # https://127.0.0.1:PORT/sdk
        self.server = url.split("://", 1)[1].split("/", 1)[0]
        self.user = USER
        self.password = PASSWORD
        self.pem = str(workdir / "lab.pem")
        self.sha1 = lines["thumbprint sha1"].replace(":", "").lower()
        self.sha256 = lines["thumbprint sha256"].replace(":", "").lower()
        self._ctx = ssl.create_default_context(cafile=self.pem)

    @classmethod
    def start(cls, scenario: Path, speed: float = 60.0, extra: tuple[str, ...] = ()) -> LabProcess:
        workdir = Path(tempfile.mkdtemp(prefix="basil-lab-"))
        cmd = [
            str(lab_binary()),
            "--scenario",
            str(scenario),
            "--listen",
            "127.0.0.1:0",
            "--tls",
            "--cert-out",
            str(workdir / "lab.pem"),
            "--speed",
            str(speed),
            "--user",
            USER,
            "--password",
            PASSWORD,
            *extra,
        ]
        stderr = (workdir / "stderr.log").open("w", encoding="utf-8")
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=stderr, text=True)
        stderr.close()
        lines: dict[str, str] = {}
        assert proc.stdout is not None
        deadline = time.monotonic() + 120
        for line in proc.stdout:
            text = line.strip().removeprefix("basil-lab: ")
            if text == "ready":
                break
            for key in ("url", "thumbprint sha1", "thumbprint sha256"):
                if text.startswith(key + " "):
                    lines[key] = text[len(key) + 1 :]
            if time.monotonic() > deadline:
                break
        if "url" not in lines or proc.poll() is not None:
            proc.kill()
            proc.wait(timeout=10)
            err = (workdir / "stderr.log").read_text(encoding="utf-8")
            raise RuntimeError(f"basil-lab did not start: {err.strip()}")
        # Keep draining its output so the lab never blocks on a full pipe.
        threading.Thread(target=_drain, args=(proc.stdout, workdir / "stdout.log"), daemon=True).start()
        return cls(proc, workdir, scenario, lines)

    def log(self) -> str:
        """What the lab wrote to stderr (for a failing test's message)."""
        return (self.workdir / "stderr.log").read_text(encoding="utf-8")

    @property
    def pid(self) -> int:
        return self.proc.pid

    def connection_params(self, **kw: Any) -> ConnectionParams:
        fields: dict[str, Any] = {
            "server": self.server,
            "user": self.user,
            "password": self.password,
            "tls": TLSOptions(ca_bundle=self.pem),
            "keepalive_s": 0,
            "backoff_s": 0.05,
        }
        fields.update(kw)
        return ConnectionParams(**fields)

    # --- control API -----------------------------------------------------------------------------

    def control(self, method: str, path: str, body: Any = None) -> Any:
        data = None if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
        req = urllib.request.Request(f"https://{self.server}{path}", data=data, method=method)
        req.add_header("Content-Type", "application/json")
        with urllib.request.urlopen(req, context=self._ctx, timeout=60) as resp:
            raw = resp.read()
        return json.loads(raw) if raw.strip() else None

    def pause(self) -> None:
        self.control("PUT", "/lab/time", {"speed": 0})

    def set_speed(self, speed: float) -> None:
        self.control("PUT", "/lab/time", {"speed": speed})

    def step(self, intervals: int = 1) -> Any:
        return self.control("POST", "/lab/time/step", {"intervals": intervals})

    def advance(self, seconds: float) -> None:
        self.step(max(1, round(seconds / 20)))

    def truth(self, intervals: int = 1) -> Any:
        return self.control("GET", f"/lab/truth?intervals={intervals}")

    def reset(self) -> None:
        self.control("POST", "/lab/reset")

    def add_fault(self, **rule: Any) -> Any:
        return self.control("POST", "/lab/faults/rules", rule)

    def clear_faults(self) -> None:
        self.control("DELETE", "/lab/faults")

    def session_loss(self) -> None:
        self.control("POST", "/lab/faults/session-loss")

    def set_accessible(self, datastore: str, accessible: bool) -> None:
        self.control("POST", "/lab/faults/datastore", {"datastore": datastore, "accessible": accessible})

    def set_latency_ms(self, ms: int) -> None:
        self.control("PUT", "/lab/faults/latency", {"ms": ms})

    def settings(self, **values: Any) -> Any:
        return self.control("PUT", "/lab/settings", values)

    # --- life cycle ------------------------------------------------------------------------------

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        if self.proc.stdout is not None:
            self.proc.stdout.close()

    def __enter__(self) -> LabProcess:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
