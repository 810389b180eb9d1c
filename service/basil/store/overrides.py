"""Parts of the configuration changed at run time, kept in the store so that a restart keeps them.

The configuration file stays the administrator's; what the API changes (today the rebalance window,
under the key ``schedules.rebalance``) is kept here as the fields given and applied over the file's
values at every start, until it is removed (``DELETE /api/v1/schedules/rebalance``).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy.orm import Session

from basil.store.models import SettingOverrideRow


@dataclass(frozen=True)
class Override:
    key: str
    value: dict[str, Any]
    updated_at: datetime
    updated_by: str


def get_override(session: Session, key: str) -> Override | None:
    row = session.get(SettingOverrideRow, key)
    if row is None:
        return None
    return Override(row.key, dict(row.value), row.updated_at, row.updated_by)


def put_override(
    session: Session, key: str, value: dict[str, Any], *, by: str, now: datetime | None = None
) -> Override:
    """Keep *value* under *key* (replacing what was kept)."""
    at = now or datetime.now(UTC)
    session.merge(SettingOverrideRow(key=key, value=dict(value), updated_at=at, updated_by=by))
    session.flush()
    return Override(key, dict(value), at, by)


def delete_override(session: Session, key: str) -> bool:
    """Forget what was kept under *key*; False when nothing was."""
    row = session.get(SettingOverrideRow, key)
    if row is None:
        return False
    session.delete(row)
    session.flush()
    return True
