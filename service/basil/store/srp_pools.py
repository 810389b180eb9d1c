"""Storage Resource Pool trees: one JSON document per scope (a pod), versioned with optimistic concurrency.

A writer passes the version it read; if someone else saved in between, :class:`ConflictError` tells
it to reload instead of silently overwriting. Every version is kept in ``srp_pool_versions``.
The document is validated by ``basil.srp`` before it gets here; the store keeps it as given.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from basil.errors import ConflictError, NotFoundError
from basil.store.models import SrpPoolTreeRow, SrpPoolVersionRow


@dataclass(frozen=True)
class PoolTree:
    name: str
    document: dict[str, Any]
    version: int
    updated_at: datetime
    updated_by: str


def get_pools(session: Session, name: str) -> PoolTree:
    row = session.get(SrpPoolTreeRow, name)
    if row is None:
        raise NotFoundError(f"no pool tree named {name!r}")
    return PoolTree(row.name, row.document, row.version, row.updated_at, row.updated_by)


def list_pools(session: Session) -> list[PoolTree]:
    rows = session.execute(select(SrpPoolTreeRow).order_by(SrpPoolTreeRow.name)).scalars()
    return [PoolTree(r.name, r.document, r.version, r.updated_at, r.updated_by) for r in rows]


def put_pools(
    session: Session,
    name: str,
    document: dict[str, Any],
    *,
    expected_version: int,
    by: str,
    now: datetime | None = None,
) -> PoolTree:
    """Create (``expected_version=0``) or replace (the version you read) the pool tree *name*."""
    at = now or datetime.now(UTC)
    row = session.execute(
        select(SrpPoolTreeRow).where(SrpPoolTreeRow.name == name).with_for_update()
    ).scalar_one_or_none()
    current = 0 if row is None else row.version
    if current != expected_version:
        if row is None:
            raise ConflictError(f"pool tree {name!r} does not exist (create it with version 0)")
        raise ConflictError(
            f"pool tree {name!r} is at version {current}, not {expected_version}: "
            "someone changed it; reload it"
        )
    last = session.execute(
        select(SrpPoolVersionRow.version)
        .where(SrpPoolVersionRow.name == name)
        .order_by(SrpPoolVersionRow.version.desc())
        .limit(1)
    ).scalar()
    version = max(current, last or 0) + 1
    if row is None:
        row = SrpPoolTreeRow(name=name, document=document, version=version, updated_at=at, updated_by=by)
        session.add(row)
    else:
        row.document, row.version, row.updated_at, row.updated_by = document, version, at, by
    session.add(
        SrpPoolVersionRow(
            name=name, version=version, document=document, updated_at=at, updated_by=by, deleted=False
        )
    )
    session.flush()
    return PoolTree(name, document, version, at, by)


def delete_pools(
    session: Session, name: str, *, expected_version: int, by: str, now: datetime | None = None
) -> None:
    """Delete pool tree *name* if still at *expected_version*; the history keeps a deleted marker."""
    row = session.execute(
        select(SrpPoolTreeRow).where(SrpPoolTreeRow.name == name).with_for_update()
    ).scalar_one_or_none()
    if row is None:
        raise NotFoundError(f"no pool tree named {name!r}")
    if row.version != expected_version:
        raise ConflictError(
            f"pool tree {name!r} is at version {row.version}, not {expected_version}; reload it"
        )
    session.add(
        SrpPoolVersionRow(
            name=name, version=row.version + 1, document={}, updated_at=now or datetime.now(UTC),
            updated_by=by, deleted=True,
        )
    )  # fmt: skip
    session.delete(row)
    session.flush()


def pool_history(session: Session, name: str) -> list[PoolTree]:
    """Every version of *name*, newest first (a deletion appears with an empty document)."""
    rows = session.execute(
        select(SrpPoolVersionRow)
        .where(SrpPoolVersionRow.name == name)
        .order_by(SrpPoolVersionRow.version.desc())
    ).scalars()
    return [PoolTree(r.name, r.document, r.version, r.updated_at, r.updated_by) for r in rows]
