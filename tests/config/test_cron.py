"""Cron expressions and the rebalance window built on them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from basil.config import RebalanceWindowConfig
from basil.config.cron import CronExpression

PARIS = ZoneInfo("Europe/Paris")


def test_saturday_two_am() -> None:
    cron = CronExpression.parse("0 2 * * sat")
    # Friday 2024-06-07 12:00 UTC -> Saturday 2024-06-08 02:00 Paris (00:00 UTC in summer).
    fire = cron.next_after(datetime(2024, 6, 7, 12, tzinfo=UTC), PARIS)
    assert fire is not None
    assert fire.astimezone(UTC) == datetime(2024, 6, 8, 0, 0, tzinfo=UTC)
    assert fire.astimezone(PARIS).strftime("%a %H:%M") == "Sat 02:00"


@pytest.mark.parametrize(
    ("text", "minutes", "hours", "weekdays"),
    [
        ("*/15 * * * *", {0, 15, 30, 45}, set(range(24)), set(range(7))),
        ("5/20 1-3 * * mon-fri", {5, 25, 45}, {1, 2, 3}, {1, 2, 3, 4, 5}),
        ("0 0 * * 7", {0}, {0}, {0}),
        ("0 22 * * sat,sun", {0}, {22}, {0, 6}),
        ("@weekly", {0}, {0}, {0}),
    ],
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_fields(text: str, minutes: set[int], hours: set[int], weekdays: set[int]) -> None:
    cron = CronExpression.parse(text)
    assert set(cron.minutes) == minutes
    assert set(cron.hours) == hours
    assert set(cron.weekdays) == weekdays


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("0 2 * *", "5 fields"),
        ("61 2 * * *", "minute: 61 is outside 0-59"),
        ("0 24 * * *", "hour: 24"),
        ("0 2 * * funday", "day of week"),
        ("0 2 5-1 * *", "runs backwards"),
        ("0 2 1 * mon", "not both"),
        ("*/0 * * * *", "step"),
        ("", "cron expression"),
    ],
)
def test_bad_expressions(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        CronExpression.parse(text)


def test_previous_fire_and_dst_gap() -> None:
    # 02:30 does not exist in Paris on 2024-03-31 (clocks jump 02:00 -> 03:00): it fires at 03:30 instead.
    cron = CronExpression.parse("30 2 * * *")
    fire = cron.next_after(datetime(2024, 3, 30, 12, tzinfo=UTC), PARIS)
    assert fire is not None
    assert fire.astimezone(UTC) == datetime(2024, 3, 31, 1, 30, tzinfo=UTC)
    assert fire.astimezone(PARIS).strftime("%m-%d %H:%M") == "03-31 03:30"
    before = cron.previous_at_or_before(datetime(2024, 4, 1, 0, 40, tzinfo=UTC), PARIS)
    assert before is not None
    assert before.astimezone(PARIS).replace(tzinfo=None) == datetime(2024, 4, 1, 2, 30)
    assert cron.previous_at_or_before(before, PARIS) == before
    assert cron.next_after(before, PARIS) == before + timedelta(days=1)


def test_impossible_date_has_no_fire() -> None:
    assert CronExpression.parse("0 0 30 2 *").next_after(datetime(2024, 1, 1, tzinfo=UTC), UTC) is None


def test_apscheduler_fields_name_the_weekdays() -> None:
    fields = CronExpression.parse("0 2 * * 6").apscheduler_fields()
    assert fields["day_of_week"] == "sat"
    assert fields["hour"] == "2"


def test_window_open_and_closed() -> None:
    window = RebalanceWindowConfig(cron="0 2 * * sat", timezone="Europe/Paris", duration=timedelta(hours=3))
    saturday_3am = datetime(2024, 6, 8, 3, 0, tzinfo=PARIS)
    opened = window.open_window(saturday_3am)
    assert opened is not None
    start, end = opened
    assert (start.hour, end.hour) == (2, 5)
    assert window.open_window(datetime(2024, 6, 8, 5, 0, tzinfo=PARIS)) is None
    assert window.open_window(datetime(2024, 6, 8, 1, 59, tzinfo=PARIS)) is None
    nxt = window.next_window(datetime(2024, 6, 8, 5, 0, tzinfo=PARIS))
    assert nxt is not None
    assert nxt[0].date().isoformat() == "2024-06-15"
