"""A refused login is retried after an exponential, capped back-off, and the next attempt is shown;
an attempt asked for earlier does not reach vCenter (issue 12, item 3)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from basil.app.vcenters import Backoff, VCenterLink
from basil.config import TLSOptions, VCenterConfig
from basil.vcenter.errors import VCenterAuthenticationError, VCenterConnectionError
from tests.faults.conftest import ServiceFactory
from tests.vcenter.labproc import LabProcess

pytestmark = pytest.mark.lab


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


def lab_link(lab: LabProcess, clock: Clock, password: str) -> VCenterLink:
    config = VCenterConfig(
        name="lab", server=lab.server, user=lab.user, password_env="UNUSED", tls=TLSOptions(ca_bundle=lab.pem)
    )
    return VCenterLink(
        config,
        lambda _vc: lab.connection_params(password=password),
        backoff=Backoff(first_s=30, cap_s=120),
        clock=clock,
    )


def test_a_wrong_password_backs_off_exponentially_up_to_the_cap(lab: LabProcess) -> None:
    clock = Clock()
    link = lab_link(lab, clock, "wrong-password")
    waits = []
    for _ in range(4):
        with pytest.raises(VCenterAuthenticationError):
            link.connect()
        assert link.next_attempt is not None
        waits.append(link.next_attempt - clock.now)
        # Asked again before the next attempt is due: refused at once, vCenter is not asked.
        attempts = link.attempts
        clock.now += timedelta(seconds=1)
        with pytest.raises(VCenterConnectionError, match="is not tried again before"):
            link.connect()
        assert link.attempts == attempts
        clock.now = link.next_attempt
    assert waits == [timedelta(seconds=s) for s in (30, 60, 120, 120)]
    assert link.attempts == 4
    (problem,) = link.problem_list()
    assert problem.job == "connect"


def test_the_next_attempt_is_shown_and_cleared_by_a_success(lab: LabProcess, service: ServiceFactory) -> None:
    clock = Clock()
    svc = service(lab)
    good = svc.links["lab"]
    link = lab_link(lab, clock, "wrong-password")
    svc.links["lab"] = link
    with pytest.raises(VCenterAuthenticationError):
        link.connect()
    (vc,) = svc.vcenters()
    assert vc["next_attempt"] == (clock.now + timedelta(seconds=30)).isoformat()
    assert svc.health()["problems"][0]["job"] == "connect"
    # The password is fixed (the configuration reloaded): the next attempt, when due, succeeds.
    link._params_factory = lambda _vc: lab.connection_params()
    clock.now += timedelta(seconds=30)
    link.connect()
    (vc,) = svc.vcenters()
    assert vc["next_attempt"] is None
    assert vc["connected"]
    assert vc["problems"] == []
    link.close()
    svc.links["lab"] = good


def test_a_refused_re_login_drops_the_session_behind_the_back_off(
    lab: LabProcess, service: ServiceFactory
) -> None:
    import dataclasses  # noqa: PLC0415

    svc = service(lab)
    link = svc.links["lab"]
    assert link.conn is not None
    # The password was changed in SSO while Basil ran: its session is lost and logging in again fails.
    link.conn.params = dataclasses.replace(link.conn.params, password="changed-meanwhile")
    lab.control("POST", "faults/session-loss")
    failed = svc.run_job("collect")
    assert failed["outcome"] == "failed", failed
    assert not link.connected
    assert link.next_attempt is not None
    attempts = link.attempts
    again = svc.run_job("collect")  # within the back-off: vCenter is not asked to log in again
    assert again["outcome"] == "failed", again
    assert "is not tried again before" in again["message"]
    assert link.attempts == attempts
    assert {p["job"] for p in svc.health()["problems"]} == {"connect", "collect"}
