"""What every answer carries: JSON with ISO times, security headers, CORS only for the configured
vCenters, Prometheus metrics behind a token; and the token endpoints' round trip."""

from __future__ import annotations

from dataclasses import replace

from basil.api import create_app
from basil.config import BasilConfig

from .conftest import ApiEnv


def test_api_answers_carry_security_headers(api_env: ApiEnv) -> None:
    for resp in (
        api_env.get("/api/v1/pods"),
        api_env.get("/api/v1/pods", role=None),
        api_env.get("/api/v1/health"),
    ):
        assert resp.headers["X-Content-Type-Options"] == "nosniff"
        assert resp.headers["X-Frame-Options"] == "DENY"
        assert "default-src 'none'" in resp.headers["Content-Security-Policy"]
        assert resp.headers["Cache-Control"] == "no-store"
        assert resp.headers["Referrer-Policy"] == "no-referrer"
        assert resp.mimetype == "application/json"
        names = [name.lower() for name, _ in resp.headers]
        assert len(names) == len(set(names)), "a header added twice"
    # HSTS only over HTTPS (the test client speaks plain HTTP unless told otherwise).
    assert "Strict-Transport-Security" not in api_env.get("/api/v1/pods").headers
    secure = api_env.client().get("/api/v1/health", base_url="https://localhost")
    assert secure.headers.getlist("Strict-Transport-Security") == ["max-age=31536000"]


def test_cors_only_for_the_configured_vcenters(api_env: ApiEnv) -> None:
    vc_origin = f"https://{api_env.lab.server}"
    preflight = api_env.client().options(
        "/api/v1/pods",
        headers={"Origin": vc_origin, "Access-Control-Request-Method": "GET",
                 "Access-Control-Request-Headers": "X-Basil-VC-Session"},
    )  # fmt: skip
    assert preflight.status_code == 204
    assert preflight.headers["Access-Control-Allow-Origin"] == vc_origin
    assert "X-Basil-VC-Session" in preflight.headers["Access-Control-Allow-Headers"]
    assert "Access-Control-Allow-Credentials" not in preflight.headers  # no cookies, ever
    other = api_env.get("/api/v1/pods", headers={"Origin": "https://evil.example"})
    assert other.status_code == 200
    assert "Access-Control-Allow-Origin" not in other.headers
    plain = api_env.get("/api/v1/pods")
    assert "Access-Control-Allow-Origin" not in plain.headers


def test_times_are_iso_8601(api_env: ApiEnv) -> None:
    api_env.run_jobs("inventory")
    jobs = api_env.get("/api/v1/jobs").get_json()
    finished = [j["last_run"]["finished"] for j in jobs if j["last_run"]]
    assert finished
    assert all("T" in t and (t.endswith("+00:00") or t.endswith("Z")) for t in finished)


def test_metrics_need_a_token_and_hold_both_layers(api_env: ApiEnv) -> None:
    assert api_env.get("/metrics", role=None).status_code == 401
    api_env.get("/api/v1/pods")
    for path in ("/metrics", "/api/v1/metrics"):
        resp = api_env.get(path)
        assert resp.status_code == 200
        assert resp.content_type.startswith("text/plain; version=0.0.4")
        text = resp.get_data(as_text=True)
        assert 'basil_http_requests_total{method="GET",route="/api/v1/pods",status="200"}' in text
        assert "basil_http_request_duration_seconds_bucket" in text
        # The service's own figures follow the web layer's.
        assert "basil_jobs" in text or "basil_job" in text


def test_token_round_trip(api_env: ApiEnv) -> None:
    created = api_env.post(
        "/api/v1/tokens", role="admin", json={"name": "round-trip", "role": "operator", "expires_in": "1d"}
    )
    assert created.status_code == 201
    body = created.get_json()
    assert body["role"] == "operator"
    assert body["expires_at"] is not None
    headers = {"Authorization": f"Bearer {body['token']}"}
    client = api_env.client()
    assert client.get("/api/v1/me", headers=headers).get_json()["name"] == "round-trip"
    listed = {t["name"]: t for t in api_env.get("/api/v1/tokens", role="admin").get_json()}
    assert "token" not in listed["round-trip"]
    assert listed["round-trip"]["active"] is True
    revoked = api_env.delete("/api/v1/tokens/round-trip", role="admin")
    assert revoked.status_code == 200
    assert revoked.get_json()["active"] is False
    assert client.get("/api/v1/me", headers=headers).status_code == 401
    bad = api_env.post(
        "/api/v1/tokens", role="admin", json={"name": "x y", "role": "root", "expires_in": "soon"}
    )
    assert bad.status_code == 400
    assert {p["field"] for p in bad.get_json()["problems"]} == {"name", "role", "expires_in"}


def test_forwarded_address_is_believed_only_behind_a_trusted_proxy(api_env: ApiEnv) -> None:
    def audited_source(app_config: BasilConfig) -> str:
        original = api_env.service.config
        api_env.service.config = app_config
        try:
            client = create_app(api_env.service).test_client()
        finally:
            api_env.service.config = original
        headers = {**api_env.headers("viewer"), "X-Forwarded-For": "198.51.100.7"}
        assert client.post("/api/v1/pods/basil/recommendations", headers=headers).status_code == 403
        entry = api_env.get("/api/v1/audit?limit=1", role="admin").get_json()[0]
        assert entry["outcome"] == "denied"
        source: str = entry["from"]
        return source

    config = api_env.service.config
    assert audited_source(config) == "127.0.0.1"
    behind_proxy = replace(config, server=replace(config.server, trusted_proxies=1))
    assert audited_source(behind_proxy) == "198.51.100.7"
