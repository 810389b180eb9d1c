"""Fixtures of the adapter tests: a running lab vCenter and connections to it."""

from __future__ import annotations

import os
import ssl
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from basil.vcenter.connection import ConnectionParams, TLSOptions, VCenterConnection, fetch_server_thumbprint


@dataclass(frozen=True)
class LabVC:
    server: str
    user: str
    password: str
    pem: str  # the server's certificate, as a PEM file

    def params(self, **kw: object) -> ConnectionParams:
        fields: dict[str, object] = {
            "server": self.server,
            "user": self.user,
            "password": self.password,
            "tls": TLSOptions(ca_bundle=self.pem),
            "keepalive_s": 0,
            "backoff_s": 0.05,
        }
        fields.update(kw)
        return ConnectionParams(**fields)  # type: ignore[arg-type]


@pytest.fixture(scope="session")
def lab_vc(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabVC]:
    binary = os.environ.get("MINISIM", "/tmp/minisim/minisim")
    out = tmp_path_factory.mktemp("sim") / "url"
    with out.open("w") as fh:
        proc = subprocess.Popen([binary], stdout=fh, stderr=subprocess.DEVNULL)
    try:
        for _ in range(200):
            text = out.read_text()
            if text.strip():
                break
            time.sleep(0.05)
        port = text.strip().rsplit(":", 1)[-1].split("/")[0]
        server = f"127.0.0.1:{port}"
        pem = tmp_path_factory.mktemp("tls") / "lab.pem"
        pem.write_text(ssl.get_server_certificate(("127.0.0.1", int(port))))
        yield LabVC(server, "user", "pass", str(pem))
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.fixture
def conn(lab_vc: LabVC) -> Iterator[VCenterConnection]:
    with VCenterConnection(lab_vc.params()) as c:
        yield c


@pytest.fixture(scope="session")
def lab_thumbprint(lab_vc: LabVC) -> str:
    return fetch_server_thumbprint(lab_vc.server)


def pem_path(lab_vc: LabVC) -> Path:
    return Path(lab_vc.pem)
