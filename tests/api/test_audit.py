"""Every write leaves exactly one audit entry (who, what, when, from where, outcome): the service's for
actions it ran, the web layer's for writes it refused (unauthenticated, forbidden, invalid)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import quote

import pytest

from .conftest import ApiEnv
from .test_errors import POOL


def _entries(api_env: ApiEnv) -> list[dict[str, Any]]:
    resp = api_env.get("/api/v1/audit?limit=1000", role="admin")
    assert resp.status_code == 200
    entries: list[dict[str, Any]] = resp.get_json()
    return entries


def _new_entries(api_env: ApiEnv, before: list[dict[str, Any]]) -> list[dict[str, Any]]:
    seen = {e["id"] for e in before}
    return [e for e in _entries(api_env) if e["id"] not in seen]


def _write(
    api_env: ApiEnv, role: str | None, method: str, path: str, body: Any = None
) -> tuple[Any, dict[str, Any]]:
    before = _entries(api_env)
    resp = api_env.client().open(path, method=method, headers=api_env.headers(role), json=body)
    new = _new_entries(api_env, before)
    assert len(new) == 1, (method, path, resp.status_code, new)
    return resp, new[0]


def test_each_kind_of_write_is_audited_once(api_env: ApiEnv) -> None:
    recommendation = api_env.recommendation()
    start = datetime.now(UTC) - timedelta(seconds=5)
    rec_id = {"recommendation_id": recommendation["id"]}
    place = {"pod": "basil", "size_gb": 10, "oio": 4, "io_size_kb": 8, "read_pct": 70, "random_pct": 100}
    explicit = {"pod": "basil", "moves": [{"disk": "d", "to": "t"}]}
    token = {"name": "audited-token", "role": "viewer"}
    cases: list[tuple[str | None, str, str, Any, str, str]] = [
        # role, method, path, body, action, outcome
        ("operator", "POST", "/api/v1/plans", rec_id, "plan.create", "ok"),
        ("operator", "POST", "/api/v1/pods/basil/recommendations", None, "recommendation.create", "ok"),
        ("operator", "POST", "/api/v1/placement", place, "placement", "ok"),
        ("operator", "POST", "/api/v1/pools", {**POOL, "name": "audit-pool"}, "pool.create", "ok"),
        ("admin", "PUT", "/api/v1/schedules/rebalance", {"max_moves": 7}, "schedules.rebalance", "ok"),
        ("admin", "DELETE", "/api/v1/schedules/rebalance", None, "schedules.rebalance.reset", "ok"),
        ("admin", "POST", "/api/v1/jobs/inventory/run", None, "job.run", "ok"),
        ("admin", "POST", "/api/v1/tokens", token, "token.create", "ok"),
        ("admin", "DELETE", "/api/v1/tokens/audited-token", None, "token.revoke", "ok"),
        ("operator", "DELETE", "/api/v1/pools/audit-pool", None, "pool.delete", "ok"),
        # refused before the service runs anything: audited by the web layer
        ("viewer", "POST", "/api/v1/plans", explicit, "plan.create", "denied"),
        (None, "POST", "/api/v1/plans/1/approve", None, "plan.approve", "denied"),
        ("operator", "POST", "/api/v1/plans", {"moves": []}, "plan.create", "invalid"),
        ("operator", "PUT", "/api/v1/schedules/rebalance", {"max_moves": 1}, "schedules.rebalance", "denied"),
        ("operator", "DELETE", "/api/v1/schedules/rebalance", None, "schedules.rebalance.reset", "denied"),
        # refused by the service: audited by it
        ("admin", "PUT", "/api/v1/schedules/rebalance", {"cron": "daily"}, "schedules.rebalance", "invalid"),
        ("operator", "POST", "/api/v1/plans/999999/approve", None, "plan.approve", "failed"),
    ]  # fmt: skip
    for role, method, path, body, action, outcome in cases:
        resp, entry = _write(api_env, role, method, path, body)
        assert entry["action"].startswith(action), (path, entry)
        assert entry["outcome"] == outcome, (path, resp.status_code, resp.get_data(as_text=True), entry)
        assert entry["who"] == (f"test-{role}" if role else "anonymous"), entry
        assert entry["from"] == "127.0.0.1", entry
        assert datetime.fromisoformat(entry["at"]) >= start
        assert (resp.status_code < 400) == (outcome == "ok"), (path, resp.status_code)


def test_reads_and_validation_are_not_audited(api_env: ApiEnv) -> None:
    before = _entries(api_env)
    assert api_env.get("/api/v1/pods").status_code == 200
    assert api_env.get("/api/v1/plans?state=proposed").status_code == 200
    assert api_env.post("/api/v1/pools/validate", role="viewer", json=POOL).status_code == 200
    assert api_env.get("/api/v1/pods/nope").status_code == 404
    assert _new_entries(api_env, before) == []


def test_audit_paging_and_filters(api_env: ApiEnv) -> None:
    for i in range(3):
        api_env.post("/api/v1/tokens", role="admin", json={"name": f"page-{i}", "role": "viewer"})
    newest = api_env.get("/api/v1/audit?limit=2&action=token.", role="viewer").get_json()
    assert [e["target"] for e in newest] == ["token page-2", "token page-1"]
    older = api_env.get(f"/api/v1/audit?limit=1&action=token.&before={quote(newest[-1]['at'])}").get_json()
    assert older[0]["target"] == "token page-0"
    bad = api_env.get("/api/v1/audit?before=yesterday&limit=0")
    assert bad.status_code == 400
    assert {p["field"] for p in bad.get_json()["problems"]} == {"query.before", "query.limit"}
    bad_time = api_env.get("/api/v1/audit?before=yesterday")
    assert bad_time.status_code == 400
    assert bad_time.get_json()["problems"][0]["field"] == "query.before"


@pytest.mark.parametrize("secret_field", ["token"])
def test_no_token_ever_reaches_the_audit_log(api_env: ApiEnv, secret_field: str) -> None:
    created = api_env.post("/api/v1/tokens", role="admin", json={"name": "secret-check", "role": "viewer"})
    token = created.get_json()[secret_field]
    assert token.startswith("basil_")
    assert token not in str(_entries(api_env))
    # Nor does the bearer token of a refused request.
    api_env.client().post("/api/v1/plans", headers={"Authorization": "Bearer basil_deadbeef0000_" + "x" * 43})
    assert "deadbeef0000" not in str(_entries(api_env))
