"""``LabProcess``: a lab vCenter started on its own (outside the ``lab_factory`` fixture), for the
service's tests and benchmarks that need one per module or per test.

It is the shared launcher (:func:`tests.lab_vcenter.start_lab`, one way to start the lab) wrapped in
:class:`tests.vcenter.labvc.LabVC` (the calls tests make), with a start/close life cycle of its own.
Control paths may be written relative to ``/lab/`` or in full (``/lab/placement``).
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from types import TracebackType
from typing import Any

from tests.lab_vcenter import LAB_PASSWORD, LAB_USER, REPO, RunningLab, start_lab
from tests.vcenter.labvc import LabVC

ROOT = REPO
USER = LAB_USER
PASSWORD = LAB_PASSWORD


class LabProcess(LabVC):
    """One running lab on a free loopback port, TLS on; stop it with :meth:`close` (or ``with``)."""

    def __init__(self, running: RunningLab, workdir: Path, *args: Any) -> None:
        super().__init__(*args)
        self.running = running
        self.workdir = workdir

    @classmethod
    def start(cls, scenario: str | Path, speed: float = 60.0, extra: tuple[str, ...] = ()) -> LabProcess:
        workdir = Path(tempfile.mkdtemp(prefix="basil-lab-"))
        instance, running = start_lab(
            workdir, scenario, speed=speed, tls=True, cap_realtime_queries=False, extra_args=extra
        )
        return cls(running, workdir, instance)

    @property
    def pid(self) -> int:
        return self.running.proc.pid

    def log(self) -> str:
        return self.running.log.read_text(encoding="utf-8")

    def control(self, method: str, path: str, body: Any = None) -> Any:
        return super().control(method, path.removeprefix("/lab/").removeprefix("/lab"), body)

    def set_speed(self, speed: float) -> None:
        self.control("PUT", "time", {"speed": speed})

    def settings(self, **values: Any) -> Any:
        return self.control("PUT", "settings", values)

    def close(self) -> None:
        self.running.stop()

    def __enter__(self) -> LabProcess:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
