"""The OpenAPI document: a valid OpenAPI 3.1 document, covering exactly the app's routes, and the
answers of the running service conform to the schemas it publishes."""

from __future__ import annotations

import re
from typing import Any

import pytest
from openapi_schema_validator import OAS31Validator, oas31_format_checker
from openapi_spec_validator import OpenAPIV31SpecValidator

from basil.api.openapi import build_document
from basil.api.operations import OPERATIONS

from .conftest import ApiEnv
from .test_errors import POOL

_AUTOMATIC = {"HEAD", "OPTIONS"}


@pytest.fixture(scope="module")
def document(api_env: ApiEnv) -> dict[str, Any]:
    resp = api_env.get("/api/v1/openapi.json", role=None)
    assert resp.status_code == 200
    doc: dict[str, Any] = resp.get_json()
    return doc


def test_document_is_valid_openapi_31(document: dict[str, Any]) -> None:
    errors = [e.message for e in OpenAPIV31SpecValidator(document).iter_errors()]
    assert errors == []
    assert document["openapi"].startswith("3.1")


def test_every_route_is_documented_and_nothing_else(api_env: ApiEnv, document: dict[str, Any]) -> None:
    routed = {
        (method.lower(), re.sub(r"<(?:[a-z]+:)?(\w+)>", r"{\1}", rule.rule))
        for rule in api_env.app.url_map.iter_rules()
        for method in (rule.methods or set()) - _AUTOMATIC
    }
    documented = {(method, path) for path, item in document["paths"].items() for method in item}
    assert routed - documented == set(), "routes missing from the document"
    assert documented - routed == set(), "documented operations that are not routed"
    # Every operation declared in code is routed (a blueprint left unregistered would show here).
    assert {op.endpoint for op in OPERATIONS.values()} <= {
        r.endpoint for r in api_env.app.url_map.iter_rules()
    }


def test_an_undeclared_route_breaks_the_document(api_env: ApiEnv) -> None:
    from basil.api import create_app  # noqa: PLC0415

    app = create_app(api_env.service)
    app.add_url_rule("/api/v1/sneaky", "sneaky", lambda: "hi")
    with pytest.raises(LookupError, match="sneaky"):
        build_document(app)


def test_protected_operations_declare_security_and_their_errors(document: dict[str, Any]) -> None:
    public = set()
    for path, item in document["paths"].items():
        for method, op in item.items():
            if op["security"] == []:
                public.add((method, path))
                continue
            assert {"401", "403"} <= set(op["responses"]), (method, path)
            assert op["x-basil-role"] in ("viewer", "operator", "admin")
            if "requestBody" in op or any(p["in"] == "query" for p in op.get("parameters", [])):
                assert "400" in op["responses"], (method, path)
    assert {("get", "/api/v1/health"), ("get", "/api/v1/openapi.json")} <= public
    public_prefixes = ("/api/v1/health", "/api/v1/openapi.json", "/plugin", "/favicon.ico")
    assert all(path.startswith(public_prefixes) for _, path in public)


# POSTs that answer a question and change nothing: viewers may ask them.
READ_ONLY_POSTS = {
    "/api/v1/pools/validate",
    "/api/v1/whatif",
    "/api/v1/capacity",
    "/api/v1/datastores/{id}/whatif",
}


def test_writes_need_operator_or_admin(document: dict[str, Any]) -> None:
    for path, item in document["paths"].items():
        for method, op in item.items():
            if method in ("post", "put", "delete") and path not in READ_ONLY_POSTS:
                assert op["x-basil-role"] in ("operator", "admin"), (method, path)


def _validator(document: dict[str, Any], schema: dict[str, Any]) -> OAS31Validator:
    return OAS31Validator(
        {**schema, "components": document["components"]}, format_checker=oas31_format_checker
    )


def _answer_schema(document: dict[str, Any], method: str, path: str, status: int) -> dict[str, Any]:
    response = document["paths"][path][method]["responses"][str(status)]
    schema: dict[str, Any] = response["content"]["application/json"]["schema"]
    return schema


