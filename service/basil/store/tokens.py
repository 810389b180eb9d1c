"""API tokens: generated once, shown once, stored only as a salted PBKDF2-HMAC-SHA256 digest.

A token reads ``basil_<lookup>_<secret>``: ``lookup`` (12 hex characters, stored in clear) finds the
row without scanning, ``secret`` is 32 random bytes (256 bits, URL-safe base64) and is never stored.

Why this scheme: the secret's 256 bits of entropy are what protect a token; no one can enumerate
2^256 candidates whatever the hash costs, so a deliberately slow password hash (bcrypt, Argon2 at
hundreds of milliseconds) would buy nothing against a stolen database and would cost every API
request that much CPU. A plain SHA-256 would already be safe for such secrets; PBKDF2 with a per-token
16-byte salt and 20,000 iterations (≈4-5 ms here; the count is stored per row so it can be raised)
is kept as defence in depth at a price the API can pay, and the comparison is constant-time
(``hmac.compare_digest``). An unknown lookup id still pays one derivation, so timing does not tell
a wrong id from a wrong secret.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from sqlalchemy import select
from sqlalchemy.orm import Session

from basil.errors import AuthenticationError, ConflictError, NotFoundError, Problem, raise_if_problems
from basil.store.models import ROLES, ApiTokenRow

PREFIX = "basil_"
ITERATIONS = 20_000
_TOKEN = re.compile(r"basil_([0-9a-f]{12})_([A-Za-z0-9_-]{43})")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.@-]{0,63}")
_DUMMY_SALT = b"\0" * 16
# last_used_at is written at most this often, so that verifying a token is not a write per request.
_TOUCH_EVERY = timedelta(minutes=1)


@dataclass(frozen=True)
class TokenInfo:
    """What is known about a token (never the token itself)."""

    name: str
    role: str
    lookup_id: str
    created_at: datetime
    created_by: str
    expires_at: datetime | None
    last_used_at: datetime | None
    revoked_at: datetime | None

    @property
    def active(self) -> bool:
        return self.revoked_at is None and (self.expires_at is None or self.expires_at > datetime.now(UTC))


def _digest(secret: str, salt: bytes, iterations: int) -> bytes:
    return hashlib.pbkdf2_hmac("sha256", secret.encode("ascii"), salt, iterations)


def _info(row: ApiTokenRow) -> TokenInfo:
    return TokenInfo(
        row.name, row.role, row.lookup_id, row.created_at, row.created_by, row.expires_at, row.last_used_at,
        row.revoked_at,
    )  # fmt: skip


def create_token(
    session: Session,
    name: str,
    role: str,
    *,
    created_by: str,
    expires_at: datetime | None = None,
    now: datetime | None = None,
) -> tuple[str, TokenInfo]:
    """Create a token; returns (the token — show it once, it cannot be recovered —, its info)."""
    at = now or datetime.now(UTC)
    problems = []
    if not _NAME.fullmatch(name):
        problems.append(
            Problem("name", "must be 1-64 letters, digits, '.', '_', '@' or '-', starting alphanumeric")
        )
    if role not in ROLES:
        problems.append(Problem("role", f"must be one of {', '.join(ROLES)}"))
    if expires_at is not None and expires_at <= at:
        problems.append(Problem("expires_at", "must be in the future"))
    raise_if_problems(problems, "token")
    if session.execute(select(ApiTokenRow.id).where(ApiTokenRow.name == name)).first() is not None:
        raise ConflictError(f"a token named {name!r} exists already (revoked tokens keep their names)")
    lookup = secrets.token_hex(6)
    secret = secrets.token_urlsafe(32)
    salt = secrets.token_bytes(16)
    row = ApiTokenRow(
        name=name, role=role, lookup_id=lookup, salt=salt, digest=_digest(secret, salt, ITERATIONS),
        iterations=ITERATIONS, created_at=at, created_by=created_by, expires_at=expires_at,
    )  # fmt: skip
    session.add(row)
    session.flush()
    return f"{PREFIX}{lookup}_{secret}", _info(row)


def verify_token(
    session: Session, token: str, *, now: datetime | None = None, touch: bool = True
) -> TokenInfo:
    """The info of a valid token; AuthenticationError (one message for every reason) otherwise."""
    at = now or datetime.now(UTC)
    match = _TOKEN.fullmatch(token.strip())
    row = None
    if match:
        row = session.execute(
            select(ApiTokenRow).where(ApiTokenRow.lookup_id == match.group(1))
        ).scalar_one_or_none()
    secret = match.group(2) if match else "x" * 43
    if row is None:
        _digest(secret, _DUMMY_SALT, ITERATIONS)  # same work as a real check
        raise AuthenticationError("invalid, expired or revoked API token")
    good = hmac.compare_digest(_digest(secret, row.salt, row.iterations), row.digest)
    if not good or row.revoked_at is not None or (row.expires_at is not None and row.expires_at <= at):
        raise AuthenticationError("invalid, expired or revoked API token")
    if touch and (row.last_used_at is None or at - row.last_used_at >= _TOUCH_EVERY):
        row.last_used_at = at
        session.flush()
    return _info(row)


def list_tokens(session: Session, *, include_revoked: bool = True) -> list[TokenInfo]:
    query = select(ApiTokenRow).order_by(ApiTokenRow.name)
    if not include_revoked:
        query = query.where(ApiTokenRow.revoked_at.is_(None))
    return [_info(r) for r in session.execute(query).scalars()]


def revoke_token(session: Session, name: str, *, now: datetime | None = None) -> TokenInfo:
    """Revoke the token *name* (idempotent: revoking a revoked token keeps its first revocation time)."""
    row = session.execute(select(ApiTokenRow).where(ApiTokenRow.name == name)).scalar_one_or_none()
    if row is None:
        raise NotFoundError(f"no token named {name!r}")
    if row.revoked_at is None:
        row.revoked_at = now or datetime.now(UTC)
        session.flush()
    return _info(row)


def token_status(session: Session, lookup_id: str) -> TokenInfo | None:
    """The current info of the token with *lookup_id* (no digest work): for re-checking a cached token."""
    row = session.execute(select(ApiTokenRow).where(ApiTokenRow.lookup_id == lookup_id)).scalar_one_or_none()
    return None if row is None else _info(row)
