"""The lab vCenter as the adapter's tests and benchmark see it: a started lab plus the calls they use.

The lab itself is started by the shared ``lab_factory`` fixture (tests/conftest.py) or, outside
pytest, by :func:`tests.lab_vcenter.start_lab`. Basil never uses the control API; only tests and
benchmarks do, to step simulated time, read the ground truth and inject faults.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from basil.vcenter.connection import ConnectionParams, TLSOptions
from tests.lab_vcenter import LabInstance


class LabVC:
    """A running lab (TLS on) and its scenario as written."""

    def __init__(self, instance: LabInstance) -> None:
        assert instance.ca_pem is not None, "the adapter's tests need the lab on TLS"
        assert instance.thumbprint is not None
        assert instance.thumbprint_sha256 is not None
        assert instance.scenario is not None, "LabVC runs a scenario, not the stock model"
        self.instance = instance
        self.server = f"{instance.host}:{instance.port}"
        self.user = instance.user
        self.password = instance.password
        self.pem = str(instance.ca_pem)
        self.sha1 = instance.thumbprint.replace(":", "").lower()
        self.sha256 = instance.thumbprint_sha256.replace(":", "").lower()
        self.scenario: dict[str, Any] = yaml.safe_load(Path(instance.scenario).read_text(encoding="utf-8"))

    def connection_params(self, **kw: Any) -> ConnectionParams:
        fields: dict[str, Any] = {
            "server": self.server,
            "user": self.user,
            "password": self.password,
            "tls": TLSOptions(ca_bundle=self.pem),
            "keepalive_s": 0,
            "backoff_s": 0.05,
        }
        fields.update(kw)
        return ConnectionParams(**fields)

    # --- control API -----------------------------------------------------------------------------

    def control(self, method: str, path: str, body: Any = None) -> Any:
        return self.instance.control(method, path, body)

    def pause(self) -> None:
        self.control("PUT", "time", {"speed": 0})

    def step(self, intervals: int = 1) -> Any:
        return self.instance.step(intervals)

    def advance(self, seconds: float) -> None:
        self.step(max(1, round(seconds / 20)))

    def truth(self, intervals: int = 1) -> Any:
        return self.control("GET", f"truth?intervals={intervals}")

    def reset(self) -> None:
        self.control("POST", "reset")

    def add_fault(self, **rule: Any) -> Any:
        return self.control("POST", "faults/rules", rule)

    def clear_faults(self) -> None:
        self.control("DELETE", "faults")

    def session_loss(self) -> None:
        self.control("POST", "faults/session-loss")

    def set_accessible(self, datastore: str, accessible: bool) -> None:
        self.control("POST", "faults/datastore", {"datastore": datastore, "accessible": accessible})

    def set_latency_ms(self, ms: int) -> None:
        self.control("PUT", "faults/latency", {"ms": ms})

    def settings(self, **values: Any) -> Any:
        return self.control("PUT", "settings", values)

    def stop(self) -> None:
        self.instance.stop()
