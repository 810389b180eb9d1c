"""Loading basil.yaml: every problem at once, unknown keys refused, environment overrides, secrets."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
import yaml

from basil.config import (
    BasilConfig,
    DeviceConfig,
    StoreConfig,
    load_config,
    read_secret,
    runtime_problems,
    store_url,
    to_document,
    vcenter_password,
)
from basil.errors import ValidationError

FULL = """
vcenters:
  - name: vc-east
    server: vcenter.example.com:443
    user: basil@vsphere.local
    password_env: VC_EAST_PASSWORD
    tls: {verify: true, thumbprint: "AB:CD:EF:01:23:45:67:89:AB:CD:EF:01:23:45:67:89:AB:CD:EF:01"}
  - name: vc-west
    server: "[2001:db8::1]:8443"
    user: admin
    password_file: /etc/basil/west.pw
pods:
  - name: gold
    vcenter: vc-east
    datastore_cluster: GoldCluster
    mode: automatic
    balance:
      {imbalance_threshold: 0.2, max_moves: 4, candidate_order: least_disturbance, on_move_failure: stop}
  - name: silver
    vcenter: vc-west
    datastores: [ds1, ds2, ds3]
  - name: tagged
    vcenter: vc-west
    tag: basil/balanced
srp:
  latency_threshold_ms: 25
  gamma: 0.5
  reservable_iops: {ds1: 4000}
schedules:
  collect_s: 20
  rebalance: {cron: "0 1 * * sun", timezone: Europe/Paris, duration: 2h30m, max_moves: 5, max_gb: 300}
store:
  url: postgresql+psycopg://basil@db.example.com/basil
  password_env: BASIL_DB_PASSWORD
server:
  listen: "0.0.0.0:9443"
  public_url: https://basil.example.com:9443
  tls: {self_signed: false, cert: /etc/basil/cert.pem, key: /etc/basil/key.pem}
auth: {anonymous_read: true, vcenter_session_role: viewer}
retention: {raw: 3h, five_min: 5d, hourly: 1w2d, hourly_sketches: 3d}
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "basil.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def problems_of(path: Path, env: dict[str, str] | None = None) -> dict[str, str]:
    with pytest.raises(ValidationError) as caught:
        load_config(path, env=env or {})
    return {p.field: p.message for p in caught.value.problems}


def test_packaged_default_is_valid() -> None:
    config = load_config(None, env={})
    assert config.vcenters[0].name == "lab"
    assert config.store.url.startswith("sqlite:///var/")
    assert config.schedules.rebalance.cron == "0 2 * * sat"


def test_basil_config_variable_names_the_file(tmp_path: Path) -> None:
    path = write(tmp_path, "store: {url: 'sqlite:///elsewhere.db'}\n")
    assert load_config(None, env={"BASIL_CONFIG": str(path)}).store.url == "sqlite:///elsewhere.db"


def test_full_file(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, FULL), env={})
    assert [vc.name for vc in config.vcenters] == ["vc-east", "vc-west"]
    assert config.pods[0].balance.candidate_order == "least_disturbance"
    assert config.pods[0].balance.on_move_failure == "stop"
    assert config.pods[1].datastores == ("ds1", "ds2", "ds3")
    assert config.pods[2].tag == "basil/balanced"
    assert config.srp.reservable_iops == {"ds1": 4000.0}
    assert config.schedules.rebalance.duration == timedelta(hours=2, minutes=30)
    assert config.retention.hourly == timedelta(days=9)
    assert config.auth.vcenter_session_role == "viewer"
    assert config.pods_of("vc-west") == config.pods[1:]


def test_every_problem_at_once(tmp_path: Path) -> None:
    found = problems_of(
        write(
            tmp_path,
            """
vcenters:
  - {name: a, server: "https://vc/sdk", user: u, password_env: P, password_file: /f}
  - {name: a, server: vc2, user: "", password_env: "1BAD"}
pods:
  - {name: p, vcenter: nowhere, datastores: [x, x], tag: "notag"}
  - {name: p, vcenter: a, datastore_cluster: c, mode: sometimes}
srp: {gamma: 1.5, queue_depth_min: 10, queue_depth_max: 5}
schedules: {collect_s: 2, rebalance: {cron: "0 2 * *", timezone: Mars/Olympus, duration: 0}}
store: {url: "postgresql://u:secret@db/basil"}
server: {listen: "localhost", tls: {self_signed: false}}
retention: {raw: 1d, five_min: 2h, hourly_sketches: 1h}
""",
        )
    )
    expected = {
        "vcenters[0].server": "not host or host:port",
        "vcenters[0]": "not both",
        "vcenters[1].name": "also vcenters[0]",
        "vcenters[1].user": "must be set",
        "vcenters[1].password_env": "not an environment variable name",
        "pods[0]": "exactly one of",
        "pods[0].tag": "category/name",
        "pods[0].datastores[1]": "listed twice",
        "pods[0].vcenter": "not one of vcenters",
        "pods[1].mode": "one of 'manual', 'automatic'",
        "pods[1].name": "also pods[0]",
        "srp.gamma": "at most 1",
        "srp.queue_depth_max": "not be below",
        "schedules.collect_s": "at least 5",
        "schedules.rebalance.cron": "5 fields",
        "schedules.rebalance.timezone": "IANA",
        "schedules.rebalance.duration": "longer than 0",
        "store.url": "password",
        "server.listen": "port",
        "server.tls": "cert and key",
        "retention.five_min": "at least as long as raw",
        "retention.hourly_sketches": "between 1d",
    }
    for field, words in expected.items():
        assert field in found, f"{field} not reported; got {sorted(found)}"
        assert words in found[field], f"{field}: {found[field]!r} lacks {words!r}"
    assert "secret" not in " ".join(found.values())


