"""POST /api/v1/whatif and /api/v1/capacity: viewers' questions, answered per the published schema,
bad input naming the field, and nothing stored."""

from __future__ import annotations

from typing import Any

import pytest
from openapi_schema_validator import OAS31Validator

from basil.core.consolidation import whatif_from_mapping
from basil.core.shaping import required_count, rtt_admitted
from basil.core.trace import onoff_pareto_arrivals

from .conftest import ApiEnv

WHATIF = {
    "datastore": {"name": "ds1", "queue_depth": 32},
    "disks": [
        {"name": "file", "read_iops": 150, "write_iops": 170, "read_latency_ms": 30, "write_latency_ms": 6,
         "read_oio": 4, "write_oio": 8},
        {"name": "mail", "read_iops": 140, "write_iops": 160, "read_latency_ms": 35, "write_latency_ms": 7,
         "group": "ds2", "alone": False},
    ],
}  # fmt: skip


@pytest.fixture(scope="module")
def document(api_env: ApiEnv) -> dict[str, Any]:
    doc: dict[str, Any] = api_env.get("/api/v1/openapi.json", role=None).get_json()
    return doc


def conforms(document: dict[str, Any], path: str, body: Any) -> list[str]:
    schema = document["paths"][path]["post"]["responses"]["200"]["content"]["application/json"]["schema"]
    validator = OAS31Validator({**schema, "components": document["components"]})
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(body)]


def audit_count(api_env: ApiEnv) -> int:
    return len(api_env.get("/api/v1/audit", role="admin").get_json())


def test_whatif_answers_a_viewer_and_changes_nothing(api_env: ApiEnv, document: dict[str, Any]) -> None:
    before = audit_count(api_env)
    resp = api_env.post("/api/v1/whatif", role="viewer", json=WHATIF)
    assert resp.status_code == 200, resp.get_data(as_text=True)
    body = resp.get_json()
    assert conforms(document, "/api/v1/whatif", body) == []
    expected = whatif_from_mapping(WHATIF).to_dict()
    assert body["workloads"] == expected["workloads"]
    assert body["read_mix"] == pytest.approx(expected["read_mix"])
    assert body["workloads"][1]["confidence"].startswith("never measured alone")
    assert audit_count(api_env) == before


def test_whatif_interleaves_a_sequential_stream(api_env: ApiEnv, document: dict[str, Any]) -> None:
    stream = {
        "name": "backup",
        "read_iops": 3000,
        "write_iops": 0,
        "read_latency_ms": 1.2,
        "write_latency_ms": 0,
        "random_pct": 0,
    }
    question = {"datastore": {"parallelism": 4, "positioning_ms": 6}, "disks": [stream, WHATIF["disks"][0]]}  # type: ignore[index]
    resp = api_env.post("/api/v1/whatif", role="viewer", json=question)
    assert resp.status_code == 200, resp.get_data(as_text=True)
    body = resp.get_json()
    assert conforms(document, "/api/v1/whatif", body) == []
    backup = body["workloads"][0]
    assert backup["sequential"] is True
    assert backup["positioning_added_ms"] > 0
    assert body["positioning_source"] == "given"
    assert body["inputs"][0]["random_pct"] == 0
    bad = {**question, "disks": [{**stream, "random_pct": 101}]}
    resp = api_env.post("/api/v1/whatif", role="viewer", json=bad)
    assert resp.status_code == 400
    assert "disks[0].random_pct" in resp.get_data(as_text=True)


def test_whatif_splits_a_large_io_over_stripe_units(api_env: ApiEnv, document: dict[str, Any]) -> None:
    dss = {"name": "dss", "read_iops": 400, "write_iops": 0, "read_latency_ms": 20, "write_latency_ms": 0,
           "read_oio": 8, "random_pct": 100, "read_io_kb": 256}  # fmt: skip
    question = {"datastore": {"parallelism": 8, "stripe_kb": 64}, "disks": [dss, WHATIF["disks"][0]]}  # type: ignore[index]
    resp = api_env.post("/api/v1/whatif", role="viewer", json=question)
    assert resp.status_code == 200, resp.get_data(as_text=True)
    body = resp.get_json()
    assert conforms(document, "/api/v1/whatif", body) == []
    assert body["workloads"][0]["fork_join"] == pytest.approx(25 / 12)  # H(4): four 64 KB units
    assert body["workloads"][1]["fork_join"] == 1.0
    assert (body["stripe_kb"], body["stripe_source"]) == (64, "given")
    assert body["inputs"][0]["read_io_kb"] == 256
    for bad, field in (({**dss, "read_io_kb": 0}, "disks[0].read_io_kb"), (dss, "datastore.stripe_kb")):
        doc = {"datastore": {"stripe_kb": 0 if bad is dss else 64}, "disks": [bad]}
        resp = api_env.post("/api/v1/whatif", role="viewer", json=doc)
        assert resp.status_code == 400, field
        assert field in resp.get_data(as_text=True)


