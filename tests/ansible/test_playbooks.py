"""The collection's integration tests: its example playbooks against ``basil serve`` on the lab vCenter,
checked against the lab's ground truth (/lab/placement, /lab/truth), not against what Basil reports.

- pools as code: check mode saves nothing; the tree reaches the disks' IO settings in the lab; a second
  run changes nothing;
- nightly rebalance: check mode moves nothing; the run moves the disks where the plans said and the
  lab's device utilisation is more even afterwards; a second run changes nothing;
- placement before a new disk: Basil's choice is one of the pod's datastores;
- the collection's own target (tests/integration/targets/basil_modules) through ``ansible-test
  integration``: errors that name the field, check mode, idempotence, TLS verified by default.
"""

from __future__ import annotations

import json
import ssl
import statistics
import subprocess
import sys
from datetime import datetime, timedelta
from typing import Any

import pytest
import yaml

from tests.e2e.conftest import wait_for

from .conftest import BIN, AnsibleEnv

pytestmark = pytest.mark.lab

POD_DATASTORES = ("3diskLUN", "6diskLUN", "9diskLUN")
WINDOW = 15  # lab intervals (20 s of simulated time each) averaged for a ground-truth figure
REFRESH = {"basil_rebalance_refresh_jobs": ["collect", "model"], "basil_rebalance_poll_interval": 1}
ROUNDS = 6


def _lab_time(env: AnsibleEnv) -> datetime:
    status = env.lab.control("GET", "/lab/status")
    return datetime.fromisoformat(status["last_interval"].replace("Z", "+00:00"))


def _utilisation_imbalance(env: AnsibleEnv) -> float:
    """sigma/mu of the pod's datastores' true device utilisation over the last WINDOW intervals."""
    truth = env.lab.truth(WINDOW)
    used = [d["utilization"] for d in truth["datastores"] if d["name"] in POD_DATASTORES]
    assert len(used) == len(POD_DATASTORES), truth["datastores"]
    return statistics.pstdev(used) / statistics.fmean(used)


def _settled(env: AnsibleEnv) -> None:
    """Wait until a whole WINDOW of lab intervals lies after now."""
    start = _lab_time(env)
    wait_for(
        "a window of lab intervals",
        lambda: _lab_time(env) >= start + timedelta(seconds=20 * WINDOW),
        timeout_s=240,
        every_s=0.5,
    )


def test_modules_target_of_ansible_test_integration(ansible_env: AnsibleEnv) -> None:
    """The collection's own integration target (tests/integration/targets/basil_modules): errors that
    name the field, check mode, idempotence, TLS verified, through ``ansible-test integration``."""
    env = ansible_env
    collection = env.workdir / "collections" / "ansible_collections" / "basil" / "vsphere"
    config = {
        "basil_url": env.serve.base,
        "basil_token": env.serve.token,
        "basil_ca_path": str(env.serve.cert),
        "basil_system_ca_path": ssl.get_default_verify_paths().openssl_cafile,
    }
    (collection / "tests" / "integration" / "integration_config.yml").write_text(
        yaml.safe_dump(config), encoding="utf-8"
    )
    home = env.workdir / "ansible-test-home"
    home.mkdir(exist_ok=True)
    result = subprocess.run(
        [str(BIN / "ansible-test"), "integration", "basil_modules", "--local", "--python",
         f"{sys.version_info.major}.{sys.version_info.minor}", "--color", "no", "--allow-unsupported"],
        cwd=collection, env={**env.env, "HOME": str(home)}, capture_output=True, text=True, timeout=600,
        check=False,
    )  # fmt: skip
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert "failed=0" in output, output
    assert env.serve.get("/api/v1/pools") == []
    assert env.serve.get("/api/v1/schedules")["rebalance"]["changed"] is None


def test_pools_as_code_reach_the_disks_io_settings(ansible_env: AnsibleEnv) -> None:
    env = ansible_env
    before = env.disk_settings("oltp-1"), env.disk_settings("exchange-1")

    dry = env.playbook("pools_as_code", "--check", "--diff")
    assert dry.returncode == 0, dry.output
    assert dry.changed == 1, dry.output
    assert '"reservation": 400' in dry.output  # the diff shows the tree it would create
    assert env.serve.get("/api/v1/pools") == []
    assert (env.disk_settings("oltp-1"), env.disk_settings("exchange-1")) == before

    run = env.playbook("pools_as_code")
    assert run.returncode == 0, run.output
    assert run.changed == 1, run.output
    tree = env.serve.get("/api/v1/pools/lun6-pools")
    assert tree["version"] == 1

    def applied() -> Any:
        reserved, capped = env.disk_settings("oltp-1"), env.disk_settings("exchange-1")
        if reserved["reservation"] >= 400 and 0 < capped["limit"] <= 150:
            return reserved, capped
        return None

    reserved, capped = wait_for("the pool tree's settings on the lab's disks", applied, timeout_s=180)
    sioc = next(d for d in env.lab.control("GET", "/lab/placement")["datastores"] if d["name"] == "6diskLUN")
    assert sioc["sioc_enabled"]

    again = env.playbook("pools_as_code")
    assert again.returncode == 0, again.output
    assert again.changed == 0, again.output
    assert env.serve.get("/api/v1/pools/lun6-pools")["version"] == 1
    print(
        f"\npools as code: oltp-1 reservation {before[0]['reservation']} -> {reserved['reservation']} IOPS, "
        f"exchange-1 limit {before[1]['limit']} -> {capped['limit']} IOPS; second run changed=0"
    )
    # The nightly test that follows balances the pod without the tree's reservations in the way.
    gone = env.playbook(
        "pools_as_code", extra={"basil_pools": {"6diskLUN": {"name": "lun6-pools", "state": "absent"}}}
    )
    assert gone.returncode == 0, gone.output
    assert env.serve.get("/api/v1/pools") == []


