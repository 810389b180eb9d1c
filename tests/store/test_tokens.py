"""API tokens: shown once, stored hashed, verified in constant time, revocable."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import select

from basil.errors import AuthenticationError, ConflictError, NotFoundError, ValidationError
from basil.store import Store
from basil.store.models import ApiTokenRow
from basil.store.tokens import create_token, list_tokens, revoke_token, verify_token


def test_create_verify_revoke(store: Store) -> None:
    with store.session() as session:
        token, info = create_token(session, "ansible", "operator", created_by="alice")
    assert token.startswith(f"basil_{info.lookup_id}_")
    with store.read_session() as session:
        row = session.execute(select(ApiTokenRow)).scalar_one()
        stored = b"".join([row.salt, row.digest, row.lookup_id.encode(), row.name.encode()])
    secret = token.rsplit("_", 1)[-1] if token.count("_") == 2 else token[len("basil_") + 13 :]
    assert secret.encode() not in stored
    assert token.encode() not in stored
    with store.session() as session:
        verified = verify_token(session, token)
    assert (verified.name, verified.role) == ("ansible", "operator")
    assert verified.last_used_at is not None
    with store.session() as session:
        revoke_token(session, "ansible")
    with pytest.raises(AuthenticationError, match="invalid, expired or revoked"), store.session() as session:
        verify_token(session, token)
    with store.read_session() as session:
        (listed,) = list_tokens(session)
    assert not listed.active


@pytest.mark.parametrize(
    "mangle",
    [
        lambda t: t[:-1] + ("A" if t[-1] != "A" else "B"),  # wrong secret
        lambda t: t.replace(t[6:18], "0" * 12),  # unknown lookup id
        lambda t: "not a token",
        lambda t: "",
    ],
    ids=["wrong-secret", "unknown-id", "garbage", "empty"],
)
def test_bad_tokens_get_one_message(store: Store, mangle: object) -> None:
    with store.session() as session:
        token, _ = create_token(session, "t", "viewer", created_by="alice")
    with pytest.raises(AuthenticationError, match="invalid, expired or revoked"), store.session() as session:
        verify_token(session, mangle(token))  # type: ignore[operator]


def test_expiry(store: Store) -> None:
    now = datetime(2024, 1, 1, tzinfo=UTC)
    with store.session() as session:
        token, _ = create_token(
            session, "short", "admin", created_by="a", expires_at=now + timedelta(days=1), now=now
        )
        verify_token(session, token, now=now + timedelta(hours=23))
    with pytest.raises(AuthenticationError), store.session() as session:
        verify_token(session, token, now=now + timedelta(days=1))


def test_bad_input_and_duplicates(store: Store) -> None:
    with pytest.raises(ValidationError) as caught, store.session() as session:
        create_token(session, "bad name!", "root", created_by="a")
    assert {p.field for p in caught.value.problems} == {"name", "role"}
    with store.session() as session:
        create_token(session, "dup", "viewer", created_by="a")
    with pytest.raises(ConflictError, match="exists already"), store.session() as session:
        create_token(session, "dup", "viewer", created_by="a")
    with pytest.raises(NotFoundError), store.session() as session:
        revoke_token(session, "nobody")
