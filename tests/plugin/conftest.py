"""Fixtures of the plugin's tests: the registration script as a module, and a lab vCenter to register with."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

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


# --- end-to-end: lab, service, browser ------------------------------------------------------------


@pytest.fixture(scope="module")
def e2e_lab() -> Iterator[Any]:
    from tests.vcenter.labproc import LabProcess  # noqa: PLC0415

    with LabProcess.start(ROOT / "lab" / "scenarios" / "basil-6.2.yaml", speed=120) as lab:
        yield lab


@pytest.fixture(scope="module")
def basil(e2e_lab: Any) -> Iterator[Any]:
    from .e2e import start_basil  # noqa: PLC0415

    yield from start_basil(e2e_lab)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright  # noqa: PLC0415

    from .e2e import CHROMIUM, CHROMIUM_FLAGS  # noqa: PLC0415

    if not CHROMIUM.exists():
        raise AssertionError(f"{CHROMIUM} is missing: install Debian's chromium (`make chromium`)")
    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_FLAGS, headless=True)
        yield b
        b.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    """A fresh browser context (its own storage: a new user-data) at 1280x800."""
    from .e2e import VIEWPORT  # noqa: PLC0415

    context = browser.new_context(ignore_https_errors=True, viewport=VIEWPORT)
    context.set_default_timeout(30_000)
    p = context.new_page()
    errors: list[str] = []
    p.on("pageerror", lambda e: errors.append(str(e)))
    yield p
    context.close()
    assert errors == [], f"the page raised: {errors}"