def test_nightly_rebalance_moves_disks_where_the_plans_said(ansible_env: AnsibleEnv) -> None:
    env = ansible_env
    report_file = env.workdir / "nightly.json"
    placement_before = env.placement()
    truth_before = _utilisation_imbalance(env)

    dry = env.playbook("nightly_rebalance", "--check", "--diff",
                       extra={**REFRESH, "basil_rebalance_report_file": str(report_file)})  # fmt: skip
    assert dry.returncode == 0, dry.output
    assert env.serve.get("/api/v1/plans") == []
    assert env.placement() == placement_before
    [dry_report] = json.loads(report_file.read_text(encoding="utf-8"))
    assert dry_report["move_count"] == 0, json.dumps(dry_report)  # nothing applied ...
    # ... though the round had moves to apply
    assert dry_report["rounds"][0]["move_count"] > 0, json.dumps(dry_report)
    assert dry_report["rounds"][0]["gate_passed"] is True, json.dumps(dry_report)

    # Enough rounds for the two empty LUNs to fill (each receives one unit a round until it has a
    # device model, BASIL §6.3), so that the run ends on a round that found nothing more to do.
    run = env.playbook(
        "nightly_rebalance",
        extra={**REFRESH, "basil_rebalance_rounds": ROUNDS, "basil_rebalance_report_file": str(report_file)},
    )
    assert run.returncode == 0, run.output
    assert run.changed >= 1, run.output
    [report] = json.loads(report_file.read_text(encoding="utf-8"))
    assert report["applied"] is True, json.dumps(report)
    assert report["rounds"][-1]["applied"] is False, json.dumps(report)  # it ended balanced, not cut off
    moves = report["moves"]
    assert moves, report
    # A move runs, or the plan skips it when, checked against the live placement and imbalance as its
    # turn comes, it no longer helps (docs/api.md); the skipped disk stays where it was.
    assert all(m["state"] in ("succeeded", "skipped") for m in moves), json.dumps(report)
    assert any(m["state"] == "succeeded" for m in moves), json.dumps(report)
    assert len(moves) == report["move_count"] <= 8

    # The lab has each disk where its (last) move that ran said.
    where = env.placement()
    final: dict[tuple[str, str], str] = {}
    for m in moves:
        if m["state"] == "succeeded":
            vm_id, unit = m["disk"].split(":", 1)
            final[(vm_id, unit)] = m["to"].split(":")[-1]
    for disk, datastore in final.items():
        assert where[disk] == datastore, (disk, datastore, where[disk])
    moved = {d for d in where if where[d] != placement_before[d]}
    assert moved == {d for d, ds in final.items() if ds != placement_before[d]}

    _settled(env)
    truth_after = _utilisation_imbalance(env)
    plans = env.serve.get("/api/v1/plans")

    # Run again at once, on the models the first run ended with: nothing changes.
    again = env.playbook("nightly_rebalance", extra={"basil_rebalance_report_file": str(report_file)})
    assert again.returncode == 0, again.output
    assert again.changed == 0, (again.output, report_file.read_text(encoding="utf-8"))
    [second] = json.loads(report_file.read_text(encoding="utf-8"))
    assert second["applied"] is False
    assert env.placement() == where
    assert len(env.serve.get("/api/v1/plans")) == len(plans)

    print(
        f"\nnightly rebalance: {len(report['rounds'])} round(s), {len(moves)} move(s) "
        f"({report['total_gb']} GB) in plan(s) {report['plan_ids']}; Basil's imbalance "
        f"{float(report['imbalance_before']):.3f} -> {float(second['imbalance_before']):.3f} "
        f"(predicted {float(report['imbalance_predicted']):.3f}); lab device-utilisation imbalance "
        f"{truth_before:.3f} -> {truth_after:.3f}; second run changed=0 ({second['reason']})"
    )
    assert truth_after < truth_before
    assert float(second["imbalance_before"]) < float(report["imbalance_before"])


def test_placement_before_a_new_disk(ansible_env: AnsibleEnv) -> None:
    run = ansible_env.playbook(
        "placement_vmware_guest", extra={"basil_create_disk": False, "disk_size_gb": 20}
    )
    assert run.returncode == 0, run.output
    assert run.changed == 0, run.output
    choice = run.output.split("20 GB for oltp-3: ", 1)[1].split('"', 1)[0]
    assert choice in POD_DATASTORES, run.output