@pytest.mark.parametrize(
    ("text", "field", "words"),
    [
        ("store: {ur1: x}\n", "store.ur1", "did you mean 'url'"),
        ("shedules: {}\n", "shedules", "did you mean 'schedules'"),
        (
            "pods: [{name: p, vcenter: v, tag: a/b, balance: {max_move: 3}}]\n",
            "pods[0].balance.max_move",
            "max_moves",
        ),
        ("srp: {gamma: high}\n", "srp.gamma", "must be a number"),
        ("schedules: {collect_s: 2.5}\n", "schedules.collect_s", "whole number"),
        ("auth: {anonymous_read: maybe}\n", "auth.anonymous_read", "true or false"),
        ("retention: {raw: 2hours}\n", "retention.raw", "duration"),
        ("vcenters: {name: x}\n", "vcenters", "must be a list"),
        ("server: {listen: }\n", "server.listen", "is empty"),
    ],
)
def test_typos_and_types_are_errors(tmp_path: Path, text: str, field: str, words: str) -> None:
    found = problems_of(write(tmp_path, text))
    assert field in found
    assert words in found[field]


def test_a_bad_field_is_not_reported_twice(tmp_path: Path) -> None:
    found = problems_of(
        write(tmp_path, "vcenters: [{name: v, server: s, user: u, password_env: P, tls: 3}]\n")
    )
    assert list(found) == ["vcenters[0].tls"]


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("store: {url: a}\nstore: {url: b}\n", "found the key 'store' twice"),
        ("store: [\n", "not valid YAML at line"),
        ("- a\n- b\n", "top level must be a mapping"),
    ],
)
def test_malformed_files(tmp_path: Path, text: str, words: str) -> None:
    found = problems_of(write(tmp_path, text))
    assert words in found["config"]


def test_missing_file_is_reported(tmp_path: Path) -> None:
    found = problems_of(tmp_path / "absent.yaml")
    assert "cannot read" in found["config"]


def test_empty_file_is_all_defaults(tmp_path: Path) -> None:
    assert load_config(write(tmp_path, ""), env={}) == BasilConfig()


def test_environment_overrides(tmp_path: Path) -> None:
    env = {
        "BASIL_STORE__URL": "sqlite:///from-env.db",
        "BASIL_SRP__GAMMA": "0.7",
        "BASIL_SCHEDULES__REBALANCE__DURATION": "90m",
        "BASIL_VCENTERS__VC_EAST__SERVER": "other.example.com",
        "BASIL_PODS__1__DATASTORES": "[a, b]",
        "BASIL_AUTH__ANONYMOUS_READ": "false",
        "BASIL_VCENTER_PASSWORD": "not an override: no double underscore",
        "BASIL_STORE__PASSWORD_ENV": "",
    }
    config = load_config(write(tmp_path, FULL), env=env)
    assert config.store.url == "sqlite:///from-env.db"
    assert config.srp.gamma == 0.7
    assert config.schedules.rebalance.duration == timedelta(minutes=90)
    assert config.vcenters[0].server == "other.example.com"
    assert config.pods[1].datastores == ("a", "b")
    assert config.auth.anonymous_read is False


def test_environment_problems_name_the_variable(tmp_path: Path) -> None:
    env = {"BASIL_STORE__URLL": "x", "BASIL_PODS__7__MODE": "manual", "BASIL_SRP__GAMMA": "2"}
    found = problems_of(write(tmp_path, FULL), env=env)
    assert "set by BASIL_STORE__URLL" in found["store.urll"]
    assert "has no item '7'" in found["env BASIL_PODS__7__MODE"]
    assert "set by BASIL_SRP__GAMMA" in found["srp.gamma"]


def test_secrets_from_env_and_file(tmp_path: Path) -> None:
    secret_file = tmp_path / "pw"
    secret_file.write_text("s3cret\n", encoding="utf-8")
    text = FULL.replace("/etc/basil/west.pw", str(secret_file))
    config = load_config(write(tmp_path, text), env={})
    assert vcenter_password(config.vcenters[0], {"VC_EAST_PASSWORD": "east"}) == "east"
    assert vcenter_password(config.vcenters[1], {}) == "s3cret"
    with pytest.raises(ValidationError, match="VC_EAST_PASSWORD is not set"):
        vcenter_password(config.vcenters[0], {})
    assert read_secret("", "") == ""


