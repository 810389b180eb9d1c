"""The service's readings of vCenter's clock at each collection: one the mapping already predicts
changes neither how times are shown nor the generation every cached answer is built on; one it does
not predict (vCenter's clock moved otherwise) changes both."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import timedelta

import pytest

from basil.app import Service
from tests.app.conftest import SCENARIOS, ServiceFactory
from tests.vcenter.labproc import LabProcess

pytestmark = pytest.mark.lab


@pytest.fixture(scope="module")
def lab() -> Iterator[LabProcess]:
    with LabProcess.start(SCENARIOS / "basil-6.2.yaml", speed=0) as lab:
        yield lab


def collect(svc: Service) -> None:
    run = svc.run_job("collect")
    assert run["outcome"] == "succeeded", run


def test_a_predicted_reading_changes_nothing_an_unpredicted_one_is_taken(
    lab: LabProcess, make_service: ServiceFactory
) -> None:
    lab.control("POST", "reset")
    lab.set_speed(0)
    lab.step(2)
    svc = make_service(lab)
    clock = svc.vcenter_clocks["lab"]
    collect(svc)
    time.sleep(0.3)  # the lab's clock stands still meanwhile: the mapping learns that it does
    collect(svc)
    moment = svc.clock() - timedelta(seconds=5)
    shown, generation, basis = svc.shown(moment), clock.generation, svc.read_basis()

    collect(svc)  # vCenter's clock still where the mapping says it is
    assert clock.generation == generation
    assert svc.read_basis().generations == basis.generations  # cached answers stay
    assert svc.shown(moment) == shown

    lab.step(3)  # a minute on vCenter's clock, in no time on the service's
    collect(svc)
    assert clock.generation > generation
    assert svc.read_basis().generations != basis.generations  # cached answers are built again
    assert (svc.vcenter_time() - shown).total_seconds() > 55  # now shown a minute later than before