def test_answers_conform_to_the_published_schemas(api_env: ApiEnv, document: dict[str, Any]) -> None:
    """Every GET of a populated service (collected, modelled, recommended, a plan, a pool) validates."""
    recommendation = api_env.recommendation()
    assert recommendation["moves"]
    plan = api_env.post("/api/v1/plans", json={"recommendation_id": recommendation["id"]})
    assert plan.status_code == 201, plan.get_data(as_text=True)
    pool = api_env.post("/api/v1/pools", json={**POOL, "name": "schema-pool"})
    assert pool.status_code == 201, pool.get_data(as_text=True)
    move = recommendation["moves"][0]
    job_run = api_env.post("/api/v1/jobs/inventory/run", role="admin")
    assert job_run.status_code == 202, job_run.get_data(as_text=True)
    api_env.wait_for_run(job_run.headers["Location"])
    pod = api_env.get("/api/v1/pods/basil").get_json()
    datastore = pod["datastores"][0]["id"]
    checked = {
        "/api/v1/health": "/api/v1/health",
        "/api/v1/vcenters": "/api/v1/vcenters",
        "/api/v1/me": "/api/v1/me",
        "/api/v1/pods": "/api/v1/pods",
        "/api/v1/pods/basil": "/api/v1/pods/{pod}",
        "/api/v1/pods/basil/history?hours=2": "/api/v1/pods/{pod}/history",
        "/api/v1/datastores?sort=-latency_ms": "/api/v1/datastores",
        "/api/v1/vms?pod=basil&limit=3": "/api/v1/vms",
        "/api/v1/disks?sort=-iops&limit=5": "/api/v1/disks",
        f"/api/v1/datastores/{datastore}": "/api/v1/datastores/{id}",
        f"/api/v1/datastores/{datastore}/model/points": "/api/v1/datastores/{id}/model/points",
        f"/api/v1/datastores/{datastore}/load": "/api/v1/datastores/{id}/load",
        f"/api/v1/datastores/{datastore}/predictions": "/api/v1/datastores/{id}/predictions",
        f"/api/v1/vms/{move['vm_id']}": "/api/v1/vms/{id}",
        f"/api/v1/vms/{move['vm_id']}/reservation": "/api/v1/vms/{id}/reservation",
        f"/api/v1/disks/{move['disk']}/model": "/api/v1/disks/{id}/model",
        "/api/v1/pods/basil/recommendations": "/api/v1/pods/{pod}/recommendations",
        "/api/v1/pods/basil/predictions": "/api/v1/pods/{pod}/predictions",
        "/api/v1/pods/basil/slo/history?since=2000-01-01T00:00:00Z": "/api/v1/pods/{pod}/slo/history",
        "/api/v1/plans": "/api/v1/plans",
        f"/api/v1/plans/{plan.get_json()['id']}": "/api/v1/plans/{id}",
        "/api/v1/pools": "/api/v1/pools",
        "/api/v1/pools/schema-pool": "/api/v1/pools/{name}",
        "/api/v1/pools/schema-pool/entitlements": "/api/v1/pools/{name}/entitlements",
        "/api/v1/jobs": "/api/v1/jobs",
        "/api/v1/jobs/inventory/runs": "/api/v1/jobs/{id}/runs",
        job_run.headers["Location"]: "/api/v1/jobs/{id}/runs/{run}",
        "/api/v1/schedules": "/api/v1/schedules",
        "/api/v1/audit": "/api/v1/audit",
        "/api/v1/tokens": "/api/v1/tokens",
    }
    written = [
        ("post", "/api/v1/plans", 201, plan.get_json()),
        ("post", "/api/v1/pools", 201, pool.get_json()),
        (
            "post",
            "/api/v1/pods/{pod}/recommendations",
            201,
            api_env.post("/api/v1/pods/basil/recommendations").get_json(),
        ),
        ("post", "/api/v1/jobs/{id}/run", 202, job_run.get_json()),
        (
            "post",
            "/api/v1/plans/{id}/cancel",
            200,
            api_env.post(f"/api/v1/plans/{plan.get_json()['id']}/cancel").get_json(),
        ),
    ]
    bad_writes = [
        f"{method.upper()} {path}: {e.message}"
        for method, path, status, body in written
        for e in _validator(document, _answer_schema(document, method, path, status)).iter_errors(body)
    ]
    assert bad_writes == [], "\n".join(bad_writes)
    documented_gets = {p for p, item in document["paths"].items() if "get" in item}
    untested = (
        documented_gets - set(checked.values()) - {"/api/v1/openapi.json", "/api/v1/metrics", "/metrics"}
    )
    assert not {p for p in untested if p.startswith("/api/")}, "add the new GET routes to this test"
    failures: list[str] = []
    for url, path in checked.items():
        resp = api_env.get(url, role="admin")
        assert resp.status_code == 200, (url, resp.get_data(as_text=True))
        validator = _validator(document, _answer_schema(document, "get", path, 200))
        failures += [
            f"{url}: {'/'.join(map(str, e.absolute_path))}: {e.message}"
            for e in validator.iter_errors(resp.get_json())
        ]
    assert failures == [], "\n".join(failures)


def test_pool_nodes_are_described_with_tag_leaves(document: dict[str, Any]) -> None:
    node = _validator(document, {"$ref": "#/components/schemas/PoolNode"})
    good = [
        {"name": "gold", "shares": "high", "children": [{"vm": "db-1", "disk": "scsi0:1"}]},
        {"tag": "qos/gold", "reservation": 100, "limit": "unlimited"},
        {"vm": "db-1", "shares": 500},
    ]
    bad = [
        {"tag": "qos/gold", "vm": "db-1"},  # one kind of node at a time
        {"tag": "gold"},  # category/name
        {"tag": "qos/gold", "disk": "scsi0:1"},  # a tag stands for whole VMs
        {"name": "p", "children": [{"tag": "qos/gold", "shares": "lots"}]},
    ]
    assert [list(node.iter_errors(n)) for n in good] == [[], [], []]
    assert all(list(node.iter_errors(n)) for n in bad)
    body = document["paths"]["/api/v1/pools"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    assert body == {"$ref": "#/components/schemas/PoolDocument"}
    pools = document["components"]["schemas"]["PoolDocument"]["properties"]["pools"]
    assert pools["items"] == {"$ref": "#/components/schemas/PoolNode"}


def test_error_bodies_conform(api_env: ApiEnv, document: dict[str, Any]) -> None:
    validator = _validator(document, {"$ref": "#/components/schemas/Error"})
    for resp in (
        api_env.get("/api/v1/pods", role=None),
        api_env.get("/api/v1/pods/nope"),
        api_env.post("/api/v1/plans", json={"x": 1}),
    ):
        assert list(validator.iter_errors(resp.get_json())) == []
