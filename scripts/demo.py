"""``make demo``: Basil on its embedded default — the lab vCenter on a shipped scenario and the service.

Starts the lab (``build/basil-lab``, built by ``make lab``) on BASIL §6.3 (all eight workloads on one
LUN, two empty LUNs beside it) at an accelerated speed, writes a demo configuration under
``var/demo/``, migrates the SQLite store, creates an admin API token, starts ``basil serve`` (HTTPS,
self-signed), and prints the URLs and the token. Within about a minute the service has collected,
modelled and recommended moves. Ctrl-C (or SIGTERM) stops the service gracefully, then the lab.

The store (``var/demo/basil.db``: tokens, plans, audit, history) is kept across runs; ``--fresh``
(``make demo FRESH=1``) starts from an empty one. The admin token is kept in ``var/demo/admin.token``
(mode 0600) and reused while it is active. The lab's scenario starts over on every run, but its clock
goes on from where the previous run's stopped (``var/demo/lab-clock``), so collection resumes after the
stored samples. The service's log is ``var/demo/serve.log``, the lab's ``var/demo/lab.log``; the
service's address is written to ``var/demo/url`` once it is ready (for scripts and the README's
first session).

The lab's password is random per run and reaches the lab and the service through their environments
(``BASIL_LAB_PASSWORD``, ``BASIL_VCENTER_PASSWORD``), never a command line that ``ps`` shows. Neither
this script nor the service uses the lab's control API (``/lab/``).
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import FrameType
from typing import IO, Any

import yaml

from basil.config import default_config_text

ROOT = Path(__file__).resolve().parent.parent
LAB_BINARY = ROOT / "build" / "basil-lab"
# The packaged default's paths (var/demo/...) are relative: every child runs in the repository.
WORK = ROOT / "var" / "demo"
PASSWORD_ENV = "BASIL_VCENTER_PASSWORD"  # the packaged default's vcenters[0].password_env
LAB_PASSWORD_ENV = "BASIL_LAB_PASSWORD"  # basil-lab reads its password from there
READY = "basil serve: ready"
LAB_USER = "administrator@vsphere.local"  # the packaged default's vcenters[0].user
TOKEN_NAME = "demo-admin"
STORE_FILES = ("basil.db", "basil.db-wal", "basil.db-shm", "admin.token", "lab-clock")
RUN_FILES = ("lab.log", "serve.log", "url")  # of one run: removed at the next start


def say(text: str) -> None:
    print(f"demo: {text}", flush=True)


def free_port(preferred: int) -> int:
    """*preferred* if nothing listens there, else any free loopback port.

    The check binds as the servers do, with SO_REUSEADDR: a port whose last connections linger in
    TIME_WAIT after a quick restart is free for them (Linux still refuses it while a socket listens)."""
    for port in (preferred, 0):
        with socket.socket() as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            found: int = s.getsockname()[1]
            return found
    raise RuntimeError("no free port on 127.0.0.1")


def basil(*args: str, env: dict[str, str]) -> str:
    result = subprocess.run(
        [sys.executable, "-m", "basil", *args], capture_output=True, text=True, env=env, check=False, cwd=ROOT
    )
    if result.returncode != 0:
        raise RuntimeError(f"basil {' '.join(args)} failed:\n{result.stderr.strip()}")
    return result.stdout


def _copy_lines(stream: IO[str], log: Path, echo: bool) -> None:
    with log.open("a", encoding="utf-8") as out:
        for line in stream:
            out.write(line)
            out.flush()
            if echo:
                print(line, end="", flush=True)


class Child:
    """A child process in its own session (so Ctrl-C reaches only this script, which stops it in order)."""

    def __init__(self, name: str, args: list[str], log: Path, env: dict[str, str] | None = None) -> None:
        self.name = name
        self.log = log
        self.proc = subprocess.Popen(
            args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, cwd=ROOT,
            start_new_session=True,
        )  # fmt: skip
        self.lines: list[str] = []

    def wait_for(self, marker: str, timeout_s: float) -> list[str]:
        """Read output lines until one contains *marker*; then keep draining in the background."""
        assert self.proc.stdout is not None
        deadline = time.monotonic() + timeout_s
        for line in self.proc.stdout:
            self.lines.append(line.rstrip("\n"))
            with self.log.open("a", encoding="utf-8") as out:
                out.write(line)
            if marker in line:
                threading.Thread(
                    target=_copy_lines, args=(self.proc.stdout, self.log, False), daemon=True
                ).start()
                return self.lines
            if time.monotonic() > deadline:
                break
        raise RuntimeError(f"{self.name} did not start; see {self.log}:\n" + "\n".join(self.lines[-20:]))

    def stop(self, timeout_s: float = 120) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                say(f"{self.name} did not stop in {timeout_s:.0f} s; killing it")
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode


# What the demo changes in the packaged default (basil.default.yaml, the configuration it runs):
# schedules in wall-clock seconds for a lab that runs `speed` times faster, so a minute of wall time
# is `speed` minutes of the scenario: enough samples for the models and a first recommendation.
DEMO_SCHEDULES = {"collect_s": 10, "inventory_s": 60, "model_s": 20, "recommend_s": 45, "srp_s": 30,
                  "maintenance_s": 60}  # fmt: skip


def scenario_pods(scenario: Path) -> list[str]:
    """The datastore clusters a lab scenario declares, in the order they first appear."""
    doc = yaml.safe_load(scenario.read_text(encoding="utf-8")) or {}
    found = [ds.get("pod") for ds in doc.get("datastores") or [] if isinstance(ds, dict)]
    return list(dict.fromkeys(p for p in found if isinstance(p, str) and p))


def demo_config(lab_server: str, api_port: int, scenario: Path) -> dict[str, Any]:
    """The packaged default, changed only where the demo must: the lab's and the API's address (their
    ports may be taken), the pod's datastore cluster when the scenario has no basil-pod, the schedules."""
    doc: dict[str, Any] = yaml.safe_load(default_config_text())
    doc["vcenters"][0]["server"] = lab_server
    pods = scenario_pods(scenario)
    if pods and doc["pods"][0]["datastore_cluster"] not in pods:
        doc["pods"][0]["datastore_cluster"] = pods[0]
    doc["schedules"] = {**doc["schedules"], **DEMO_SCHEDULES}
    doc["server"]["listen"] = f"127.0.0.1:{api_port}"
    return doc


