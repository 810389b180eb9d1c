"""Cached answers of reads (basil.api.answers): after each kind of write, every cached read answers what
a fresh application (an empty answer cache) answers, so no write leaves a stale answer behind; a
repeated read is answered from the cache; callers of different roles never share an entry."""

from __future__ import annotations

import threading
from typing import Any

from flask import Flask

from basil.api import create_app
from basil.api.answers import AnswerCache
from basil.api.operations import OPERATIONS

from .conftest import ApiEnv
from .test_errors import POOL


def _cached_app(api_env: ApiEnv) -> tuple[Flask, AnswerCache]:
    app = create_app(api_env.service)
    # A clock that never moves: answers built again only because their basis moved, never by age.
    answers = AnswerCache(clock=lambda: 0.0)
    app.extensions["basil"].answers = answers
    return app, answers


def _paths(api_env: ApiEnv) -> list[str]:
    """One path of every cached read, on objects of the lab's pod."""
    disk = api_env.get("/api/v1/disks?pod=basil&limit=1").get_json()["items"][0]
    ds = disk["datastore"]["id"]
    vm = disk["vm"]["id"]
    plans = api_env.get("/api/v1/plans").get_json()
    paths = [
        "/api/v1/pods",
        "/api/v1/pods/basil",
        "/api/v1/pods/basil/history?hours=24",
        f"/api/v1/datastores/{ds}",
        f"/api/v1/datastores/{ds}/model/points?hours=24",
        f"/api/v1/datastores/{ds}/load?hours=24",
        f"/api/v1/vms/{vm}",
        f"/api/v1/disks/{disk['id']}/model?hours=24",
        "/api/v1/plans",
        "/api/v1/plans?state=proposed",
        "/api/v1/audit?limit=50",
        "/api/v1/pools",
    ]
    paths += [f"/api/v1/plans/{p['id']}" for p in plans[:3]]
    return paths


def _same_as_fresh(api_env: ApiEnv, app: Flask, paths: list[str]) -> None:
    cached = app.test_client()
    fresh = create_app(api_env.service).test_client()  # its own, empty answer cache
    headers = api_env.headers("viewer")
    for path in paths:
        got = cached.get(path, headers=headers)
        want = fresh.get(path, headers=headers)
        assert got.status_code == want.status_code == 200, (path, got.get_data(as_text=True))
        assert got.get_json() == want.get_json(), (path, _difference(got.get_json(), want.get_json()))


def _difference(got: Any, want: Any, where: str = "") -> str:
    """Where two JSON values first differ (for the failure message)."""
    if isinstance(got, dict) and isinstance(want, dict):
        for key in sorted(set(got) | set(want)):
            if got.get(key) != want.get(key):
                return _difference(got.get(key), want.get(key), f"{where}.{key}")
    if isinstance(got, list) and isinstance(want, list) and len(got) == len(want):
        for i, (a, b) in enumerate(zip(got, want, strict=True)):
            if a != b:
                return _difference(a, b, f"{where}[{i}]")
    return f"{where}: {str(got)[:300]} != {str(want)[:300]}"


def _explicit_plan(api_env: ApiEnv) -> dict[str, Any]:
    disk = api_env.get("/api/v1/disks?pod=basil&limit=1").get_json()["items"][0]
    pod = api_env.get("/api/v1/pods/basil").get_json()
    target = next(d["id"] for d in pod["datastores"] if d["id"] != disk["datastore"]["id"])
    resp = api_env.post("/api/v1/plans", json={"pod": "basil", "moves": [{"disk": disk["id"], "to": target}]})
    assert resp.status_code == 201, resp.get_data(as_text=True)
    plan: dict[str, Any] = resp.get_json()
    return plan


def test_the_cached_reads_are_the_ones_listed_here() -> None:
    cached = sorted(op.full_path for op in OPERATIONS.values() if op.cache is not None)
    assert cached == sorted(
        [
            "/audit",
            "/datastores/{id}",
            "/datastores/{id}/load",
            "/datastores/{id}/model/points",
            "/disks/{id}/model",
            "/plans",
            "/plans/{id}",
            "/pods",
            "/pods/{pod}",
            "/pods/{pod}/history",
            "/pools",
            "/vms/{id}",
        ]
    ), "a newly cached read needs its path in _paths and the write that changes it below"


