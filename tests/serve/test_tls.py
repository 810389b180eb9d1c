"""The service's certificate: generated once and kept, thumbprints as vCenter shows them, renewed
when it would not cover the service's names, and a given certificate served as is."""

from __future__ import annotations

import hashlib
import ssl
import stat
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from cryptography import x509

from basil.config.schema import ServerConfig, ServerTLSConfig
from basil.errors import ValidationError
from basil.serve.tls import CERT_FILE, KEY_FILE, generate, names_for, server_certificate


def _server(tmp_path: Path, **more: object) -> ServerConfig:
    return ServerConfig(listen="127.0.0.1:8443", tls=ServerTLSConfig(dir=str(tmp_path / "tls")), **more)  # type: ignore[arg-type]


def test_generated_once_then_reused(tmp_path: Path) -> None:
    first = server_certificate(_server(tmp_path))
    assert first.generated
    assert first.self_signed
    again = server_certificate(_server(tmp_path))
    assert not again.generated
    assert again.sha256 == first.sha256
    assert stat.S_IMODE((tmp_path / "tls" / KEY_FILE).stat().st_mode) == 0o600


def test_thumbprints_are_the_certificates_digests(tmp_path: Path) -> None:
    cert = server_certificate(_server(tmp_path))
    der = ssl.PEM_cert_to_DER_cert(cert.cert.read_text())
    assert cert.sha1 == ":".join(f"{b:02X}" for b in hashlib.sha1(der).digest())
    assert cert.sha256 == ":".join(f"{b:02X}" for b in hashlib.sha256(der).digest())
    assert len(cert.sha1.split(":")) == 20
    assert len(cert.sha256.split(":")) == 32


def test_names_cover_loopback_and_the_public_url(tmp_path: Path) -> None:
    server = _server(tmp_path, public_url="https://basil.corp.example:8443")
    cert = x509.load_pem_x509_certificate(server_certificate(server).cert.read_bytes())
    san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert {"localhost", "basil.corp.example"} <= set(san.get_values_for_type(x509.DNSName))
    assert {str(ip) for ip in san.get_values_for_type(x509.IPAddress)} >= {"127.0.0.1", "::1"}


def test_renewed_when_a_name_is_missing_or_it_expires_soon(tmp_path: Path) -> None:
    first = server_certificate(_server(tmp_path))
    renamed = server_certificate(_server(tmp_path, public_url="https://new-name.example"))
    assert renamed.generated
    assert renamed.sha256 != first.sha256
    server = _server(tmp_path, public_url="https://new-name.example")
    dns, ips = names_for(server)
    generate(Path(server.tls.dir), dns, ips, now=datetime.now(UTC) - timedelta(days=720))  # ends in 10 days
    assert server_certificate(server).generated


def test_given_certificate_is_used_as_is(tmp_path: Path) -> None:
    dns, ips = names_for(_server(tmp_path))
    generate(tmp_path / "given", dns, ips)
    given = ServerConfig(
        tls=ServerTLSConfig(
            self_signed=False,
            cert=str(tmp_path / "given" / CERT_FILE),
            key=str(tmp_path / "given" / KEY_FILE),
        )
    )
    cert = server_certificate(given)
    assert not cert.generated
    assert not cert.self_signed
    assert not (tmp_path / "tls").exists()


def test_missing_given_files_name_each_field(tmp_path: Path) -> None:
    given = ServerConfig(
        tls=ServerTLSConfig(self_signed=False, cert=str(tmp_path / "c.pem"), key=str(tmp_path / "k.pem"))
    )
    with pytest.raises(ValidationError) as err:
        server_certificate(given)
    assert {p.field for p in err.value.problems} == {"server.tls.cert", "server.tls.key"}
