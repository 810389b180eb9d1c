"""Who asks for a change, and the audit record every change leaves (who, what, when, from where, outcome)."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from basil.errors import BasilError, ConflictError, NotFoundError, ValidationError
from basil.store import Store
from basil.store.audit import AuditEntry, record

log = logging.getLogger(__name__)

VIAS = ("token", "vcenter", "cli", "system")


@dataclass(frozen=True)
class Actor:
    """The caller of an action: a token name or vCenter user, its role, its address and how it came in.

    ``via`` is one of ``token`` (API token), ``vcenter`` (plugin session), ``cli`` or ``system`` (a job).
    """

    name: str
    role: str
    source_ip: str = ""
    via: str = "token"


#: The service itself, when a scheduled job acts (the rebalance window, the SRP loop).
SYSTEM = Actor("basil", "admin", "", "system")


@dataclass
class AuditNote:
    """What an audited block adds to its record: a message and details (never a secret)."""

    message: str = ""
    details: dict[str, Any] = field(default_factory=dict)


def _outcome(err: BaseException) -> str:
    if isinstance(err, ValidationError):
        return "invalid"
    if isinstance(err, NotFoundError | ConflictError | BasilError):
        return "failed"
    return "failed"


@contextmanager
def audited(store: Store, actor: Actor, action: str, target: str) -> Iterator[AuditNote]:
    """Record *action* on *target* by *actor* when the block ends: ``ok`` or how it failed (re-raised)."""
    note = AuditNote()
    try:
        yield note
    except BaseException as err:
        message = err.message if isinstance(err, BasilError) else f"{type(err).__name__}: {err}"
        _write(store, actor, action, target, outcome=_outcome(err), message=message, details=note.details)
        raise
    _write(store, actor, action, target, outcome="ok", message=note.message, details=note.details)


def _write(
    store: Store,
    actor: Actor,
    action: str,
    target: str,
    *,
    outcome: str,
    message: str,
    details: dict[str, Any],
) -> None:
    entry = AuditEntry(
        actor=actor.name,
        actor_kind=actor.via if actor.via in VIAS else "token",
        action=action,
        target=target,
        source=actor.source_ip or actor.via,
        outcome=outcome,
        message=message[:2000],
        details=details,
    )
    try:
        with store.session() as session:
            record(session, entry)
    except BasilError as err:  # the store is down: the action's own outcome still stands
        log.error("audit of %s on %s by %s not recorded: %s", action, target, actor.name, err.message)