def test_no_write_leaves_a_stale_cached_answer(api_env: ApiEnv) -> None:
    api_env.run_jobs("inventory", "collect", "model")
    first = _explicit_plan(api_env)
    app, answers = _cached_app(api_env)
    paths = [*_paths(api_env), f"/api/v1/plans/{first['id']}"]
    _same_as_fresh(api_env, app, paths)  # every answer now cached
    _same_as_fresh(api_env, app, paths)
    assert answers.hits >= len(paths)  # the second round came from the cache

    second = _explicit_plan(api_env)  # plans, pending moves of the pod, audit
    paths.append(f"/api/v1/plans/{second['id']}")
    _same_as_fresh(api_env, app, paths)
    assert api_env.post(f"/api/v1/plans/{first['id']}/cancel").status_code == 200
    _same_as_fresh(api_env, app, paths)
    resp = api_env.post("/api/v1/pools", json={**POOL, "name": "answers-pool"})  # pools, VMs' pools
    assert resp.status_code == 201, resp.get_data(as_text=True)
    _same_as_fresh(api_env, app, paths)
    api_env.run_jobs("collect", "model")  # samples, device points, models, modelling runs
    _same_as_fresh(api_env, app, paths)
    assert api_env.post("/api/v1/pods/basil/recommendations").status_code == 201  # the pod's last round
    _same_as_fresh(api_env, app, paths)
    resp = api_env.put("/api/v1/schedules/rebalance", role="admin", json={"max_moves": 3})  # configuration
    assert resp.status_code == 200, resp.get_data(as_text=True)
    _same_as_fresh(api_env, app, paths)


def test_roles_do_not_share_cached_answers(api_env: ApiEnv) -> None:
    app, answers = _cached_app(api_env)
    client = app.test_client()
    for role in ("viewer", "operator", "admin"):
        assert client.get("/api/v1/pools", headers=api_env.headers(role)).status_code == 200
    assert len(answers) == 3
    assert answers.hits == 0


def test_a_refused_read_is_not_cached(api_env: ApiEnv) -> None:
    app, answers = _cached_app(api_env)
    client = app.test_client()
    assert client.get("/api/v1/plans/999999", headers=api_env.headers("viewer")).status_code == 404
    assert client.get("/api/v1/pools").status_code == 401
    assert len(answers) == 0


def test_a_large_answer_is_served_but_not_kept(api_env: ApiEnv) -> None:
    app = create_app(api_env.service)
    answers = AnswerCache(clock=lambda: 0.0, max_body_bytes=10)
    app.extensions["basil"].answers = answers
    client = app.test_client()
    first = client.get("/api/v1/pods", headers=api_env.headers("viewer"))
    again = client.get("/api/v1/pods", headers=api_env.headers("viewer"))
    assert first.status_code == again.status_code == 200
    assert first.get_json() == again.get_json()
    assert len(first.get_data()) > 10
    assert len(answers) == 0
    assert answers.hits == 0


def test_readers_arriving_together_after_a_plan_write_build_the_answer_once(api_env: ApiEnv) -> None:
    app, answers = _cached_app(api_env)
    headers = api_env.headers("viewer")
    assert app.test_client().get("/api/v1/pods/basil", headers=headers).status_code == 200
    plan = _explicit_plan(api_env)  # moves the plans' generation: the kept answer no longer holds
    builds = answers.misses
    bodies: list[Any] = []

    def read() -> None:
        resp = app.test_client().get("/api/v1/pods/basil", headers=headers)
        bodies.append((resp.status_code, resp.get_json()))

    readers = [threading.Thread(target=read) for _ in range(8)]
    for t in readers:
        t.start()
    for t in readers:
        t.join()
    assert answers.misses == builds + 1  # one reader built it; the others waited for it or hit it
    assert len(bodies) == 8
    assert all(b == bodies[0] for b in bodies)
    assert bodies[0][0] == 200
    assert {m["id"] for m in plan["moves"]} <= {m["id"] for m in bodies[0][1]["pending"]}  # the write shows
