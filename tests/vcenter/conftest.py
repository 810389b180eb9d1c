"""Fixtures of the adapter tests: the lab vCenter binary on the adapter's scenario, and sessions to it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from basil.vcenter.connection import VCenterConnection

from .labproc import LabProcess

SCENARIO = Path(__file__).parent / "scenarios" / "adapter.yaml"

LabVC = LabProcess


@pytest.fixture(scope="module")
def lab_vc() -> Iterator[LabProcess]:
    """A lab per test module, so one module's changes never leak into another's expectations."""
    with LabProcess.start(SCENARIO, speed=60) as lab:
        yield lab


@pytest.fixture
def conn(lab_vc: LabProcess) -> Iterator[VCenterConnection]:
    """A session on a lab reset to the scenario as written (faults cleared)."""
    lab_vc.reset()
    with VCenterConnection(lab_vc.connection_params()) as c:
        yield c


@pytest.fixture(scope="module")
def lab_thumbprint(lab_vc: LabProcess) -> str:
    return lab_vc.sha256
