"""One clock: with the lab's clock running 60 times faster than the wall, every time the API shows is
on vCenter's clock, as the samples are, so they agree with each other (nothing happens "before" the
samples it used, and /health's last collection is not in the future)."""

from __future__ import annotations

from datetime import datetime

from .conftest import ApiEnv


def t(text: str) -> datetime:
    return datetime.fromisoformat(text)


def test_times_shown_agree_with_vcenters_clock(api_env: ApiEnv) -> None:
    assert api_env.lab.control("GET", "time")["speed"] > 1
    rec = api_env.recommendation()  # collects, models, then recommends

    vc = api_env.get("/api/v1/health").get_json()["vcenters"][0]
    last, now = t(vc["last_collection"]), t(vc["now"])
    assert last <= now  # the newest sample is not in the future

    # The runs that collected and modelled those samples ended after them, on the same clock.
    collect = api_env.get("/api/v1/jobs/collect/runs").get_json()[0]
    model = api_env.get("/api/v1/jobs/model/runs").get_json()[0]
    assert t(collect["started"]) <= t(collect["finished"])
    assert last <= t(collect["finished"]) <= t(model["started"]) <= t(model["finished"]) <= now
    jobs = {j["id"]: j for j in api_env.get("/api/v1/jobs").get_json()}
    assert jobs["model"]["last_run"]["finished"] == model["finished"]

    # The recommendation came after the models it used; its model points and fits are older.
    created = t(rec["created_at"])
    assert t(model["finished"]) <= created <= now
    disk = rec["moves"][0]["disk"] if rec["moves"] else None
    if disk is not None:
        points = api_env.get(f"/api/v1/disks/{disk}/model", query_string={"hours": 24}).get_json()["points"]
        assert points
        assert all(t(p["t"]) <= created for p in points)
    history = api_env.get("/api/v1/pods/basil/history", query_string={"hours": 24}).get_json()["points"]
    assert history
    assert t(history[-1]["t"]) == t(model["finished"])

    # The audit entry of the recommendation: after the collection, at the recommendation's time.
    audit = api_env.get("/api/v1/audit", role="admin", query_string={"action": "recommendation.create"})
    entry = audit.get_json()[0]
    assert last <= t(entry["at"]) <= now
    assert t(entry["at"]) >= created
    # Paging the audit log with a time it showed gives the entries before it.
    older = api_env.get(
        "/api/v1/audit", role="admin", query_string={"before": entry["at"], "action": "recommendation.create"}
    ).get_json()
    assert all(e["id"] != entry["id"] for e in older)
