"""The one exception hierarchy of Basil.

Every error a user can cause or meet carries a message meant for that user and the HTTP status the
REST API answers with, so the web layer maps all of them in one handler and the command line prints
the same words.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class Problem:
    """One thing wrong with an input: where (a dotted path such as ``disks[3].size_gb``) and what."""

    field: str
    message: str

    def __str__(self) -> str:
        return f"{self.field}: {self.message}" if self.field else self.message


class BasilError(Exception):
    """Base of every error Basil raises on purpose."""

    http_status = 500
    code = "internal"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def to_dict(self) -> dict[str, object]:
        return {"error": self.code, "message": self.message}


class ValidationError(BasilError):
    """Input that cannot be used; lists every problem found, not just the first."""

    http_status = 400
    code = "invalid"

    def __init__(self, problems: Iterable[Problem], what: str = "input") -> None:
        self.problems = tuple(problems)
        if not self.problems:
            raise ValueError("ValidationError needs at least one problem")
        lines = "\n".join(f"  - {p}" for p in self.problems)
        super().__init__(f"invalid {what}: {len(self.problems)} problem(s)\n{lines}")

    def to_dict(self) -> dict[str, object]:
        return {
            "error": self.code,
            "message": self.message,
            "problems": [{"field": p.field, "message": p.message} for p in self.problems],
        }


def raise_if_problems(problems: Iterable[Problem], what: str = "input") -> None:
    """Raise :class:`ValidationError` when *problems* is not empty."""
    found = list(problems)
    if found:
        raise ValidationError(found, what)


class NotFoundError(BasilError):
    http_status = 404
    code = "not_found"


class ConflictError(BasilError):
    """The request is well formed but clashes with the current state (for instance a plan's state)."""

    http_status = 409
    code = "conflict"


class AuthenticationError(BasilError):
    http_status = 401
    code = "unauthenticated"


class PermissionDeniedError(BasilError):
    http_status = 403
    code = "forbidden"


class VCenterError(BasilError):
    """vCenter refused or failed; carries the fault's type name and vCenter's own message."""

    http_status = 502
    code = "vcenter"

    def __init__(self, message: str, fault: str = "") -> None:
        super().__init__(message)
        self.fault = fault

    def to_dict(self) -> dict[str, object]:
        return {"error": self.code, "message": self.message, "fault": self.fault}
