"""PUT /api/v1/vms/{id}/trace, GET /api/v1/vms/{id}/reservation, DELETE /api/v1/vms/{id}/trace: an
operator's trace planned once and kept as its answer, the suggested SRP reservation beside the VM's
pool settings, bad input naming the field with nothing kept, and both changes audited."""

from __future__ import annotations

import math
from typing import Any

import pytest
from openapi_schema_validator import OAS31Validator

from basil.core.shaping import CapacityParams, plan_capacity
from basil.core.trace import onoff_pareto_arrivals, read_trace

from .conftest import ApiEnv

POOL = {
    "name": "vmcap-pool",
    "datastore": "6diskLUN",
    "root": {"reservation": 900, "limit": "unlimited", "shares": 1000},
    "pools": [
        {"name": "oltp", "shares": "high", "children": [{"vm": "oltp-1", "reservation": 250, "limit": 2000}]},
    ],
}


def spc_text(requests: int, seed: int) -> str:
    arrivals = onoff_pareto_arrivals(requests, seed=seed, on_rate_iops=800)
    return "".join(f"0,{k},4096,{'RW'[k % 2]},{t:.6f}\n" for k, t in enumerate(arrivals.tolist()))


@pytest.fixture(scope="module")
def document(api_env: ApiEnv) -> dict[str, Any]:
    doc: dict[str, Any] = api_env.get("/api/v1/openapi.json", role=None).get_json()
    return doc


def conforms(document: dict[str, Any], path: str, method: str, body: Any) -> list[str]:
    answer = document["paths"][path][method]["responses"]["200"]["content"]["application/json"]["schema"]
    validator = OAS31Validator({**answer, "components": document["components"]})
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(body)]


def vm_id(api_env: ApiEnv, name: str) -> str:
    resp = api_env.get(f"/api/v1/vms/{name}")
    assert resp.status_code == 200, resp.get_data(as_text=True)
    ident: str = resp.get_json()["id"]
    return ident


def audit(api_env: ApiEnv, action: str) -> list[dict[str, Any]]:
    entries: list[dict[str, Any]] = api_env.get("/api/v1/audit", role="admin").get_json()
    return [e for e in entries if e["action"] == action]


def test_an_uploaded_trace_suggests_the_reservation_beside_the_pool(
    api_env: ApiEnv, document: dict[str, Any]
) -> None:
    created = api_env.post("/api/v1/pools", json=POOL)
    assert created.status_code == 201, created.get_data(as_text=True)
    ident = vm_id(api_env, "oltp-1")
    before = api_env.get(f"/api/v1/vms/{ident}/reservation", role="viewer")
    assert before.status_code == 200
    assert before.get_json()["suggestion"] is None
    assert before.get_json()["meets_target"] is None
    assert before.get_json()["srp"]["reservation"] == 250

    text = spc_text(4_000, seed=5)
    resp = api_env.put(f"/api/v1/vms/{ident}/trace", json={"trace": text, "fraction": 0.95, "bound_ms": 10})
    assert resp.status_code == 200, resp.get_data(as_text=True)
    body = resp.get_json()
    assert conforms(document, "/api/v1/vms/{id}/trace", "put", body) == []
    expected = plan_capacity(
        read_trace(text.splitlines()).arrivals, CapacityParams(fraction=0.95, bound_ms=10)
    )
    got = body["suggestion"]
    assert got["capacity_iops"] == pytest.approx(expected.capacity_iops, rel=1e-12)
    assert got["capacity_full_iops"] == pytest.approx(expected.capacity_full_iops, rel=1e-12)
    assert got["reservation_iops"] == math.ceil(expected.capacity_iops)
    assert [p["capacity_iops"] for p in got["curve"]] == pytest.approx(
        [p.capacity_iops for p in expected.curve]
    )
    assert got["trace"]["requests"] == 4_000
    assert got["trace"]["format"] == "spc"
    assert got["trace"]["read_fraction"] == pytest.approx(0.5)
    assert got["uploaded_by"] == "test-operator"
    assert got["fraction"] == 0.95
    assert got["bound_ms"] == 10

    srp = body["srp"]
    assert srp["pool_tree"] == "vmcap-pool"
    assert srp["pool"] == "oltp"
    assert (srp["reservation"], srp["limit"], srp["shares"]) == (250, 2000, 1000)
    assert [(x["leaf"], x["pool"], x["reservation"]) for x in srp["leaves"]] == [("oltp-1", "oltp", 250)]
    assert expected.capacity_iops > 250  # the bursts need more than the leaf's reservation
    assert body["meets_target"] is False

    shown = api_env.get(f"/api/v1/vms/{ident}/reservation", role="viewer")
    assert shown.status_code == 200
    assert conforms(document, "/api/v1/vms/{id}/reservation", "get", shown.get_json()) == []
    assert shown.get_json() == body
    (entry,) = audit(api_env, "vm.trace.upload")
    assert (entry["who"], entry["outcome"], entry["target"]) == ("test-operator", "ok", f"vm {ident}")

    # A reservation that covers the capacity meets the target.
    version = api_env.get("/api/v1/pools/vmcap-pool").get_json()["version"]
    enough = got["reservation_iops"]
    leaf = {"vm": "oltp-1", "reservation": enough, "limit": max(2000, enough)}
    doc = {**POOL, "version": version, "root": {**POOL["root"], "reservation": max(900, enough)},
           "pools": [{**POOL["pools"][0], "children": [leaf]}]}  # type: ignore[dict-item]  # fmt: skip
    replaced = api_env.put("/api/v1/pools/vmcap-pool", json=doc)
    assert replaced.status_code == 200, replaced.get_data(as_text=True)
    now = api_env.get(f"/api/v1/vms/{ident}/reservation").get_json()
    assert now["srp"]["reservation"] == enough
    assert now["meets_target"] is True

    # A second upload replaces the first (only the latest per VM is kept).
    again = api_env.put(
        f"/api/v1/vms/{ident}/trace",
        json={"trace": text, "fraction": 1, "bound_ms": 10, "format": "spc"},
    )
    assert again.status_code == 200
    assert again.get_json()["suggestion"]["capacity_iops"] == pytest.approx(expected.capacity_full_iops)

    gone = api_env.delete(f"/api/v1/vms/{ident}/trace")
    assert gone.status_code == 204
    assert api_env.get(f"/api/v1/vms/{ident}/reservation").get_json()["suggestion"] is None
    assert api_env.delete(f"/api/v1/vms/{ident}/trace").status_code == 404
    # Newest first: the second DELETE found nothing to forget.
    assert [e["outcome"] for e in audit(api_env, "vm.trace.delete")] == ["failed", "ok"]
    assert api_env.delete("/api/v1/pools/vmcap-pool").status_code == 204


