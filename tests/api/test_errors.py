"""Errors answer JSON with the status of their class: every validation problem listed with its field,
404 for what does not exist, 405, 409 for conflicts with the current state, 413 for a huge body."""

from __future__ import annotations

from typing import Any

import pytest

from .conftest import ApiEnv

POOL = {
    "name": "errors-pool",
    "datastore": "6diskLUN",
    "root": {"reservation": 900, "limit": "unlimited", "shares": 1000},
    "pools": [
        {
            "name": "oltp",
            "reservation": 600,
            "shares": "high",
            "children": [{"vm": "oltp-1"}, {"vm": "oltp-2"}],
        },
        {"name": "mail", "shares": "normal", "children": [{"vm": "exchange-1"}, {"vm": "exchange-2"}]},
    ],
}


def fields(resp: Any) -> dict[str, str]:
    body = resp.get_json()
    assert body["error"] == "invalid", body
    return {p["field"]: p["message"] for p in body["problems"]}


def test_unknown_route_is_a_json_404(api_env: ApiEnv) -> None:
    resp = api_env.get("/api/v1/nothing-here")
    assert resp.status_code == 404
    assert resp.get_json() == {"error": "not_found", "message": "no such resource: /api/v1/nothing-here"}


def test_wrong_method_is_a_json_405_with_allow(api_env: ApiEnv) -> None:
    resp = api_env.delete("/api/v1/plans")
    assert resp.status_code == 405
    assert resp.get_json()["error"] == "method_not_allowed"
    assert "POST" in resp.headers["Allow"]


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("/api/v1/pods/no-such-pod", "no-such-pod"),
        ("/api/v1/plans/999999", "999999"),
        ("/api/v1/plans/not-a-number", "not-a-number"),
        ("/api/v1/pools/no-such-tree", "no-such-tree"),
        ("/api/v1/datastores/datastore-99999", "datastore-99999"),
        ("/api/v1/vms/vm-99999", "vm-99999"),
    ],
)
def test_missing_things_are_404_naming_them(api_env: ApiEnv, path: str, message: str) -> None:
    resp = api_env.get(path)
    assert resp.status_code == 404, resp.get_data(as_text=True)
    assert resp.get_json()["error"] == "not_found"
    assert message in resp.get_json()["message"]


def test_plan_body_lists_every_problem_at_once(api_env: ApiEnv) -> None:
    resp = api_env.post(
        "/api/v1/plans",
        json={
            "pod": "",
            "moves": [{"disk": "vm-1:scsi0:1"}, {"disk": 3, "to": "ds", "extra": 1}],
            "colour": "red",
        },
    )
    assert resp.status_code == 400
    problems = fields(resp)
    assert set(problems) == {"pod", "moves[0].to", "moves[1].disk", "moves[1].extra", "colour"}
    assert problems["moves[0].to"] == "is required"
    assert "a string" in problems["moves[1].disk"]


def test_plan_body_needs_one_of_two_shapes(api_env: ApiEnv) -> None:
    resp = api_env.post("/api/v1/plans", json={})
    assert resp.status_code == 400
    assert "recommendation_id" in fields(resp)["body"]


def test_placement_lists_every_bad_number(api_env: ApiEnv) -> None:
    resp = api_env.post(
        "/api/v1/placement",
        json={
            "pod": "basil",
            "size_gb": -1,
            "oio": "many",
            "io_size_kb": 8,
            "read_pct": 140,
            "random_pct": None,
        },
    )
    assert resp.status_code == 400
    assert set(fields(resp)) == {"size_gb", "oio", "read_pct", "random_pct"}


