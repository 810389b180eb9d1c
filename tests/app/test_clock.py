"""The mapping from the service's clock to vCenter's (basil.app.clock), on readings given by hand."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from basil.app.clock import VCenterClock

T0 = datetime(2026, 1, 5, 12, 0, tzinfo=UTC)


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def test_without_a_reading_a_moment_is_shown_as_it_is() -> None:
    clock = VCenterClock()
    assert not clock.known
    assert clock.at(at(5)) == at(5)
    assert clock.local(at(5)) == at(5)


def test_one_reading_is_an_offset() -> None:
    clock = VCenterClock()
    clock.note(at(0), at(300))  # vCenter five minutes ahead
    assert clock.at(at(10)) == at(310)
    assert clock.at(at(-10)) == at(290)
    assert clock.local(at(310)) == at(10)


def test_a_fast_clock_is_followed_between_and_beyond_readings() -> None:
    clock = VCenterClock()
    # The lab at 30x: 20 s of the service's clock are 600 s of vCenter's.
    for k in range(4):
        clock.note(at(20 * k), at(1000 + 600 * k))
    assert clock.at(at(30)) == at(1000 + 900)  # between two readings
    assert clock.at(at(70)) == at(1000 + 2100)  # beyond the newest, at the newest rate
    assert clock.at(at(-2)) == at(1000 - 60)  # before the oldest, at the oldest rate
    for s in (-2.0, 0.0, 30.0, 70.0):
        assert clock.local(clock.at(at(s))) == at(s)


def test_the_rate_may_change_and_older_moments_keep_theirs() -> None:
    clock = VCenterClock()
    clock.note(at(0), at(0))
    clock.note(at(10), at(10))  # one second per second
    clock.note(at(20), at(610))  # then 60 per second
    assert clock.at(at(5)) == at(5)
    assert clock.at(at(15)) == at(310)
    assert clock.at(at(25)) == at(910)


def test_a_clock_that_went_back_starts_afresh() -> None:
    clock = VCenterClock()
    clock.note(at(0), at(5000))
    clock.note(at(10), at(5600))
    clock.note(at(20), at(100))  # the lab was reset
    assert clock.at(at(30)) == at(110)


def test_readings_are_bounded() -> None:
    clock = VCenterClock(max_readings=3)
    for k in range(10):
        clock.note(at(k), at(2 * k))
    assert clock.at(at(9)) == at(18)
    assert clock.at(at(0)) == at(0)  # back from the oldest kept (k=7) at its rate, 2
