"""The container image definition and the systemd unit, checked without a container engine or systemd.

The machine has a docker client but no daemon, and no systemd running: the Containerfile is read
(instructions, a non-root user, the health check's Python compiles and asks /api/v1/health) and the
unit is verified by ``systemd-analyze verify`` with its ExecStart pointed at this venv's ``basil``.
"""

from __future__ import annotations

import ast
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

from tests.vcenter.labproc import ROOT

CONTAINERFILE = ROOT / "Containerfile"
UNIT = ROOT / "packaging" / "systemd" / "basil.service"


def instructions(text: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) of a Containerfile, continuation lines joined, comments dropped."""
    logical: list[str] = []
    pending = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not pending and (not line or line.startswith("#")):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        logical.append(pending + line)
        pending = ""
    assert not pending, "a continuation line ends the file"
    return [(w.split(None, 1)[0].upper(), w.split(None, 1)[1] if " " in w else "") for w in logical]


def test_containerfile_builds_from_the_wheel_runs_unprivileged_and_checks_health() -> None:
    steps = instructions(CONTAINERFILE.read_text(encoding="utf-8"))
    names = [name for name, _ in steps]
    assert names[0] == "FROM"
    copies = [args for name, args in steps if name == "COPY"]
    assert any(re.search(r"\bdist/basil-\*\.whl\b", args) for args in copies), copies
    runs = " ".join(args for name, args in steps if name == "RUN")
    assert re.search(r"pip install /tmp/wheels/basil-\*\.whl", runs), runs
    users = [args for name, args in steps if name == "USER"]
    assert users, "no USER: the image would run as root"
    assert users[-1].split(":")[0] not in ("root", "0"), users
    assert names.index("USER") > max(i for i, n in enumerate(names) if n == "RUN"), "RUN after USER"
    assert names.index("USER") < names.index("CMD")
    (health,) = [args for name, args in steps if name == "HEALTHCHECK"]
    command = json.loads(health.split("CMD", 1)[1].strip())
    assert command[:2] == ["python", "-c"], command
    code = command[2]
    ast.parse(code)  # raises SyntaxError on a broken check
    assert "https://127.0.0.1:8443/api/v1/health" in code
    (cmd,) = [args for name, args in steps if name == "CMD"]
    assert json.loads(cmd) == ["basil", "serve"]
    assert ("EXPOSE", "8443") in steps


def test_systemd_unit_verifies(tmp_path: Path) -> None:
    analyze = shutil.which("systemd-analyze")
    assert analyze is not None, "systemd-analyze is missing (Debian package systemd)"
    basil = Path(sys.executable).parent / "basil"
    text = UNIT.read_text(encoding="utf-8")
    assert "/opt/basil/venv/bin/basil serve" in text
    assert re.search(r"^User=basil$", text, re.M)
    assert re.search(r"^EnvironmentFile=/etc/basil/basil\.env$", text, re.M)
    unit = tmp_path / "basil.service"
    unit.write_text(text.replace("/opt/basil/venv/bin/basil", str(basil)), encoding="utf-8")
    verify = subprocess.run(
        [analyze, "verify", str(unit)], capture_output=True, text=True, timeout=60, check=False
    )
    assert verify.returncode == 0, verify.stderr
    assert verify.stdout + verify.stderr == "", verify.stdout + verify.stderr


def test_environment_file_sets_the_configurations_password_variable() -> None:
    env = (ROOT / "packaging" / "systemd" / "basil.env").read_text(encoding="utf-8")
    assigned = {line.split("=", 1)[0] for line in env.splitlines() if line and not line.startswith("#")}
    config = (ROOT / "packaging" / "basil.yaml").read_text(encoding="utf-8")
    wanted = set(re.findall(r"password_env: (\w+)", config))
    assert wanted, "packaging/basil.yaml names no password variable"
    assert wanted <= assigned, (wanted, assigned)
