"""Changing the nightly rebalance window at run time, kept in the store across restarts.

``PUT /api/v1/schedules/rebalance`` gives some fields of the window; they are validated like the
configuration's, applied at once, and kept in the store (:mod:`basil.store.overrides`, key
``schedules.rebalance``) merged with the fields changed before. At every start the kept fields are
applied over the configuration file's window: the API's change wins until it is removed
(``DELETE /api/v1/schedules/rebalance``), which brings the file's window back.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from basil.config.durations import parse_duration
from basil.config.schema import RebalanceWindowConfig
from basil.errors import Problem, raise_if_problems

OVERRIDE_KEY = "schedules.rebalance"
FIELDS = tuple(f.name for f in dataclasses.fields(RebalanceWindowConfig))


def _is_number(value: Any) -> bool:
    return not isinstance(value, bool) and isinstance(value, int | float)


# Per field: whether the JSON value has the right type, and what to say when it has not.
_TYPES: dict[str, tuple[Any, str]] = {
    "enabled": (lambda v: isinstance(v, bool), "must be true or false"),
    "cron": (lambda v: isinstance(v, str), "must be a string"),
    "timezone": (lambda v: isinstance(v, str), "must be a string"),
    "duration": (lambda v: isinstance(v, str), "must be a duration like 3h or 90m"),
    "max_moves": (_is_number, "must be a number"),
    "max_gb": (_is_number, "must be a number"),
}


def _field_value(key: str, value: Any) -> tuple[Any, list[Problem]]:
    """One field of a change, in the configuration's type, or the problem with it."""
    if key not in FIELDS:
        return None, [Problem(key, f"unknown field (expected {', '.join(sorted(FIELDS))})")]
    check, message = _TYPES.get(key, (lambda _v: True, ""))
    if not check(value):
        return None, [Problem(key, message)]
    if key == "duration":
        try:
            return parse_duration(value), []
        except ValueError as err:
            return None, [Problem(key, str(err))]
    return value, []


def changed_window(current: RebalanceWindowConfig, change: Mapping[str, Any]) -> RebalanceWindowConfig:
    """*current* with the fields of *change* (as the API takes them: ``duration`` as text); raises one
    :class:`~basil.errors.ValidationError` with every problem, of each field and of the result."""
    problems: list[Problem] = []
    values: dict[str, Any] = {}
    for key, raw in change.items():
        value, found = _field_value(key, raw)
        problems += found
        if not found:
            values[key] = value
    raise_if_problems(problems, "rebalance window")
    updated = dataclasses.replace(current, **values)
    # The window's own checks name fields under a path; here the fields are the body's own.
    raise_if_problems(
        [Problem(p.field.lstrip("."), p.message) for p in updated.problems("")], "rebalance window"
    )
    return updated