def test_whatif_destages_a_cached_sequential_writer(api_env: ApiEnv, document: dict[str, Any]) -> None:
    log = {
        "name": "log",
        "read_iops": 150,
        "write_iops": 3000,
        "read_latency_ms": 2,
        "write_latency_ms": 0.37,
        "random_pct": 10,
    }
    dss = {
        "name": "dss",
        "read_iops": 600,
        "write_iops": 0,
        "read_latency_ms": 15,
        "write_latency_ms": 0,
        "random_pct": 100,
    }
    question = {"datastore": {"parallelism": 4, "positioning_ms": 5, "write_cost": 2}, "disks": [log, dss]}
    resp = api_env.post("/api/v1/whatif", role="viewer", json=question)
    assert resp.status_code == 200, resp.get_data(as_text=True)
    body = resp.get_json()
    assert conforms(document, "/api/v1/whatif", body) == []
    assert (body["write_cost"], body["write_cost_source"]) == (2, "given")
    assert body["destage_util"] > 0
    assert body["workloads"][1]["destage_added_ms"] > 0
    assert body["workloads"] == whatif_from_mapping(question).to_dict()["workloads"]
    resp = api_env.post("/api/v1/whatif", role="viewer", json={**question, "datastore": {"write_cost": 0.5}})
    assert resp.status_code == 400
    assert "datastore.write_cost" in resp.get_data(as_text=True)


def test_whatif_carries_a_cache_full_where_measured(api_env: ApiEnv, document: dict[str, Any]) -> None:
    audit = {
        "name": "audit",
        "read_iops": 15,
        "write_iops": 370,
        "read_latency_ms": 3.5,
        "write_latency_ms": 5,  # slower than a cache hit alone: the cache was full where it ran
        "random_pct": 10,
    }
    catalog = {
        "name": "catalog",
        "read_iops": 250,
        "write_iops": 28,
        "read_latency_ms": 31,
        "write_latency_ms": 0.37,
        "random_pct": 100,
    }
    question = {
        "datastore": {"parallelism": 5.5, "positioning_ms": 11.6, "write_cost": 6},
        "disks": [audit, catalog],
    }
    resp = api_env.post("/api/v1/whatif", role="viewer", json=question)
    assert resp.status_code == 200, resp.get_data(as_text=True)
    body = resp.get_json()
    assert conforms(document, "/api/v1/whatif", body) == []
    assert body["full_where_measured"] == ["audit"]
    assert body["cache_full"] is True
    assert [w["write_through"] for w in body["workloads"]] == [False, True]
    assert body["workloads"][1]["write_latency_ms"] > 2 * 11.6  # two rounds of a positioning on RAID 6


def test_whatif_bad_input_names_the_field(api_env: ApiEnv) -> None:
    bad = {"disks": [{**WHATIF["disks"][0], "read_iops": -3}]}  # type: ignore[index, dict-item]
    resp = api_env.post("/api/v1/whatif", role="viewer", json=bad)
    assert resp.status_code == 400
    assert [p["field"] for p in resp.get_json()["problems"]] == ["disks[0].read_iops"]


def test_capacity_answers_from_a_trace(api_env: ApiEnv, document: dict[str, Any]) -> None:
    arrivals = onoff_pareto_arrivals(3_000, seed=12)
    text = "".join(f"0,{k},4096,R,{t:.6f}\n" for k, t in enumerate(arrivals.tolist()))
    before = audit_count(api_env)
    resp = api_env.post(
        "/api/v1/capacity", role="viewer", json={"trace": text, "fraction": 0.95, "bound_ms": 10}
    )
    assert resp.status_code == 200, resp.get_data(as_text=True)
    body = resp.get_json()
    assert conforms(document, "/api/v1/capacity", body) == []
    parsed = onoff_pareto_arrivals(3_000, seed=12).round(6)
    need = required_count(0.95, 3_000)
    assert rtt_admitted(parsed, body["capacity_iops"], 0.01) >= need
    assert rtt_admitted(parsed, body["capacity_iops"] * (1 - 1e-3), 0.01) < need
    assert body["trace"]["requests"] == 3_000
    assert audit_count(api_env) == before