def test_query_parameters_are_checked(api_env: ApiEnv) -> None:
    resp = api_env.get("/api/v1/pods/basil/history?hours=-3&colour=red")
    assert resp.status_code == 400
    assert set(fields(resp)) == {"query.hours", "query.colour"}
    resp = api_env.get("/api/v1/plans?state=finished")
    assert "query.state" in fields(resp)
    resp = api_env.get("/api/v1/pods/basil/slo/history?since=yesterday")
    assert resp.status_code == 400
    assert list(fields(resp)) == ["query.since"]
    resp = api_env.get("/api/v1/pods/basil/slo/history?since=2026-11-26T10:00:00Z&until=2026-11-26T09:00:00Z")
    assert resp.status_code == 400
    assert list(fields(resp)) == ["query.until"]
    assert api_env.get("/api/v1/pods/nope/slo/history").status_code == 404


@pytest.mark.parametrize(
    ("data", "content_type", "message"),
    [
        ("{not json", "application/json", "is not valid JSON"),
        ('{"pod": "basil"}', "text/plain", "Content-Type: application/json"),
        ("", "application/json", "a JSON body is required"),
        ("[1, 2]", "application/json", "must be an object"),
    ],
    ids=["malformed", "not-json-type", "empty", "array"],
)
def test_bodies_that_are_not_json_objects(
    api_env: ApiEnv, data: str, content_type: str, message: str
) -> None:
    resp = api_env.post("/api/v1/plans", data=data, content_type=content_type)
    assert resp.status_code == 400
    assert message in fields(resp)["body"]


def test_huge_body_is_413(api_env: ApiEnv) -> None:
    resp = api_env.post(
        "/api/v1/pools/validate", role="viewer", data="x" * (5 * 1024 * 1024), content_type="application/json"
    )
    assert resp.status_code == 413
    assert resp.get_json()["error"] == "too_large"


def test_pool_problems_are_all_listed_and_nothing_is_saved(api_env: ApiEnv) -> None:
    bad = {
        "name": "bad-pool",
        "datastore": "no-such-datastore",
        "root": {"reservation": 100, "limit": 50},
        "pools": [{"name": "p", "children": [{"vm": "no-such-vm"}]}],
    }
    resp = api_env.post("/api/v1/pools", json=bad)
    assert resp.status_code == 400
    problems = fields(resp)
    assert len(problems) >= 3, problems
    assert any("datastore" in f for f in problems)
    assert any("vm" in f for f in problems)
    assert api_env.get("/api/v1/pools/bad-pool").status_code == 404
    # Validation alone says the same, with 200, for a viewer.
    checked = api_env.post("/api/v1/pools/validate", role="viewer", json=bad)
    assert checked.status_code == 200
    assert checked.get_json()["valid"] is False
    assert {p["field"] for p in checked.get_json()["problems"]} == set(problems)


def test_tag_leaves_through_the_api(api_env: ApiEnv) -> None:
    bad = {
        "name": "tag-pool",
        "datastore": "6diskLUN",
        "pools": [
            {"name": "p", "children": [{"tag": "workload/oltp"}, {"tag": "workload/no-such-tag"}]},
            {"name": "q", "children": [{"vm": "oltp-2"}]},
        ],
    }
    checked = api_env.post("/api/v1/pools/validate", role="viewer", json=bad)
    assert checked.status_code == 200
    problems = {p["field"]: p["message"] for p in checked.get_json()["problems"]}
    assert problems.keys() == {"pools[0].children[0].tag", "pools[0].children[1].tag"}, problems
    assert (
        "VM 'oltp-2' carries tag 'workload/oltp' and is also in the tree by name"
        in (problems["pools[0].children[0].tag"])
    )
    assert "unknown tag 'workload/no-such-tag'" in problems["pools[0].children[1].tag"]

    good = {**bad, "pools": [{"name": "p", "children": [{"tag": "workload/oltp", "limit": 500}]}]}
    created = api_env.post("/api/v1/pools", json=good)
    assert created.status_code == 201, created.get_data(as_text=True)
    assert created.get_json()["pools"] == good["pools"]  # kept as written: the tag, not its VMs
    assert api_env.delete("/api/v1/pools/tag-pool").status_code == 204


