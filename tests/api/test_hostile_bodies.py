"""Bodies built to break the service: numbers that overflow, nesting that recurses, bodies too large.
Each is a 400 naming the field (or a 413), never a 500, and changes nothing."""

from __future__ import annotations

from typing import Any

import pytest

from .conftest import ApiEnv
from .test_errors import POOL, fields


@pytest.mark.parametrize("expires_in", ["3000000d", "999999999999999999999w", "9" * 30 + "s"])
def test_token_expiry_too_far_is_a_400_naming_the_field(api_env: ApiEnv, expires_in: str) -> None:
    resp = api_env.post("/api/v1/tokens", role="admin", json={"name": "far", "role": "viewer",
                                                               "expires_in": expires_in})  # fmt: skip
    assert resp.status_code == 400, resp.get_data(as_text=True)
    assert "expires_in" in fields(resp)
    assert all(t["name"] != "far" for t in api_env.get("/api/v1/tokens", role="admin").get_json())


@pytest.mark.parametrize("path", ["/api/v1/pools/validate", "/api/v1/pools"])
def test_huge_reservations_are_a_400_naming_the_field(api_env: ApiEnv, path: str) -> None:
    doc = {**POOL, "name": "huge-pool", "root": {"reservation": 1e308}}
    doc["pools"] = [{**POOL["pools"][0], "reservation": 1e308}, {**POOL["pools"][1], "reservation": 1e308}]
    resp = api_env.post(path, role="viewer" if path.endswith("validate") else "operator", json=doc)
    if path.endswith("validate"):
        assert resp.status_code == 200, resp.get_data(as_text=True)
        problems = {p["field"] for p in resp.get_json()["problems"]}
    else:
        assert resp.status_code == 400, resp.get_data(as_text=True)
        problems = set(fields(resp))
    assert any(f.endswith("reservation") for f in problems), problems
    assert api_env.get("/api/v1/pools/huge-pool").status_code == 404


def _nested(depth: int) -> str:
    return '{"a":' * depth + "1" + "}" * depth


@pytest.mark.parametrize("depth", [1000, 100_000])
def test_deeply_nested_json_is_a_400(api_env: ApiEnv, depth: int) -> None:
    for path, role in (("/api/v1/pools/validate", "viewer"), ("/api/v1/plans", "operator")):
        resp = api_env.post(path, role=role, data=_nested(depth), content_type="application/json")
        assert resp.status_code == 400, resp.get_data(as_text=True)
        assert "nested" in fields(resp)["body"]


def _deep_pool(levels: int) -> dict[str, Any]:
    node: dict[str, Any] = {"vm": "oltp-1"}
    for i in range(levels):
        node = {"name": f"p{i}", "children": [node]}
    return {"name": "deep-pool", "datastore": "6diskLUN", "pools": [node]}


def test_pool_trees_nested_too_deep_are_a_400_naming_where(api_env: ApiEnv) -> None:
    # 40 pools deep: a well-formed body, refused by the pool tree's own bound at the pool that is too deep.
    resp = api_env.post("/api/v1/pools", json=_deep_pool(40))
    assert resp.status_code == 400, resp.get_data(as_text=True)
    problems = fields(resp)
    too_deep = [f for f, m in problems.items() if "deeper than 32 levels" in m]
    assert too_deep == ["pools[0]" + ".children[0]" * 32], problems
    checked = api_env.post("/api/v1/pools/validate", role="viewer", json=_deep_pool(40))
    assert checked.status_code == 200
    assert any("deeper" in p["message"] for p in checked.get_json()["problems"])
    # 300 pools deep: 600 levels of JSON, refused before anything walks it.
    for path, role in (("/api/v1/pools", "operator"), ("/api/v1/pools/validate", "viewer")):
        resp = api_env.post(path, role=role, json=_deep_pool(300))
        assert resp.status_code == 400, resp.get_data(as_text=True)
        assert "nested deeper than 100 levels" in fields(resp)["body"]
    assert api_env.get("/api/v1/pools/deep-pool").status_code == 404