def test_runtime_problems_name_each_missing_secret_and_file(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, FULL), env={})
    found = {p.field: p.message for p in runtime_problems(config, env={})}
    assert "VC_EAST_PASSWORD is not set" in found["vcenters[0].password_env"]
    assert "cannot read /etc/basil/west.pw" in found["vcenters[1].password_file"]
    assert "BASIL_DB_PASSWORD is not set" in found["store.password_env"]
    assert "not a readable file" in found["server.tls.cert"]


def test_store_url_gets_its_password_from_the_environment() -> None:
    store = StoreConfig(url="postgresql+psycopg://basil@db:5432/basil", password_env="DBPW")
    assert store_url(store, {"DBPW": "p@ss/word"}) == "postgresql+psycopg://basil:p%40ss%2Fword@db:5432/basil"
    assert store_url(StoreConfig(), {}) == "sqlite:///var/basil.db"


def test_document_round_trips_and_holds_no_secret(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, FULL), env={})
    text = yaml.safe_dump(to_document(config))
    assert load_config(write(tmp_path, text), env={}) == config
    assert "VC_EAST_PASSWORD" in text  # the variable's name, never its value


@pytest.mark.parametrize(
    ("order", "hint"),
    [
        pytest.param("load", "", id="never-implemented"),
        pytest.param("iops_per_load", "now called 'least_disturbance'", id="renamed"),
    ],
)
def test_candidate_order_is_one_of_the_balancers(tmp_path: Path, order: str, hint: str) -> None:
    pods = f"pods: [{{name: p, vcenter: lab, tag: a/b, balance: {{candidate_order: {order}}}}}]\n"
    found = problems_of(write(tmp_path, pods))
    message = found["pods[0].balance.candidate_order"]
    assert f"'{order}' is not a candidate order" in message
    assert "load_per_gb, least_disturbance" in message
    assert hint in message


def test_a_vcenter_call_timeout_out_of_range_is_named(tmp_path: Path) -> None:
    text = "vcenters: [{name: vc, server: vc.example.com, user: u, password_env: P, call_timeout_s: 0}]\n"
    found = problems_of(write(tmp_path, text), env={"P": "x"})
    assert "1-3600" in found["vcenters[0].call_timeout_s"]


def test_tags_off_for_a_vcenter_refuses_what_needs_them(tmp_path: Path) -> None:
    text = """
vcenters:
  - {name: vc, server: vc.example.com, user: basil, password_env: PW, tags: false}
pods:
  - {name: gold, vcenter: vc, tag: tier/gold}
  - {name: list, vcenter: vc, datastores: [ds1], balance: {exclude_tag: keep/here}}
  - {name: fine, vcenter: vc, datastores: [ds2]}
"""
    found = problems_of(write(tmp_path, text))
    assert "needs tags, which are off for vCenter 'vc' (vcenters[0].tags)" in found["pods[0].tag"]
    assert "needs tags" in found["pods[1].balance.exclude_tag"]
    assert not any(key.startswith("pods[2]") for key in found)
    on = text.replace("tags: false", "tags: true")
    config = load_config(write(tmp_path, on), env={})
    assert config.vcenters[0].tags


def test_devices_give_the_device_model_its_priors(tmp_path: Path) -> None:
    text = (
        FULL
        + """
devices:
  ssd-gold-01: {kind: ssd, spindles: 4}
  legacy-01: {performance: 1.5, vcenter: vc-west}
"""
    )
    config = load_config(write(tmp_path, text), env={})
    assert config.device_of("vc-east", "ssd-gold-01") == DeviceConfig(kind="ssd", spindles=4)
    assert config.device_of("vc-west", "legacy-01") == DeviceConfig(performance=1.5, vcenter="vc-west")
    assert config.device_of("vc-east", "legacy-01") is None  # another vCenter's datastore of that name
    assert config.device_of("vc-east", "unknown") is None


def test_bad_devices_name_their_fields(tmp_path: Path) -> None:
    text = (
        FULL
        + """
devices:
  a: {kind: tape, spindles: 4}
  b: {spindles: 8}
  c: {kind: ssd, spindles: -1, performance: -2}
  d: {}
  e: {kind: ssd, vcenter: nowhere}
"""
    )
    found = problems_of(write(tmp_path, text))
    assert "'tape' is not one of" in found["devices.a.kind"]
    assert "must be set when spindles is" in found["devices.b.kind"]
    assert "0 (unknown) or more" in found["devices.c.spindles"]
    assert "at least 0" in found["devices.c.performance"]
    assert "give kind" in found["devices.d"]
    assert "not one of vcenters" in found["devices.e.vcenter"]


def test_balance_objective_is_read_and_checked(tmp_path: Path) -> None:
    text = FULL.replace("on_move_failure: stop}", "on_move_failure: stop, objective: throughput}")
    config = load_config(write(tmp_path, text), env={})
    assert config.pods[0].balance.objective == "throughput"
    assert config.pods[1].balance.objective == "auto"
    found = problems_of(
        write(tmp_path, "pods: [{name: p, vcenter: lab, tag: a/b, balance: {objective: iops}}]\n")
    )
    assert "'iops' is not an objective" in found["pods[0].balance.objective"]
    assert "normalized_load, throughput" in found["pods[0].balance.objective"]
