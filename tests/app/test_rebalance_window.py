"""The rebalance window changed through the service outlives a restart on the same store (SQLite and
PostgreSQL), wins over the configuration file, and DELETE's reset brings the file's window back."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from basil.app import Actor, Service
from basil.errors import ValidationError
from basil.store import Store
from tests.app.conftest import SCENARIOS, lab_config
from tests.vcenter.labproc import LabProcess

pytestmark = pytest.mark.lab

ADMIN = Actor("window-admin", "admin", "127.0.0.1")


@pytest.fixture(scope="module")
def lab() -> Iterator[LabProcess]:
    with LabProcess.start(SCENARIOS / "tiered.yaml", speed=60) as lab:
        yield lab


def started(lab: LabProcess, url: str, *, scheduler: bool = False) -> Service:
    svc = Service(lab_config(lab, url), Store(url), params_factory=lambda _vc: lab.connection_params())
    svc.start(scheduler=scheduler)
    return svc


def test_a_changed_window_survives_a_restart_until_reset(lab: LabProcess, empty_store_url: str) -> None:
    first = started(lab, empty_store_url)
    try:
        file_window = first.schedules()["rebalance"]
        assert file_window["cron"] == "0 2 * * sat"  # the configuration's default
        assert file_window["changed"] is None
        first.set_rebalance_window({"cron": "30 1 * * sun", "max_moves": 5}, ADMIN)
        changed = first.set_rebalance_window({"duration": "90m"}, ADMIN)["rebalance"]
        assert (changed["cron"], changed["max_moves"], changed["duration_s"]) == ("30 1 * * sun", 5, 5400)
        assert changed["changed"]["fields"] == {"cron": "30 1 * * sun", "max_moves": 5, "duration": "90m"}
        assert changed["changed"]["by"] == "window-admin"
        with pytest.raises(ValidationError) as caught:
            first.set_rebalance_window({"cron": "sometimes", "max_gb": -1}, ADMIN)
        assert {p.field for p in caught.value.problems} == {"cron", "max_gb"}
    finally:
        first.shutdown()

    # The same store, a new process' worth of Service (with its scheduler): the change still holds.
    second = started(lab, empty_store_url, scheduler=True)
    try:
        window = second.schedules()["rebalance"]
        assert (window["cron"], window["max_moves"], window["duration_s"]) == ("30 1 * * sun", 5, 5400)
        assert window["max_gb"] == file_window["max_gb"]  # fields not changed keep the file's value
        assert second.scheduler is not None
        trigger = str(second.scheduler.get_job("rebalance").trigger)
        assert all(part in trigger for part in ("day_of_week='sun'", "hour='1'", "minute='30'")), trigger
        reset = second.reset_rebalance_window(ADMIN)["rebalance"]
        assert (reset["cron"], reset["max_moves"], reset["changed"]) == (
            "0 2 * * sat",
            file_window["max_moves"],
            None,
        )
        assert "hour='2'" in str(second.scheduler.get_job("rebalance").trigger)
        actions = [a["action"] for a in second.audit(limit=20)]
        assert "schedules.rebalance.reset" in actions
    finally:
        second.shutdown()

    third = started(lab, empty_store_url)
    try:
        assert third.schedules()["rebalance"]["cron"] == "0 2 * * sat"
        assert third.schedules()["rebalance"]["changed"] is None
    finally:
        third.shutdown()
