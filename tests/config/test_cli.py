"""``basil config check|show|default``."""

from __future__ import annotations

from pathlib import Path

import yaml
from click.testing import CliRunner

from basil.cli import main


def test_check_reports_every_problem_and_exits_non_zero(tmp_path: Path) -> None:
    path = tmp_path / "basil.yaml"
    path.write_text(
        "srp: {gamma: 3}\nstore: {ulr: x}\nschedules: {rebalance: {cron: '0 2 * *'}}\n", encoding="utf-8"
    )
    done = CliRunner().invoke(main, ["config", "check", "--config", str(path)])
    assert done.exit_code == 1
    for words in ("3 problem(s)", "srp.gamma", "store.ulr", "did you mean 'url'", "schedules.rebalance.cron"):
        assert words in done.output


def test_check_names_a_candidate_order_the_balancer_does_not_have(tmp_path: Path) -> None:
    path = tmp_path / "basil.yaml"
    path.write_text(
        "vcenters: [{name: lab, server: 'localhost:8989', user: u, password_env: LAB_PW}]\n"
        "pods: [{name: p, vcenter: lab, tag: basil/p, balance: {candidate_order: load}}]\n",
        encoding="utf-8",
    )
    done = CliRunner().invoke(main, ["config", "check", "--config", str(path)], env={"LAB_PW": "pw"})
    assert done.exit_code == 1
    assert "pods[0].balance.candidate_order" in done.output
    assert "'load' is not a candidate order: use one of load_per_gb, least_disturbance" in done.output


def test_check_passes_and_runtime_secrets_are_checked(tmp_path: Path) -> None:
    path = tmp_path / "basil.yaml"
    path.write_text(
        "vcenters: [{name: lab, server: 'localhost:8989', user: u, password_env: LAB_PW}]\n"
        "pods: [{name: p, vcenter: lab, tag: basil/p}]\n",
        encoding="utf-8",
    )
    runner = CliRunner()
    missing = runner.invoke(main, ["config", "check", "--config", str(path)], env={"LAB_PW": ""})
    assert missing.exit_code == 1
    assert "LAB_PW is not set" in missing.output
    ok = runner.invoke(main, ["config", "check", "--config", str(path)], env={"LAB_PW": "pw"})
    assert ok.exit_code == 0, ok.output
    assert "1 vCenter(s), 1 pod(s)" in ok.output


def test_show_names_secrets_but_never_reads_them(tmp_path: Path) -> None:
    path = tmp_path / "basil.yaml"
    path.write_text("vcenters: [{name: lab, server: h, user: u, password_env: LAB_PW}]\n", encoding="utf-8")
    done = CliRunner().invoke(main, ["config", "show", "--config", str(path)], env={"LAB_PW": "hunter2"})
    assert done.exit_code == 0, done.output
    assert "hunter2" not in done.output
    shown = yaml.safe_load(done.output)
    assert shown["vcenters"][0]["password_env"] == "LAB_PW"
    assert shown["retention"]["raw"] == "2h"


def test_default_is_the_packaged_file() -> None:
    done = CliRunner().invoke(main, ["config", "default"])
    assert done.exit_code == 0
    assert yaml.safe_load(done.output)["store"]["url"] == "sqlite:///var/demo/basil.db"
