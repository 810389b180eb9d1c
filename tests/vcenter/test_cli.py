"""``basil vcenter inventory|sample|thumbprint`` against the lab, and its refusal of bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from basil.cli import main
from tests.lab_vcenter import STOCK, LabFactory

from .labvc import LabVC

pytestmark = pytest.mark.lab


def env_for(lab_vc: LabVC) -> dict[str, str]:
    return {
        "BASIL_VCENTER_SERVER": lab_vc.server,
        "BASIL_VCENTER_USER": lab_vc.user,
        "BASIL_VCENTER_PASSWORD": lab_vc.password,
        "BASIL_VCENTER_CA_BUNDLE": lab_vc.pem,
    }


def test_inventory_json_from_environment(lab_vc: LabVC) -> None:
    result = CliRunner().invoke(main, ["vcenter", "inventory", "--json"], env=env_for(lab_vc))
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert sorted(v["name"] for v in doc["vms"]) == sorted(v["name"] for v in lab_vc.scenario["vms"])
    assert lab_vc.password not in result.output


def test_inventory_table_from_flags_and_config(lab_vc: LabVC, tmp_path: Path) -> None:
    cfg = tmp_path / "basil.yaml"
    cfg.write_text(
        "vcenters:\n"
        f"  - {{name: lab, server: '{lab_vc.server}', user: {lab_vc.user}, password_env: LAB_PW,"
        f" tls: {{ca_bundle: '{lab_vc.pem}'}}}}\n",
        encoding="utf-8",
    )
    result = CliRunner().invoke(
        main, ["vcenter", "inventory", "--config", str(cfg), "--no-tags"], env={"LAB_PW": lab_vc.password}
    )
    assert result.exit_code == 0, result.output
    assert "3 host(s)" in result.output
    assert "ds-maint" in result.output
    assert "(maintenance)" in result.output


def test_sample_once_json(lab_vc: LabVC) -> None:
    result = CliRunner().invoke(main, ["vcenter", "sample", "--once", "--json"], env=env_for(lab_vc))
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    running = [v for v in lab_vc.scenario["vms"] if v.get("powered_on", True)]
    assert len({(s["vm"], s["instance"]) for s in doc["disk_samples"]}) == sum(
        len(v["disks"]) for v in running
    )
    assert doc["host_datastore_samples"]
    assert doc["errors"] == []


def test_bad_flags_are_refused_naming_each_field(lab_vc: LabVC) -> None:
    result = CliRunner().invoke(
        main,
        ["vcenter", "inventory", "--server", "https://x/sdk", "--user", "u", "--thumbprint", "zz"],
        env={"BASIL_VCENTER_PASSWORD": "p"},
    )
    assert result.exit_code == 2
    assert "server: give a host name or host:port, not a URL" in result.output
    assert "tls.thumbprint: must be a SHA-1" in result.output


def test_untrusted_certificate_is_an_error_not_a_traceback(lab_vc: LabVC) -> None:
    env = env_for(lab_vc)
    del env["BASIL_VCENTER_CA_BUNDLE"]
    result = CliRunner().invoke(main, ["vcenter", "inventory"], env=env)
    assert result.exit_code == 2
    assert "is not trusted" in result.output


def test_thumbprint_command_prints_a_pinnable_value(lab_vc: LabVC, lab_thumbprint: str) -> None:
    result = CliRunner().invoke(main, ["vcenter", "thumbprint", lab_vc.server])
    assert result.exit_code == 0
    assert result.output.strip().replace(":", "").lower() == lab_thumbprint


def test_thumbprint_of_a_closed_port_is_an_error_not_a_traceback() -> None:
    from tests.ports import free_port  # noqa: PLC0415

    result = CliRunner().invoke(main, ["vcenter", "thumbprint", f"127.0.0.1:{free_port()}"])
    assert result.exit_code == 2, result.output
    assert "error: cannot reach 127.0.0.1:" in result.output
    assert "Traceback" not in result.output


def test_thumbprint_of_a_plain_http_port_says_it_is_not_tls(lab_factory: LabFactory) -> None:
    plain = lab_factory(STOCK, tls=False)
    result = CliRunner().invoke(main, ["vcenter", "thumbprint", f"{plain.host}:{plain.port}"])
    assert result.exit_code == 2, result.output
    assert f"does not speak TLS on port {plain.port} (plain HTTP?)" in result.output
    assert "Traceback" not in result.output
