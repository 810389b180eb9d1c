"""Fixtures of the adapter tests: the lab vCenter on the adapter's scenario, and sessions to it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from basil.vcenter.connection import VCenterConnection
from tests.lab_vcenter import LabFactory

from .labvc import LabVC

SCENARIO = Path(__file__).parent / "scenarios" / "adapter.yaml"


@pytest.fixture(scope="module")
def lab_vc(lab_factory: LabFactory) -> Iterator[LabVC]:
    """A lab per test module (running at 60x), so one module's changes never leak into another's."""
    lab = LabVC(lab_factory(SCENARIO, speed=60, tls=True))
    yield lab
    lab.stop()


@pytest.fixture
def conn(lab_vc: LabVC) -> Iterator[VCenterConnection]:
    """A session on a lab reset to the scenario as written (faults cleared)."""
    lab_vc.reset()
    with VCenterConnection(lab_vc.connection_params()) as c:
        yield c


@pytest.fixture(scope="module")
def lab_thumbprint(lab_vc: LabVC) -> str:
    return lab_vc.sha256