def test_pool_version_conflict_is_409_and_changes_nothing(api_env: ApiEnv) -> None:
    created = api_env.post("/api/v1/pools", json=POOL)
    assert created.status_code == 201, created.get_data(as_text=True)
    version = created.get_json()["version"]
    again = api_env.post("/api/v1/pools", json=POOL)
    assert again.status_code == 409
    changed = {**POOL, "root": {"reservation": 800, "limit": "unlimited", "shares": 1000}}
    ok = api_env.put("/api/v1/pools/errors-pool", json={**changed, "version": version})
    assert ok.status_code == 200, ok.get_data(as_text=True)
    assert ok.get_json()["version"] == version + 1
    stale = api_env.put("/api/v1/pools/errors-pool", json={**POOL, "version": version})
    assert stale.status_code == 409
    assert stale.get_json()["error"] == "conflict"
    assert api_env.get("/api/v1/pools/errors-pool").get_json()["version"] == version + 1
    missing_version = api_env.put("/api/v1/pools/errors-pool", json=POOL)
    assert missing_version.status_code == 400
    assert "version" in fields(missing_version)
    stale_delete = api_env.delete(f"/api/v1/pools/errors-pool?version={version}")
    assert stale_delete.status_code == 409
    deleted = api_env.delete(f"/api/v1/pools/errors-pool?version={version + 1}")
    assert deleted.status_code == 204
    assert api_env.get("/api/v1/pools/errors-pool").status_code == 404


def test_path_and_body_names_must_agree(api_env: ApiEnv) -> None:
    resp = api_env.put("/api/v1/pools/one-name", json={**POOL, "version": 1})
    assert resp.status_code == 400
    assert "name" in fields(resp)


def test_token_name_taken_is_409(api_env: ApiEnv) -> None:
    first = api_env.post("/api/v1/tokens", role="admin", json={"name": "dup", "role": "viewer"})
    assert first.status_code == 201
    second = api_env.post("/api/v1/tokens", role="admin", json={"name": "dup", "role": "viewer"})
    assert second.status_code == 409


def test_cancelled_plan_cannot_be_approved(api_env: ApiEnv) -> None:
    moves = api_env.recommendation()["moves"]
    assert moves
    plan = api_env.post(
        "/api/v1/plans", json={"pod": "basil", "moves": [{"disk": moves[0]["disk"], "to": moves[0]["to"]}]}
    )
    assert plan.status_code == 201, plan.get_data(as_text=True)
    plan_id = plan.get_json()["id"]
    cancelled = api_env.post(f"/api/v1/plans/{plan_id}/cancel")
    assert cancelled.status_code == 200
    assert cancelled.get_json()["state"] == "cancelled"
    resp = api_env.post(f"/api/v1/plans/{plan_id}/approve")
    assert resp.status_code == 409
    assert resp.get_json()["error"] == "conflict"
    assert api_env.get(f"/api/v1/plans/{plan_id}").get_json()["state"] == "cancelled"


def test_rebalance_window_change_is_shown_kept_and_reset(api_env: ApiEnv) -> None:
    bad = api_env.put(
        "/api/v1/schedules/rebalance", role="admin", json={"cron": "0 1 * * sun", "timezone": "Mars"}
    )
    assert bad.status_code == 400
    assert set(fields(bad)) == {"timezone"}
    assert (
        api_env.get("/api/v1/schedules").get_json()["rebalance"]["cron"] != "0 1 * * sun"
    )  # nothing changed

    changed = api_env.put("/api/v1/schedules/rebalance", role="admin", json={"cron": "0 1 * * sun"})
    assert changed.status_code == 200, changed.get_data(as_text=True)
    window = api_env.get("/api/v1/schedules").get_json()["rebalance"]
    assert window["cron"] == "0 1 * * sun"
    assert window["changed"]["fields"]["cron"] == "0 1 * * sun"
    assert window["changed"]["by"] == "test-admin"

    reset = api_env.delete("/api/v1/schedules/rebalance", role="admin")
    assert reset.status_code == 200, reset.get_data(as_text=True)
    window = reset.get_json()["rebalance"]
    assert window["changed"] is None
    assert window["cron"] == api_env.config.schedules.rebalance.cron  # the configuration's window
