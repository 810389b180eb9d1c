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
        # Off the line of the two before by a second each time: every reading is taken.
        assert clock.note(at(k), at(2 * k + 0.5 * (k % 2)))
    assert clock.at(at(9)) == at(18.5)
    assert clock.at(at(0)) == at(4)  # back from the oldest kept (k=7: 14.5) at its rate to k=8, 1.5


def test_a_predicted_reading_changes_nothing() -> None:
    clock = VCenterClock(tolerance_s=0.1)
    assert clock.note(at(0), at(300))
    before = [clock.at(at(s)) for s in (-5, 10, 20, 30, 90)]
    # A vCenter at one second per second, read with a few milliseconds of jitter.
    assert not clock.note(at(20), at(320.03))
    assert not clock.note(at(40), at(339.95))
    assert not clock.note(at(60), at(360.4), uncertainty_s=0.5)  # off by 0.4 s, but read give or take 0.5
    assert clock.generation == 1
    assert [clock.at(at(s)) for s in (-5, 10, 20, 30, 90)] == before


def test_a_reading_off_the_prediction_is_taken_after_the_last_predicted_one() -> None:
    clock = VCenterClock(tolerance_s=0.1)
    clock.note(at(0), at(0))
    assert not clock.note(at(10), at(10))  # predicted: kept aside
    assert clock.note(at(20), at(610))  # the lab sped up to 60x: both readings are taken
    assert clock.generation == 2
    assert clock.at(at(5)) == at(5)  # before the aside reading, still one second per second
    assert clock.at(at(15)) == at(310)
    assert clock.at(at(25)) == at(910)
