"""A VM's reservation suggestion end to end: the lab writes a request trace of one disk of the BASIL
§6.3 scenario (``GET /lab/trace``), an operator uploads it to ``basil serve`` for that VM over HTTPS,
and the suggestion the service keeps is what ``basil capacity`` says of the same file, shown beside
the reservation the VM's Storage Resource Pool gives it."""

from __future__ import annotations

import json
import math
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from tests.vcenter.labproc import ROOT, LabProcess

from .conftest import BASIL, basil_cli, lab_env, start_service

VM = "oltp-1"
RESERVATION = 300
POOLS = {
    "name": "e2e-reservation",
    "datastore": "6diskLUN",
    "root": {"reservation": 1000, "limit": "unlimited", "shares": 1000},
    "pools": [
        {"name": "reserved", "shares": "normal", "children": [{"vm": VM, "reservation": RESERVATION}]},
    ],
}


@pytest.fixture
def paused_lab() -> Iterator[LabProcess]:
    """The §6.3 scenario with simulated time stopped: three intervals (a minute) solved by hand."""
    with LabProcess.start(ROOT / "lab" / "scenarios" / "basil-6.3.yaml", speed=0) as lab:
        lab.step(3)
        yield lab


def lab_trace(lab: LabProcess, query: str) -> str:
    resp = requests.get(
        lab.instance.control_url + "trace?" + query,
        auth=(lab.user, lab.password),
        verify=lab.pem,
        timeout=60,
    )
    assert resp.status_code == 200, resp.text
    return resp.text


def test_a_lab_trace_uploaded_for_a_vm_suggests_what_basil_capacity_says(
    paused_lab: LabProcess, tmp_path: Path
) -> None:
    text = lab_trace(paused_lab, f"vm={VM}&unit=scsi0:1&intervals=3&format=spc&seed=11")
    path = tmp_path / "oltp-1.spc"
    path.write_text(text, encoding="utf-8")
    cli = json.loads(
        basil_cli(
            lab_env(paused_lab), "capacity", "--trace", str(path), "--fraction", "0.95", "--bound-ms", "10",
            "--json",
        )
    )  # fmt: skip
    (offline,) = cli["traces"]

    workdir = tmp_path / "serve"
    workdir.mkdir()
    serve = start_service(paused_lab, workdir)
    try:
        serve.post("/api/v1/pools", POOLS, expect=201)
        vm_id = serve.get(f"/api/v1/vms/{VM}")["id"]
        # Uploaded as an operator would from a shell: `basil capacity --vm`, the token in BASIL_TOKEN.
        env = {**lab_env(paused_lab), "BASIL_TOKEN": serve.token}
        upload = ["capacity", "--trace", str(path), "--fraction", "0.95", "--bound-ms", "10", "--vm", vm_id,
                  "--service", serve.base, "--ca-path", str(serve.cert)]  # fmt: skip
        uploaded = json.loads(basil_cli(env, *upload, "--json"))
        shown = serve.get(f"/api/v1/vms/{vm_id}/reservation")
        assert shown == uploaded
        text_answer = basil_cli(env, *upload)
        assert f"suggested SRP reservation {math.ceil(offline['capacity_iops'])} IOPS" in text_answer
        assert f"pool tree e2e-reservation, pool reserved reserves {RESERVATION} IOPS" in text_answer
        unknown = subprocess.run(
            [*BASIL, *upload[:-6], "--vm", "no-such-vm", *upload[-4:]],
            capture_output=True, text=True, env=env, timeout=300, check=False,
        )  # fmt: skip
        assert unknown.returncode == 2, unknown.stderr
        assert "no VM 'no-such-vm'" in unknown.stderr

        got = shown["suggestion"]
        assert got["capacity_iops"] == offline["capacity_iops"]
        assert got["capacity_full_iops"] == offline["capacity_full_iops"]
        assert got["curve"] == offline["curve"]
        assert got["trace"]["requests"] == offline["requests"]
        assert got["reservation_iops"] == math.ceil(offline["capacity_iops"])
        assert got["uploaded_by"] == "e2e-admin"

        srp = shown["srp"]
        assert (srp["pool_tree"], srp["pool"], srp["reservation"]) == (
            "e2e-reservation",
            "reserved",
            RESERVATION,
        )
        assert shown["meets_target"] is (offline["capacity_iops"] <= RESERVATION)
        audit = serve.get("/api/v1/audit")
        outcomes = [e["outcome"] for e in audit if e["action"] == "vm.trace.upload"]
        assert outcomes == ["failed", "ok", "ok"]  # newest first: the unknown VM, then the two uploads
    finally:
        serve.stop()
