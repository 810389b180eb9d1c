"""Authentication and roles: API tokens (missing, malformed, unknown, revoked, expired) and vCenter
sessions validated through the lab's clone-ticket endpoint; what each role may do."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import event

from basil.api import create_app
from basil.api.auth import REFUSAL_REFILL_S, REFUSALS_BURST, TOKEN_RECHECK_S, Authenticator
from basil.config import AuthConfig
from basil.store import Store
from basil.store.tokens import create_token, revoke_token

from .conftest import ApiEnv, lab_session_token


def _error(resp: object) -> dict[str, object]:
    body = json.loads(resp.get_data(as_text=True))  # type: ignore[attr-defined]
    assert isinstance(body, dict)
    return body


@pytest.mark.parametrize(
    "path", ["/api/v1/pods", "/api/v1/plans", "/api/v1/metrics", "/metrics", "/api/v1/audit"]
)
def test_missing_token_is_401_with_a_json_error(api_env: ApiEnv, path: str) -> None:
    resp = api_env.get(path, role=None)
    assert resp.status_code == 401
    assert resp.headers["WWW-Authenticate"].startswith("Bearer")
    body = _error(resp)
    assert body["error"] == "unauthenticated"
    assert "Bearer" in str(body["message"])


@pytest.mark.parametrize(
    "header",
    [
        pytest.param("Bearer basil_000000000000_" + "A" * 43, id="unknown-token"),
        pytest.param("Bearer not-a-token", id="malformed-token"),
        pytest.param("Basic dXNlcjpwYXNz", id="wrong-scheme"),
        pytest.param("Bearer ", id="empty"),
    ],
)
def test_invalid_token_is_401(api_env: ApiEnv, header: str) -> None:
    resp = api_env.client().get("/api/v1/pods", headers={"Authorization": header})
    assert resp.status_code == 401
    assert _error(resp)["error"] == "unauthenticated"


def test_public_routes_need_no_token(api_env: ApiEnv) -> None:
    assert api_env.get("/api/v1/health", role=None).status_code == 200
    assert api_env.get("/api/v1/openapi.json", role=None).status_code == 200


def test_revoked_token_is_refused_at_once_even_when_cached(api_env: ApiEnv) -> None:
    with api_env.service.store.session() as session:
        token, _ = create_token(session, "soon-revoked", "viewer", created_by="tests")
    headers = {"Authorization": f"Bearer {token}"}
    client = api_env.client()
    assert client.get("/api/v1/pods", headers=headers).status_code == 200  # verified, now cached
    with api_env.service.store.session() as session:
        revoke_token(session, "soon-revoked")  # as `basil token revoke` does, from another process
    resp = client.get("/api/v1/pods", headers=headers)
    assert resp.status_code == 401
    assert "revoked" in str(_error(resp)["message"])


class _Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _token_reads(store: Store) -> list[str]:
    """A list that records every SELECT of the token table made through *store* from now on."""
    seen: list[str] = []

    def note(_conn: object, _cursor: object, statement: str, *_args: object) -> None:
        if statement.lstrip().upper().startswith("SELECT") and "api_tokens" in statement:
            seen.append(statement)

    event.listen(store.engine, "before_cursor_execute", note)
    return seen


def test_a_cached_token_is_reread_only_after_a_change_or_the_recheck_interval(api_env: ApiEnv) -> None:
    with api_env.service.store.session() as session:
        token, _ = create_token(session, "cached-reads", "viewer", created_by="tests")
    clock = _Clock()
    authenticator = Authenticator(AuthConfig(), api_env.config.vcenters, api_env.service.store, clock=clock)
    client = create_app(api_env.service, authenticator=authenticator).test_client()
    headers = {"Authorization": f"Bearer {token}"}
    assert client.get("/api/v1/me", headers=headers).status_code == 200  # verified (writes last_used_at)
    assert client.get("/api/v1/me", headers=headers).status_code == 200  # the table changed: re-read
    reads = _token_reads(api_env.service.store)
    for _ in range(5):
        assert client.get("/api/v1/me", headers=headers).status_code == 200
    assert reads == []  # nothing changed, within the recheck interval: no read
    clock.now += TOKEN_RECHECK_S
    assert client.get("/api/v1/me", headers=headers).status_code == 200
    assert len(reads) == 1


def test_a_token_revoked_by_another_process_is_refused_after_the_recheck_interval(
    api_env: ApiEnv,
) -> None:
    with api_env.service.store.session() as session:
        token, _ = create_token(session, "revoked-elsewhere", "viewer", created_by="tests")
    clock = _Clock()
    authenticator = Authenticator(AuthConfig(), api_env.config.vcenters, api_env.service.store, clock=clock)
    client = create_app(api_env.service, authenticator=authenticator).test_client()
    headers = {"Authorization": f"Bearer {token}"}
    assert client.get("/api/v1/me", headers=headers).status_code == 200
    with Store(api_env.config.store.url) as other, other.session() as session:  # `basil token revoke`
        revoke_token(session, "revoked-elsewhere")
    clock.now += TOKEN_RECHECK_S
    resp = client.get("/api/v1/me", headers=headers)
    assert resp.status_code == 401
    assert "revoked" in str(_error(resp)["message"])


def test_a_token_revoked_through_the_api_is_refused_at_the_next_request(api_env: ApiEnv) -> None:
    resp = api_env.post("/api/v1/tokens", role="admin", json={"name": "revoked-here", "role": "viewer"})
    assert resp.status_code == 201, resp.get_data(as_text=True)
    headers = {"Authorization": f"Bearer {resp.get_json()['token']}"}
    clock = _Clock()  # never advances: only the token table's change can make the revocation seen
    authenticator = Authenticator(AuthConfig(), api_env.config.vcenters, api_env.service.store, clock=clock)
    client = create_app(api_env.service, authenticator=authenticator).test_client()
    assert client.get("/api/v1/me", headers=headers).status_code == 200
    assert client.get("/api/v1/me", headers=headers).status_code == 200
    revoked = api_env.client().delete("/api/v1/tokens/revoked-here", headers=api_env.headers("admin"))
    assert revoked.status_code == 200
    resp = client.get("/api/v1/me", headers=headers)
    assert resp.status_code == 401


def test_expired_token_is_refused(api_env: ApiEnv) -> None:
    an_hour_ago = datetime.now(UTC) - timedelta(hours=1)
    with api_env.service.store.session() as session:
        token, _ = create_token(
            session, "expired", "admin", created_by="tests",
            expires_at=an_hour_ago + timedelta(minutes=30), now=an_hour_ago,
        )  # fmt: skip
    resp = api_env.client().get("/api/v1/pods", headers={"Authorization": f"Bearer {token}"})
    assert resp.status_code == 401
    assert "expired" in str(_error(resp)["message"])


@pytest.mark.parametrize(
    ("role", "method", "path", "allowed"),
    [
        ("viewer", "GET", "/api/v1/pods", True),
        ("viewer", "POST", "/api/v1/pods/basil/recommendations", False),
        ("viewer", "POST", "/api/v1/plans/1/approve", False),
        ("viewer", "PUT", "/api/v1/schedules/rebalance", False),
        ("viewer", "POST", "/api/v1/pools/validate", True),
        ("operator", "POST", "/api/v1/pods/basil/recommendations", True),
        ("operator", "POST", "/api/v1/jobs/collect/run", False),
        ("operator", "PUT", "/api/v1/schedules/rebalance", False),
        ("operator", "DELETE", "/api/v1/schedules/rebalance", False),
        ("operator", "GET", "/api/v1/tokens", False),
        ("admin", "GET", "/api/v1/tokens", True),
        ("admin", "POST", "/api/v1/jobs/inventory/run", True),
    ],
)
def test_roles(api_env: ApiEnv, role: str, method: str, path: str, allowed: bool) -> None:
    body = (
        {"name": "x"} if path.endswith("/validate") else ({"max_moves": 5} if "schedules" in path else None)
    )
    resp = api_env.client().open(path, method=method, headers=api_env.headers(role), json=body)
    if allowed:
        assert resp.status_code not in (401, 403), resp.get_data(as_text=True)
    else:
        assert resp.status_code == 403
        body_json = _error(resp)
        assert body_json["error"] == "forbidden"
        assert role in str(body_json["message"])


def test_me_reports_the_caller(api_env: ApiEnv) -> None:
    resp = api_env.get("/api/v1/me", role="operator")
    assert resp.get_json() == {"name": "test-operator", "role": "operator", "via": "token"}


# --- vCenter sessions (the plugin) -----------------------------------------------------------------------


def test_vcenter_session_is_validated_by_clone_ticket_and_cached(api_env: ApiEnv) -> None:
    token = lab_session_token(api_env.lab)
    app = create_app(api_env.service)  # a fresh app: an empty session cache
    authenticator = app.extensions["basil"].authenticator
    headers = {"X-Basil-VC-Session": token, "X-Basil-VC-Server": api_env.lab.server}
    client = app.test_client()
    me = client.get("/api/v1/me", headers=headers)
    assert me.status_code == 200, me.get_data(as_text=True)
    # The lab grants every privilege; the role is capped by auth.vcenter_session_role (operator).
    assert me.get_json() == {"name": api_env.lab.user, "role": "operator", "via": "vcenter"}
    assert client.get("/api/v1/pods", headers=headers).status_code == 200
    assert authenticator.session_validations == 1  # the second request used the cache
    # The cache is keyed by a digest: the token itself is kept nowhere.
    assert all(token not in key for key in authenticator._sessions._items)


@pytest.mark.parametrize("server", ["lab", "127.0.0.1"], ids=["by-name", "by-host"])
def test_vcenter_is_found_by_name_or_host(api_env: ApiEnv, server: str) -> None:
    token = lab_session_token(api_env.lab)
    resp = (
        create_app(api_env.service)
        .test_client()
        .get("/api/v1/me", headers={"X-Basil-VC-Session": token, "X-Basil-VC-Server": server})
    )
    assert resp.status_code == 200, resp.get_data(as_text=True)


def test_bad_vcenter_session_token_is_401(api_env: ApiEnv) -> None:
    app = create_app(api_env.service)
    resp = app.test_client().get(
        "/api/v1/pods", headers={"X-Basil-VC-Session": "not-a-session", "X-Basil-VC-Server": "lab"}
    )
    assert resp.status_code == 401
    assert "session" in str(_error(resp)["message"])
    again = app.test_client().get(
        "/api/v1/pods", headers={"X-Basil-VC-Session": "not-a-session", "X-Basil-VC-Server": "lab"}
    )
    assert again.status_code == 401
    # The refusal is remembered for a while: vCenter was asked once.
    assert app.extensions["basil"].authenticator.session_validations == 1
    metrics = app.test_client().get("/metrics", headers=api_env.headers("viewer")).get_data(as_text=True)
    assert 'basil_vcenter_session_validations_total{outcome="refused"} 1.0' in metrics


def test_unknown_vcenter_is_401_without_asking_any_vcenter(api_env: ApiEnv) -> None:
    app = create_app(api_env.service)
    resp = app.test_client().get(
        "/api/v1/pods",
        headers={"X-Basil-VC-Session": "whatever", "X-Basil-VC-Server": "vc.elsewhere.example"},
    )
    assert resp.status_code == 401
    assert "not a vCenter this service is configured for" in str(_error(resp)["message"])
    assert app.extensions["basil"].authenticator.session_validations == 0


def test_configured_mapping_gives_the_role(api_env: ApiEnv) -> None:
    config = AuthConfig(vcenter_roles={api_env.lab.user.upper(): "viewer"})
    authenticator = Authenticator(config, api_env.config.vcenters, api_env.service.store)
    client = create_app(api_env.service, authenticator=authenticator).test_client()
    headers = {"X-Basil-VC-Session": lab_session_token(api_env.lab), "X-Basil-VC-Server": "lab"}
    assert client.get("/api/v1/me", headers=headers).get_json()["role"] == "viewer"
    resp = client.post("/api/v1/pods/basil/recommendations", headers=headers)
    assert resp.status_code == 403


def test_admin_through_vcenter_needs_the_cap_raised(api_env: ApiEnv) -> None:
    authenticator = Authenticator(
        AuthConfig(vcenter_session_role="admin"), api_env.config.vcenters, api_env.service.store
    )
    client = create_app(api_env.service, authenticator=authenticator).test_client()
    headers = {"X-Basil-VC-Session": lab_session_token(api_env.lab), "X-Basil-VC-Server": "lab"}
    # The lab's user holds Global.Settings (every privilege), so with the cap at admin it is admin.
    assert client.get("/api/v1/me", headers=headers).get_json()["role"] == "admin"


def test_turned_off_credentials_are_refused(api_env: ApiEnv) -> None:
    authenticator = Authenticator(
        AuthConfig(api_tokens=False, vcenter_sessions=True), api_env.config.vcenters, api_env.service.store
    )
    client = create_app(api_env.service, authenticator=authenticator).test_client()
    resp = client.get("/api/v1/pods", headers=api_env.headers("admin"))
    assert resp.status_code == 401
    assert "auth.api_tokens" in str(_error(resp)["message"])


def test_anonymous_read_allows_gets_only(api_env: ApiEnv) -> None:
    authenticator = Authenticator(
        AuthConfig(anonymous_read=True), api_env.config.vcenters, api_env.service.store
    )
    client = create_app(api_env.service, authenticator=authenticator).test_client()
    assert client.get("/api/v1/pods").status_code == 200
    assert client.post("/api/v1/pods/basil/recommendations").status_code == 401


def test_forged_vcenter_sessions_are_rate_limited_per_source_address(api_env: ApiEnv) -> None:
    app = create_app(api_env.service)
    authenticator = app.extensions["basil"].authenticator

    def forged(i: int, source: str) -> Any:
        return app.test_client().get(
            "/api/v1/pods",
            headers={"X-Basil-VC-Session": f"forged-{i}", "X-Basil-VC-Server": "lab"},
            environ_overrides={"REMOTE_ADDR": source},
        )

    assert [forged(i, "192.0.2.7").status_code for i in range(REFUSALS_BURST)] == [401] * REFUSALS_BURST
    assert authenticator.session_validations == REFUSALS_BURST
    # The budget of that address is spent: the next forged session costs vCenter nothing.
    limited = forged(REFUSALS_BURST, "192.0.2.7")
    assert limited.status_code == 429
    assert _error(limited)["error"] == "rate_limited"
    assert 1 <= int(limited.headers["Retry-After"]) <= REFUSAL_REFILL_S
    assert authenticator.session_validations == REFUSALS_BURST
    # Another address is checked as before, and a real session from it works.
    assert forged(99, "192.0.2.8").status_code == 401
    assert authenticator.session_validations == REFUSALS_BURST + 1
    real = app.test_client().get(
        "/api/v1/pods",
        headers={"X-Basil-VC-Session": lab_session_token(api_env.lab), "X-Basil-VC-Server": "lab"},
        environ_overrides={"REMOTE_ADDR": "192.0.2.8"},
    )
    assert real.status_code == 200, real.get_data(as_text=True)
