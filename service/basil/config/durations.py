"""Durations as an administrator writes them in ``basil.yaml``: ``90s``, ``5m``, ``3h``, ``2h30m``, ``7d``.

A bare number is seconds. Parsing is strict (no unit, a negative or an unknown unit is an error) so
that a typo such as ``3hr`` cannot silently become something else.
"""

from __future__ import annotations

import re
from datetime import timedelta

_UNITS = {"w": 7 * 86400, "d": 86400, "h": 3600, "m": 60, "s": 1}
_PART = re.compile(r"(\d+(?:\.\d+)?)([wdhms])")


def parse_duration(value: object) -> timedelta:
    """A :class:`timedelta` from ``"3h"``, ``"2h30m"``, ``"7d"`` or a number of seconds.

    Raises ValueError with a message meant for the person who wrote the value.
    """
    if isinstance(value, timedelta):
        return value
    if isinstance(value, bool):
        raise ValueError(f"expected a duration such as 90s, 5m, 3h or 7d, not {value!r}")
    if isinstance(value, int | float):
        if value < 0:
            raise ValueError(f"a duration cannot be negative, got {value!r}")
        return _seconds(value, value)
    if not isinstance(value, str):
        raise ValueError(f"expected a duration such as 90s, 5m, 3h or 7d, not {value!r}")
    text = value.strip().lower().replace(" ", "")
    if not text:
        raise ValueError("expected a duration such as 90s, 5m, 3h or 7d, got an empty string")
    if re.fullmatch(r"\d+(\.\d+)?", text):
        return _seconds(float(text), value)
    pos = 0
    seconds = 0.0
    seen: set[str] = set()
    for match in _PART.finditer(text):
        if match.start() != pos or match.group(2) in seen:
            break
        seen.add(match.group(2))
        seconds += float(match.group(1)) * _UNITS[match.group(2)]
        pos = match.end()
    if pos != len(text) or not seen:
        raise ValueError(f"expected a duration such as 90s, 5m, 3h, 2h30m or 7d, not {value!r}")
    return _seconds(seconds, value)


def _seconds(seconds: float, value: object) -> timedelta:
    try:
        return timedelta(seconds=seconds)
    except OverflowError:
        raise ValueError(f"{value!r} is too long a duration") from None


def format_duration(value: timedelta) -> str:
    """The shortest exact spelling of *value* in the units :func:`parse_duration` reads (``"2h30m"``)."""
    total = value.total_seconds()
    if total == 0:
        return "0s"
    if total != int(total):
        return f"{total:g}s"
    rest = int(total)
    parts: list[str] = []
    for unit in ("d", "h", "m", "s"):
        count, rest = divmod(rest, _UNITS[unit])
        if count:
            parts.append(f"{count}{unit}")
    return "".join(parts)
