"""Shared fixtures. `lab_factory` starts lab vCenters for any test that needs a vCenter to talk to
(the lab's own tests, the vCenter adapter, the service, the plugin)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.lab_vcenter import LabFactory, LabInstance, RunningLab, start_lab

# Each area's fixtures live in a plugin module of their own.
pytest_plugins = ["tests.fixtures_store"]


@pytest.fixture(scope="session")
def lab_factory(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabFactory]:
    """Starts lab vCenters: `lab_factory("tiered", speed=0, tls=True)` runs lab/scenarios/tiered.yaml
    (or a YAML path) on a free loopback port and returns how to reach it; every lab started is
    stopped at the end of the session. speed=0 pauses simulated time: advance it with
    `instance.step(n)` for deterministic tests. `lab_factory(STOCK)` (tests.lab_vcenter.STOCK) serves
    govmomi's stock simulator model instead of a scenario (`basil-lab --stock`)."""
    running: list[RunningLab] = []

    def start(
        scenario: str | Path,
        *,
        speed: float = 0.0,
        tls: bool = True,
        cap_realtime_queries: bool = False,
        extra_args: tuple[str, ...] = (),
    ) -> LabInstance:
        tmp = tmp_path_factory.mktemp("lab")
        instance, proc = start_lab(
            tmp,
            scenario,
            speed=speed,
            tls=tls,
            cap_realtime_queries=cap_realtime_queries,
            extra_args=extra_args,
        )
        running.append(proc)
        return instance

    yield start
    for proc in running:
        with contextlib.suppress(Exception):
            proc.stop()
