"""The basil-lab command line: a malformed scenario or a non-loopback address is refused."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.lab_vcenter import LAB_BINARY

SCENARIO = Path(__file__).with_name("lab_test_scenario.yaml")


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(LAB_BINARY), *args], capture_output=True, text=True, timeout=60, check=False)


def test_a_malformed_scenario_exits_with_the_scenario_message(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: bad\nhosts: [{name: esx-01}]\nvms:\n  - name: vm-1\n    host: esx-99\n")
    result = run("--scenario", str(bad), "--listen", "127.0.0.1:0")
    assert result.returncode != 0
    assert f'{bad}:line 5: vms[0].host: unknown host "esx-99"' in result.stderr
    assert "basil-lab: ready" not in result.stdout


@pytest.mark.parametrize("address", ["0.0.0.0:0", "192.0.2.1:8989"])
def test_only_loopback_is_served(address: str) -> None:
    result = run("--scenario", str(SCENARIO), "--listen", address)
    assert result.returncode != 0
    assert "loopback only" in result.stderr


def test_flags_are_checked_together() -> None:
    result = run("--cert", "x.pem", "--svmotion-mbps", "0")
    assert result.returncode == 2
    for field in ("--scenario", "--cert and --key", "--cert: needs --tls", "--svmotion-mbps"):
        assert field in result.stderr