@pytest.mark.parametrize(
    ("question", "field"),
    [
        pytest.param({"trace": "0.1\n", "fraction": 0, "bound_ms": 10}, "fraction", id="fraction-zero"),
        pytest.param(
            {"trace": "0.1\n", "fraction": 1.5, "bound_ms": 10}, "fraction", id="fraction-above-one"
        ),
        pytest.param({"trace": "0.1\n", "fraction": 0.9, "bound_ms": 0}, "bound_ms", id="bound-zero"),
        pytest.param({"trace": "0.1\n0.2\nlate\n", "fraction": 0.9, "bound_ms": 10}, "line 3", id="bad-line"),
        pytest.param({"trace": "# nothing\n", "fraction": 0.9, "bound_ms": 10}, "trace", id="empty"),
        pytest.param({"fraction": 0.9, "bound_ms": 10}, "trace", id="no-trace"),
    ],
)
def test_bad_input_names_the_field_and_keeps_the_answer(
    api_env: ApiEnv, question: dict[str, Any], field: str
) -> None:
    ident = vm_id(api_env, "exchange-1")
    kept = api_env.put(
        f"/api/v1/vms/{ident}/trace", json={"trace": spc_text(500, seed=2), "fraction": 0.9, "bound_ms": 20}
    )
    assert kept.status_code == 200
    resp = api_env.put(f"/api/v1/vms/{ident}/trace", json=question)
    assert resp.status_code == 400, resp.get_data(as_text=True)
    assert field in [p["field"] for p in resp.get_json()["problems"]]
    after = api_env.get(f"/api/v1/vms/{ident}/reservation").get_json()
    assert after["suggestion"] == kept.get_json()["suggestion"]


def test_unknown_vm_is_404_and_viewers_may_not_upload(api_env: ApiEnv) -> None:
    question = {"trace": "0.1\n0.2\n", "fraction": 0.9, "bound_ms": 10}
    assert api_env.put("/api/v1/vms/vm-999999/trace", json=question).status_code == 404
    assert api_env.get("/api/v1/vms/vm-999999/reservation").status_code == 404
    assert api_env.delete("/api/v1/vms/vm-999999/trace").status_code == 404
    ident = vm_id(api_env, "oltp-2")
    assert api_env.put(f"/api/v1/vms/{ident}/trace", role="viewer", json=question).status_code == 403
    assert api_env.put(f"/api/v1/vms/{ident}/trace", role=None, json=question).status_code == 401
    assert api_env.delete(f"/api/v1/vms/{ident}/trace", role="viewer").status_code == 403
    shown = api_env.get(f"/api/v1/vms/{ident}/reservation").get_json()
    assert shown["suggestion"] is None
    assert shown["srp"] is None  # no pool tree holds oltp-2 here


def test_a_trace_above_the_body_limit_is_413_and_nothing_is_kept(api_env: ApiEnv) -> None:
    ident = vm_id(api_env, "webserver-1")
    line = "0,123456789,4096,R,12345.678901\n"
    huge = {"trace": line * (5 * 1024 * 1024 // len(line)), "fraction": 0.9, "bound_ms": 10}
    resp = api_env.put(f"/api/v1/vms/{ident}/trace", json=huge)
    assert resp.status_code == 413, resp.get_data(as_text=True)
    assert api_env.get(f"/api/v1/vms/{ident}/reservation").get_json()["suggestion"] is None
