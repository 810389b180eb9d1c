"""Five-field cron expressions for the rebalance window: parsing, matching, fire times around a moment.

The window math lives here, not in the scheduler, so that "is the window open now, and when does it
close?" can be answered (and tested) without APScheduler. Expressions that restrict both the day of
the month and the day of the week are refused: classic cron ORs the two, APScheduler ANDs them, and
a window that means different things to different readers is worse than an error.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta, tzinfo

_MONTHS = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
_DAYS = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"]
_MACROS = {
    "@hourly": "0 * * * *",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@weekly": "0 0 * * sun",
    "@monthly": "0 0 1 * *",
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
}
# How far to look for the next or previous fire time before deciding there is none (Feb 30 never comes).
_SEARCH_DAYS = 366 * 5


@dataclass(frozen=True)
class _Field:
    name: str
    low: int
    high: int
    names: tuple[str, ...] = ()


_FIELDS = (
    _Field("minute", 0, 59),
    _Field("hour", 0, 23),
    _Field("day of month", 1, 31),
    _Field("month", 1, 12, tuple(_MONTHS)),
    _Field("day of week", 0, 7, tuple(_DAYS)),
)


def _value(text: str, field: _Field) -> int:
    lowered = text.lower()
    if field.names and lowered in field.names:
        return field.names.index(lowered) + (1 if field.name == "month" else 0)
    if not lowered.isdigit():
        raise ValueError(f"{field.name}: {text!r} is not a number" + (" or a name" if field.names else ""))
    number = int(lowered)
    if not field.low <= number <= field.high:
        raise ValueError(f"{field.name}: {number} is outside {field.low}-{field.high}")
    return number


def _parse_field(text: str, field: _Field) -> frozenset[int]:
    values: set[int] = set()
    for part in text.split(","):
        if not part:
            raise ValueError(f"{field.name}: empty list item in {text!r}")
        base, _, step_text = part.partition("/")
        step = 1
        if step_text:
            if not step_text.isdigit() or int(step_text) == 0:
                raise ValueError(f"{field.name}: step {step_text!r} must be a positive whole number")
            step = int(step_text)
        if base == "*":
            low, high = field.low, field.high
        elif "-" in base:
            first, _, last = base.partition("-")
            low, high = _value(first, field), _value(last, field)
            if low > high:
                raise ValueError(f"{field.name}: range {base!r} runs backwards")
        else:
            low = _value(base, field)
            # "5/15" means from 5 to the end in steps of 15, as in Vixie cron.
            high = field.high if step_text else low
        values.update(range(low, high + 1, step))
    if field.name == "day of week" and 7 in values:
        values.discard(7)
        values.add(0)  # 7 is Sunday too
    return frozenset(values)


@dataclass(frozen=True)
class CronExpression:
    """A parsed five-field cron expression (minute hour day-of-month month day-of-week, Sunday = 0)."""

    text: str
    minutes: frozenset[int]
    hours: frozenset[int]
    days: frozenset[int]
    months: frozenset[int]
    weekdays: frozenset[int]
    days_restricted: bool
    weekdays_restricted: bool

    @classmethod
    def parse(cls, text: str) -> CronExpression:
        """Parse *text*; raises ValueError naming the bad field."""
        if not isinstance(text, str) or not text.strip():
            raise ValueError("a cron expression such as '0 2 * * sat' is needed")
        expanded = _MACROS.get(text.strip().lower(), text)
        parts = expanded.split()
        if len(parts) != 5:
            raise ValueError(
                "a cron expression has 5 fields (minute hour day-of-month month day-of-week), "
                f"got {len(parts)}"
            )
        sets = [_parse_field(part, field) for part, field in zip(parts, _FIELDS, strict=True)]
        days_restricted = parts[2] != "*"
        weekdays_restricted = parts[4] != "*"
        if days_restricted and weekdays_restricted:
            raise ValueError(
                "restrict the day of the month or the day of the week, not both: cron implementations "
                "disagree on what the combination means"
            )
        minutes, hours, days, months, weekdays = sets
        return cls(text.strip(), minutes, hours, days, months, weekdays, days_restricted, weekdays_restricted)

    def matches_day(self, day: date) -> bool:
        # isoweekday: Monday 1 .. Sunday 7; cron: Sunday 0 .. Saturday 6.
        return day.month in self.months and day.day in self.days and day.isoweekday() % 7 in self.weekdays

    def _fire_times_on(self, day: date, zone: tzinfo) -> list[datetime]:
        """The fire times on *day* (local) as aware datetimes, in order.

        A wall time skipped by a DST change (02:30 on a spring-forward night) fires at the moment it
        maps to (03:30): a nightly window is shifted that night, not lost.
        """
        found: set[datetime] = set()
        for hour in self.hours:
            for minute in self.minutes:
                local = datetime.combine(day, time(hour, minute), tzinfo=zone)
                found.add(local.astimezone(UTC).astimezone(zone))
        return sorted(found)

    def next_after(self, moment: datetime, zone: tzinfo) -> datetime | None:
        """The first fire time strictly after *moment* (aware), in *zone*; None if there is none for years."""
        local = moment.astimezone(zone)
        day = local.date()
        for _ in range(_SEARCH_DAYS):
            if self.matches_day(day):
                for fire in self._fire_times_on(day, zone):
                    if fire > moment:
                        return fire
            day += timedelta(days=1)
        return None

    def previous_at_or_before(self, moment: datetime, zone: tzinfo) -> datetime | None:
        """The last fire time at or before *moment* (aware), in *zone*; None if there is none for years."""
        local = moment.astimezone(zone)
        day = local.date()
        for _ in range(_SEARCH_DAYS):
            if self.matches_day(day):
                for fire in reversed(self._fire_times_on(day, zone)):
                    if fire <= moment:
                        return fire
            day -= timedelta(days=1)
        return None

    def apscheduler_fields(self) -> dict[str, str]:
        """Keyword arguments for APScheduler's ``CronTrigger`` that mean the same as this expression.

        Days of the week are passed by name: APScheduler numbers them from Monday = 0, cron from
        Sunday = 0, so numbers would shift the window by a day.
        """
        return {
            "minute": ",".join(str(v) for v in sorted(self.minutes)),
            "hour": ",".join(str(v) for v in sorted(self.hours)),
            "day": ",".join(str(v) for v in sorted(self.days)),
            "month": ",".join(str(v) for v in sorted(self.months)),
            "day_of_week": ",".join(_DAYS[v] for v in sorted(self.weekdays)),
        }
