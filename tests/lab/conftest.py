"""Fixtures of the lab's tests: a fresh lab of lab_test_scenario.yaml per test (the tests change
placement, IO settings and faults), and a pyVmomi connection to it."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pyVim.connect import Disconnect

from tests.lab.helpers import connect
from tests.lab_vcenter import LabFactory, LabInstance

SCENARIO = Path(__file__).with_name("lab_test_scenario.yaml")


@pytest.fixture
def lab(lab_factory: LabFactory) -> Iterator[LabInstance]:
    instance = lab_factory(SCENARIO, speed=0, tls=True)
    yield instance
    instance.stop()


@pytest.fixture
def si(lab: LabInstance) -> Iterator[Any]:
    service = connect(lab)
    yield service
    with contextlib.suppress(Exception):  # the test may have killed the session
        Disconnect(service)
    service._stub.DropConnections()
