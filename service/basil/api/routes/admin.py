"""The audit log and API tokens: reading who did what, and issuing or revoking tokens (admin)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from flask import Blueprint

from basil.api import schemas as s
from basil.api.answers import AUDIT, Cached
from basil.api.context import current_actor, current_service, current_state
from basil.api.operations import json_body, operation, query_args
from basil.app.actor import audited
from basil.config.durations import parse_duration
from basil.errors import Problem, ValidationError
from basil.store import audit
from basil.store.tokens import TokenInfo, create_token, list_tokens, revoke_token

bp = Blueprint("admin", __name__)

_AUDIT_QUERY: dict[str, dict[str, Any]] = {
    "limit": {"type": "integer", "minimum": 1, "maximum": 1000, "default": 100},
    "before": {
        "type": "string",
        "format": "date-time",
        "pattern": "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\\.[0-9]+)?"
        "(Z|[+-][0-9]{2}:[0-9]{2})$",
        "description": "ISO 8601 time: entries strictly older (paging)",
    },
    "actor": {"type": "string", "minLength": 1, "maxLength": 200},
    "action": {
        "type": "string",
        "minLength": 1,
        "maxLength": 100,
        "description": "exact, or a prefix ending in '.'",
    },
}


def _time(text: str, field: str) -> datetime:
    if "T" in text:
        text = text.replace(" ", "+")  # an unencoded '+' of the UTC offset arrives as a space
    try:
        value = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ValidationError([Problem(field, f"{text!r} is not an ISO 8601 time")], "query") from None
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def _iso(value: datetime | None) -> str | None:
    if value is None:
        return None
    return (value if value.tzinfo else value.replace(tzinfo=UTC)).isoformat()


@operation(
    bp, "GET", "/audit", summary="Audit log", role="viewer", response=s.array(s.ref("AuditEntry")),
    query=_AUDIT_QUERY, errors=(400,), cache=Cached(AUDIT),
)  # fmt: skip
def audit_log() -> Any:
    """Who did what, when, from where and how it ended; newest first (page with ``before``)."""
    q = query_args()
    svc = current_service()
    # Times are shown on vCenter's clock (basil.app.clock); ``before`` is one of them, given back.
    until = svc.local_time(_time(q["before"], "query.before")) if "before" in q else None
    with svc.store.read_session() as session:
        entries = audit.query(
            session, actor=q.get("actor"), action=q.get("action"), until=until, limit=q["limit"]
        )
    return [
        {
            "id": e.id, "at": _iso(svc.shown(e.at)), "who": e.actor, "via": e.actor_kind, "action": e.action,
            "target": e.target, "from": e.source, "outcome": e.outcome, "message": e.message,
            "detail": e.details,
        }
        for e in entries
    ]  # fmt: skip


def _token_json(info: TokenInfo) -> dict[str, Any]:
    return {
        "name": info.name, "role": info.role, "id": info.lookup_id, "active": info.active,
        "created_at": _iso(info.created_at), "created_by": info.created_by,
        "expires_at": _iso(info.expires_at), "last_used_at": _iso(info.last_used_at),
        "revoked_at": _iso(info.revoked_at),
    }  # fmt: skip


@operation(bp, "GET", "/tokens", summary="API tokens", role="admin", response=s.array(s.ref("TokenInfo")))
def tokens() -> Any:
    """Every token's name, role and dates; the tokens themselves are not stored and cannot be shown."""
    with current_service().store.read_session() as session:
        return [_token_json(t) for t in list_tokens(session)]


@operation(
    bp, "POST", "/tokens", summary="Create an API token", role="admin", body=s.CREATE_TOKEN,
    response=s.ref("NewToken"), status=201, errors=(400, 409), action="token.create", target="tokens",
)  # fmt: skip
def create() -> Any:
    """The answer holds the token, once: Basil keeps only a salted hash of it."""
    body = json_body()
    expires_at = None
    if "expires_in" in body:
        try:
            expires_at = datetime.now(UTC) + parse_duration(body["expires_in"])
        except (ValueError, OverflowError) as err:
            message = "is too far in the future" if isinstance(err, OverflowError) else str(err)
            raise ValidationError([Problem("expires_in", message)], "request body") from None
    actor = current_actor()
    store = current_service().store
    with audited(store, actor, "token.create", f"token {body['name']}") as note:
        note.details = {"role": body["role"], "expires_in": body.get("expires_in")}
        with store.session() as session:
            created_by = f"{actor.via}:{actor.name}"
            token, info = create_token(
                session, body["name"], body["role"], created_by=created_by, expires_at=expires_at
            )
    return {**_token_json(info), "token": token}


@operation(
    bp, "DELETE", "/tokens/{name}", summary="Revoke an API token", role="admin", response=s.ref("TokenInfo"),
    errors=(404,), action="token.revoke", target="token {name}",
)  # fmt: skip
def revoke(name: str) -> Any:
    """Revoked at once, here and in every cache of this service."""
    store = current_service().store
    with audited(store, current_actor(), "token.revoke", f"token {name}"), store.session() as session:
        info = revoke_token(session, name)
    current_state().authenticator.forget_token(info.lookup_id)
    return _token_json(info)