def write_config(lab_server: str, api_port: int, speed: float, scenario: Path) -> Path:
    """var/demo/basil.yaml: the demo's configuration (see :func:`demo_config`)."""
    path = WORK / "basil.yaml"
    path.write_text(
        f"# Written by scripts/demo.py (lab at {speed:g}x) from Basil's packaged default "
        "(basil config default); paths are relative to the repository.\n"
        + yaml.safe_dump(demo_config(lab_server, api_port, scenario), sort_keys=False),
        encoding="utf-8",
    )
    return path


class LabClock:
    """The lab's simulated time, kept in var/demo/lab-clock so that a kept store's samples are never
    ahead of the next run's lab (the collector resumes after the newest stored sample)."""

    def __init__(self, speed: float) -> None:
        self.path = WORK / "lab-clock"
        self.speed = speed
        saved = self._saved()
        now = datetime.now(UTC)
        self.start = (saved if saved is not None and saved > now else now).replace(microsecond=0)
        self.wall0 = time.monotonic()  # before the lab starts its clock: an estimate never behind it

    def _saved(self) -> datetime | None:
        try:
            return datetime.fromisoformat(self.path.read_text(encoding="utf-8").strip())
        except (OSError, ValueError):
            return None

    def now(self) -> datetime:
        return self.start + timedelta(seconds=(time.monotonic() - self.wall0) * self.speed)

    def save(self) -> None:
        self.path.write_text(self.now().isoformat().replace("+00:00", "Z") + "\n", encoding="utf-8")


def start_lab(scenario: Path, port: int, clock: LabClock, password: str) -> Child:
    speed = clock.speed
    say(f"starting the lab vCenter on {scenario.name} at {speed:g}x (127.0.0.1:{port})")
    args = [str(LAB_BINARY), "--scenario", str(scenario), "--listen", f"127.0.0.1:{port}", "--tls"]
    args += ["--cert-out", str(WORK / "lab.pem"), "--speed", str(speed), "--user", LAB_USER]
    args += ["--start", clock.start.isoformat().replace("+00:00", "Z")]
    # The password goes in the environment: a command line is readable by every local user (ps).
    env = {k: v for k, v in os.environ.items() if not k.startswith("BASIL_")}
    env[LAB_PASSWORD_ENV] = password
    return Child("basil-lab", args, WORK / "lab.log", env)


