"""Durations as written in basil.yaml."""

from __future__ import annotations

from datetime import timedelta

import pytest

from basil.config.durations import format_duration, parse_duration


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("90s", timedelta(seconds=90)),
        ("5m", timedelta(minutes=5)),
        ("3h", timedelta(hours=3)),
        ("2h30m", timedelta(hours=2, minutes=30)),
        ("7d", timedelta(days=7)),
        ("1w", timedelta(days=7)),
        ("1.5h", timedelta(minutes=90)),
        (" 3H ", timedelta(hours=3)),
        (20, timedelta(seconds=20)),
        ("20", timedelta(seconds=20)),
    ],
    ids=str,
)
def test_parse_duration(text: object, expected: timedelta) -> None:
    assert parse_duration(text) == expected


@pytest.mark.parametrize(
    "text", ["3hr", "h", "", "-5m", -5, "5m3h2m", "2m5m", "tomorrow", True, None, [1]], ids=repr
)
def test_parse_duration_refuses(text: object) -> None:
    with pytest.raises(ValueError, match="duration"):
        parse_duration(text)


@pytest.mark.parametrize("text", ["1m30s", "5m", "3h", "2h30m", "7d", "1d2h3m4s", "0s"])
def test_format_round_trips(text: str) -> None:
    assert format_duration(parse_duration(text)) == text
