"""Connection settings from arguments, BASIL_VCENTER_* variables and the config file's vcenters list."""

from __future__ import annotations

from pathlib import Path

import pytest

from basil.errors import ValidationError
from basil.vcenter.connection import ConnectionParams, TLSOptions
from basil.vcenter.settings import load_config_file, resolve_connection

SHA256 = "AB:" * 31 + "CD"


def write(tmp_path: Path, text: str) -> str:
    path = tmp_path / "basil.yaml"
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_config_entries_with_password_from_env_and_file(tmp_path: Path) -> None:
    secret = tmp_path / "pw"
    secret.write_text("s3cret-from-file\n", encoding="utf-8")
    cfg = write(
        tmp_path,
        f"""
vcenters:
  - name: prod
    server: vc1.example.com
    user: basil@vsphere.local
    password_env: VC1_PASSWORD
    tls: {{thumbprint: "{SHA256}"}}
  - name: lab
    server: 127.0.0.1:8989
    user: admin
    password_file: {secret}
    tls: {{verify: false}}
""",
    )
    entries = load_config_file(cfg, env={"VC1_PASSWORD": "from-env"})
    assert [e.name for e in entries] == ["prod", "lab"]
    assert entries[0].params.password == "from-env"
    assert entries[0].params.tls.pinned == SHA256.replace(":", "").lower()
    assert entries[1].params.password == "s3cret-from-file"
    assert entries[1].params.host_port() == ("127.0.0.1", 8989)
    assert entries[1].params.tls.verify is False


def test_bad_config_reports_every_problem_at_once(tmp_path: Path) -> None:
    cfg = write(
        tmp_path,
        """
vcenters:
  - name: a
    server: https://vc.example.com/sdk
    user: u
    password: plain-text-password
    colour: blue
    tls: {thumbprint: "zz", verify: maybe}
  - name: a
    server: vc2
    user: u
    password_env: NOT_SET_ANYWHERE
""",
    )
    with pytest.raises(ValidationError) as info:
        load_config_file(cfg, env={})
    fields = sorted(p.field for p in info.value.problems)
    assert fields == [
        "vcenters[0].colour",
        "vcenters[0].password",
        "vcenters[0].password_env",
        "vcenters[0].server",
        "vcenters[0].tls.thumbprint",
        "vcenters[0].tls.verify",
        "vcenters[1].name",
        "vcenters[1].password_env",
    ]
    # The clear-text password is refused, and never repeated back.
    assert "plain-text-password" not in info.value.message


def test_precedence_arguments_over_environment_over_file(tmp_path: Path) -> None:
    cfg = write(
        tmp_path,
        """
vcenters:
  - {name: one, server: vc1, user: fileuser, password_env: PW1}
  - {name: two, server: vc2, user: fileuser2, password_env: PW2}
""",
    )
    env = {"PW1": "p1", "PW2": "p2", "BASIL_VCENTER_USER": "envuser"}
    p = resolve_connection(config=cfg, env=env)
    assert (p.server, p.user, p.password) == ("vc1", "envuser", "p1")
    p = resolve_connection(config=cfg, vcenter="two", user="arguser", env=env)
    assert (p.server, p.user, p.password) == ("vc2", "arguser", "p2")
    with pytest.raises(ValidationError, match="no vCenter named 'three'"):
        resolve_connection(config=cfg, vcenter="three", env=env)


def test_environment_only() -> None:
    env = {
        "BASIL_VCENTER_SERVER": "vc.example.com:8443",
        "BASIL_VCENTER_USER": "u",
        "BASIL_VCENTER_PASSWORD": "p",
        "BASIL_VCENTER_INSECURE": "true",
    }
    p = resolve_connection(env=env)
    assert p.host_port() == ("vc.example.com", 8443)
    assert p.tls.verify is False


def test_missing_everything_names_each_field() -> None:
    with pytest.raises(ValidationError) as info:
        resolve_connection(env={"BASIL_VCENTER_INSECURE": "perhaps"})
    assert sorted(p.field for p in info.value.problems) == ["BASIL_VCENTER_INSECURE", "server"]
    with pytest.raises(ValidationError) as info:
        resolve_connection(server="vc", env={})
    assert sorted(p.field for p in info.value.problems) == ["password", "user"]


def test_tls_options_validation(tmp_path: Path) -> None:
    assert TLSOptions().validate() == []
    assert TLSOptions(thumbprint="a" * 40).validate() == []
    problems = TLSOptions(verify=False, ca_bundle=str(tmp_path / "none.pem"), thumbprint="a" * 40).validate()
    assert sorted(p.message for p in problems) == [
        "a CA bundle makes no sense with verify off",
        "give either ca_bundle or thumbprint, not both",
        f"no such file: {tmp_path / 'none.pem'}",
    ]


def test_secrets_are_not_in_repr() -> None:
    p = ConnectionParams("vc", user="u", password="hunter2", session_cookie="cookie-value")
    assert "hunter2" not in repr(p)
    assert "cookie-value" not in repr(p)