def admin_token(config: Path, env: dict[str, str]) -> str:
    """The kept admin token while it is active in the store, else a new one (saved, mode 0600)."""
    saved = WORK / "admin.token"
    tokens = json.loads(basil("token", "list", "--json", "--config", str(config), env=env))
    names = {t["name"]: t for t in tokens}
    if saved.exists() and names.get(TOKEN_NAME, {}).get("active"):
        say(f"reusing the admin token in {saved.relative_to(ROOT)}")
        return saved.read_text(encoding="utf-8").strip()
    name = TOKEN_NAME if TOKEN_NAME not in names else f"{TOKEN_NAME}-{datetime.now(UTC):%Y%m%d%H%M%S}"
    token = basil("token", "create", name, "--role", "admin", "--config", str(config), env=env).strip()
    if name == TOKEN_NAME:
        saved.unlink(missing_ok=True)
        fd = os.open(saved, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(token + "\n")
    return token


def start_service(config: Path, env: dict[str, str]) -> tuple[Child, str, list[str]]:
    """Migrate the store, get the admin token, start `basil serve`; (process, token, banner)."""
    say(f"configuration {config.relative_to(ROOT)}; migrating the store")
    basil("db", "upgrade", "--config", str(config), env=env)
    token = admin_token(config, env)
    say("starting basil serve")
    serve = Child(
        "basil serve",
        [sys.executable, "-m", "basil", "serve", "--config", str(config)],
        WORK / "serve.log",
        env,
    )
    return serve, token, serve.wait_for(READY, timeout_s=180)


def welcome(banner: list[str], token: str) -> None:
    base = next(line.split(" API ", 1)[1].split("/api/v1/", 1)[0] for line in banner if " API " in line)
    for line in banner:
        print(line, flush=True)
    cert = (WORK / "tls" / "basil.crt").relative_to(ROOT)
    (WORK / "url").write_text(base + "\n", encoding="utf-8")
    print(flush=True)
    say("Basil is running on the lab (BASIL §6.3: eight workloads crowded on 6diskLUN).")
    say(f"  API          {base}/api/v1/   (OpenAPI: {base}/api/v1/openapi.json)")
    if (ROOT / "plugin" / "dist" / "index.html").exists() and any("plugin" in line for line in banner):
        say(f"  plugin UI    {base}/plugin/index.html  (standalone; paste the token when asked)")
    say(f"  admin token  {token}")
    say(f"  certificate  {cert} (self-signed; curl --cacert it, or -k)")
    say(f"  logs         {(WORK / 'serve.log').relative_to(ROOT)}, {(WORK / 'lab.log').relative_to(ROOT)}")
    say("Within a minute the service has collected, modelled and recommended. Try:")
    say(f'  curl --cacert {cert} -H "Authorization: Bearer {token}" {base}/api/v1/pods/basil/recommendations')
    say('  then POST /api/v1/plans {"recommendation_id": ...} and POST /api/v1/plans/<id>/apply (README.md).')
    say("Ctrl-C stops everything.")


def supervise(children: list[Child], stopping: threading.Event, clock: LabClock) -> int:
    """Wait for Ctrl-C; 1 if a child died on its own first."""
    while not stopping.is_set():
        clock.save()
        for child in children:
            if child.proc.poll() is not None:
                say(f"{child.name} exited with {child.proc.returncode}; see {child.log.relative_to(ROOT)}")
                return 1
        stopping.wait(1.0)
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--scenario", default="basil-6.3", help="a lab/scenarios/*.yaml name (default basil-6.3)"
    )
    parser.add_argument(
        "--speed", type=float, default=30.0, help="lab time per wall-clock second (default 30)"
    )
    parser.add_argument(
        "--port", type=int, default=8443, help="the API's port (default 8443, else a free one)"
    )
    parser.add_argument(
        "--fresh", action="store_true", help="start from an empty store (default: keep var/demo/basil.db)"
    )
    args = parser.parse_args()
    if not LAB_BINARY.exists():
        say(f"{LAB_BINARY} is missing: run `make lab` (make demo does)")
        return 2
    scenario = ROOT / "lab" / "scenarios" / f"{args.scenario}.yaml"
    if not scenario.exists():
        say(f"no scenario {scenario}")
        return 2
    # The store is kept unless --fresh (the scenario starts over either way); the certificate is
    # kept, so the thumbprint registered with a vCenter stays valid across demos.
    WORK.mkdir(parents=True, exist_ok=True)
    for leftover in (*(STORE_FILES if args.fresh else ()), *RUN_FILES):
        (WORK / leftover).unlink(missing_ok=True)
    kept = (WORK / "basil.db").exists()
    say("keeping the store var/demo/basil.db (--fresh starts over)" if kept else "a new store")
    password = secrets.token_urlsafe(18)
    env = {k: v for k, v in os.environ.items() if not k.startswith("BASIL_")}
    env[PASSWORD_ENV] = password
    stopping = threading.Event()

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        if not stopping.is_set():
            print(flush=True)
            say(f"{signal.Signals(signum).name}: stopping the service, then the lab")
        stopping.set()

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    lab_port = free_port(8989)
    clock = LabClock(args.speed)
    lab = start_lab(scenario, lab_port, clock, password)
    serve: Child | None = None
    try:
        lab.wait_for("basil-lab: ready", timeout_s=120)
        config = write_config(f"127.0.0.1:{lab_port}", free_port(args.port), args.speed, scenario)
        serve, token, banner = start_service(config, env)
        welcome(banner, token)
        return supervise([serve, lab], stopping, clock)
    except RuntimeError as err:
        say(str(err))
        return 1
    finally:
        if serve is not None:
            say(f"basil serve stopped ({serve.stop()})")
        (WORK / "url").unlink(missing_ok=True)
        lab.stop()
        clock.save()
        say("lab stopped")


if __name__ == "__main__":
    if shutil.which("go") is None and not LAB_BINARY.exists():
        print("demo: Go is needed to build the lab (https://go.dev); make demo builds it with `make lab`")
        sys.exit(2)
    sys.exit(main())
