"""Fixtures of the collection's integration tests: the lab vCenter and ``basil serve`` started the way
the service's end-to-end tests start them (tests/e2e), and the collection staged where
``ansible-playbook`` finds it, with the service's address, token and certificate in the environment."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import ServeProcess, start_service
from tests.vcenter.labproc import ROOT, LabProcess

from .run_ansible_test import stage

BIN = Path(sys.executable).parent
RECAP = re.compile(r"^localhost\s*:\s*ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)", re.M)


@dataclass
class PlaybookRun:
    returncode: int
    output: str

    @property
    def changed(self) -> int:
        found = RECAP.search(self.output)
        assert found is not None, self.output
        return int(found.group(2))

    @property
    def failed(self) -> int:
        found = RECAP.search(self.output)
        assert found is not None, self.output
        return int(found.group(4))


@dataclass
class AnsibleEnv:
    lab: LabProcess
    serve: ServeProcess
    env: dict[str, str]
    workdir: Path

    def playbook(self, name: str, *args: str, extra: dict[str, Any] | None = None) -> PlaybookRun:
        """``ansible-playbook basil.vsphere.NAME ARGS`` with *extra* as ``-e`` JSON."""
        cmd = [str(BIN / "ansible-playbook"), f"basil.vsphere.{name}", *args]
        if extra:
            import json  # noqa: PLC0415

            cmd += ["-e", json.dumps(extra)]
        result = subprocess.run(
            cmd, env=self.env, cwd=self.workdir, capture_output=True, text=True, timeout=900, check=False
        )
        return PlaybookRun(result.returncode, result.stdout + result.stderr)

    def placement(self) -> dict[tuple[str, str], str]:
        """Where the lab has every disk: (VM moid, unit) -> datastore moid."""
        doc = self.lab.control("GET", "/lab/placement")
        return {(vm["moid"], d["unit"]): d["datastore_moid"] for vm in doc["vms"] for d in vm["disks"]}

    def disk_settings(self, vm: str, unit: str = "scsi0:1") -> dict[str, Any]:
        doc = self.lab.control("GET", "/lab/placement")
        found: dict[str, Any] = next(
            d for v in doc["vms"] if v["name"] == vm for d in v["disks"] if d["unit"] == unit
        )
        return found


@pytest.fixture(scope="module")
def ansible_env() -> Iterator[AnsibleEnv]:
    """The BASIL §6.3 lab, ``basil serve`` on it whose collection and modelling run when the playbooks
    ask (basil_job), and the collection staged in a temporary ``ansible_collections`` tree."""
    with (
        LabProcess.start(ROOT / "lab" / "scenarios" / "basil-6.3.yaml", speed=60) as lab,
        tempfile.TemporaryDirectory(prefix="basil-ansible-") as tmp,
    ):
        workdir = Path(tmp)
        serve = start_service(
            lab, workdir,
            # The playbooks run collect and model when they need fresh models (basil_rebalance_refresh_jobs);
            # an hourly model job keeps a scheduled refit from landing between two playbook runs.
            schedules={"recommend_s": 3600, "srp_s": 5, "model_s": 3600},
        )  # fmt: skip
        try:
            stage(workdir / "collections")
            env = {k: v for k, v in os.environ.items() if not k.startswith(("BASIL_", "ANSIBLE_"))}
            env.update(
                BASIL_URL=serve.base,
                BASIL_TOKEN=serve.token,
                BASIL_CA_PATH=str(serve.cert),
                ANSIBLE_COLLECTIONS_PATH=str(workdir / "collections"),
                ANSIBLE_LOCALHOST_WARNING="false",
                ANSIBLE_INVENTORY_UNPARSED_WARNING="false",
                ANSIBLE_NOCOLOR="1",
                ANSIBLE_LOCAL_TEMP=str(workdir / "ansible-tmp"),
                ANSIBLE_HOME=str(workdir / "ansible-home"),
                PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
            )
            yield AnsibleEnv(lab, serve, env, workdir)
        finally:
            assert serve.stop() == 0, serve.log()