@pytest.mark.parametrize(
    ("question", "field"),
    [
        pytest.param({"trace": "0.1\n", "fraction": 0, "bound_ms": 10}, "fraction", id="fraction-zero"),
        pytest.param({"trace": "0.1\n", "fraction": 0.9, "bound_ms": -1}, "bound_ms", id="bound-negative"),
        pytest.param({"trace": "0.1\n0.2\nlate\n", "fraction": 0.9, "bound_ms": 10}, "line 3", id="bad-line"),
        pytest.param({"trace": "# nothing\n", "fraction": 0.9, "bound_ms": 10}, "trace", id="empty"),
    ],
)
def test_capacity_bad_input_names_the_field(api_env: ApiEnv, question: dict[str, Any], field: str) -> None:
    resp = api_env.post("/api/v1/capacity", role="viewer", json=question)
    assert resp.status_code == 400, resp.get_data(as_text=True)
    assert field in [p["field"] for p in resp.get_json()["problems"]]


def test_questions_need_authentication(api_env: ApiEnv) -> None:
    assert api_env.post("/api/v1/whatif", role=None, json=WHATIF).status_code == 401


def a_disk_and_another_datastore(api_env: ApiEnv) -> tuple[str, str, str]:
    """(disk id, its datastore's id, another datastore's id) among the lab's collected disks."""
    svc = api_env.service
    inv = svc.inventory("lab", refresh=False)
    sampled = svc.newest_disk_samples("lab")
    for vm in inv.vms.values():
        for disk in vm.disks:
            if (vm.moid, disk.instance) in sampled:
                other = next(ds for ds in inv.datastores if ds != disk.datastore)
                return (
                    svc.ids.disk_id("lab", vm.moid, disk.instance),
                    svc.ids.object_id("lab", disk.datastore),
                    svc.ids.object_id("lab", other),
                )
    raise AssertionError("no disk with a sample after collection")


def test_datastore_whatif_reads_the_newest_samples(api_env: ApiEnv, document: dict[str, Any]) -> None:
    api_env.run_jobs("collect")
    disk, source, target = a_disk_and_another_datastore(api_env)
    before = audit_count(api_env)
    resp = api_env.post(f"/api/v1/datastores/{target}/whatif", role="viewer", json={"disks": [disk]})
    assert resp.status_code == 200, resp.get_data(as_text=True)
    body = resp.get_json()
    schema = document["paths"]["/api/v1/datastores/{id}/whatif"]["post"]["responses"]["200"]
    validator = OAS31Validator(
        {**schema["content"]["application/json"]["schema"], "components": document["components"]}
    )
    assert [e.message for e in validator.iter_errors(body)] == []
    assert body["moved"] == [disk]
    assert body["parallelism"] >= 1  # from the target's device model, a stand-in, or the paper's 1
    assert body["parallelism_source"]
    assert body["positioning_source"]  # the same device model's intercept, or none
    # c: the device model's separated destaging, a stand-in, or t_pos / m; none without t_pos.
    assert body["destage_source"]
    assert (body["destage_ms"] is None) == (body["positioning_ms"] is None)
    separated = "destaging separated" in body["destage_source"]
    assert separated == ("destaging separated" in body["parallelism_source"])
    moved = next(w for w in body["workloads"] if w["name"] == disk)
    inputs = next(i for i in body["inputs"] if i["name"] == disk)
    assert "random_pct" in inputs  # the newest sample's seek histogram
    assert moved["group"].startswith("from ")
    assert moved["read_latency_ms"] >= inputs["read_latency_ms"]
    others = [w for w in body["workloads"] if w["name"] != disk]
    assert all(w["group"].startswith("on ") for w in others)
    assert audit_count(api_env) == before
    # The disk's own datastore is no place to move it to; an unknown datastore is a 404.
    resp = api_env.post(f"/api/v1/datastores/{source}/whatif", role="viewer", json={"disks": [disk]})
    assert resp.status_code == 400
    assert [p["field"] for p in resp.get_json()["problems"]] == ["disks[0]"]
    assert (
        api_env.post("/api/v1/datastores/lab:datastore-0/whatif", json={"disks": [disk]}).status_code == 404
    )
