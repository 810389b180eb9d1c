"""Fixtures of the plugin's tests: the registration script as a module, and a lab vCenter to register with."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from basil.vcenter.connection import ConnectionParams, TLSOptions, VCenterConnection
from tests.lab_vcenter import LabFactory, LabInstance

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def register_plugin() -> ModuleType:
    """scripts/register_plugin.py, imported (it is a script, not part of the package)."""
    path = ROOT / "scripts" / "register_plugin.py"
    spec = importlib.util.spec_from_file_location("register_plugin", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["register_plugin"] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def registration_lab(lab_factory: LabFactory) -> LabInstance:
    return lab_factory("basil-6.2", speed=0, tls=True)


def connection_params(lab: LabInstance) -> ConnectionParams:
    assert lab.ca_pem is not None
    return ConnectionParams(
        server=f"{lab.host}:{lab.port}",
        user=lab.user,
        password=lab.password,
        tls=TLSOptions(ca_bundle=str(lab.ca_pem)),
        keepalive_s=0,
    )


@pytest.fixture
def vc(registration_lab: LabInstance) -> Iterator[VCenterConnection]:
    with VCenterConnection(connection_params(registration_lab)) as conn:
        yield conn
