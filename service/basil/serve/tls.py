"""The service's TLS certificate: generated self-signed and kept in the data directory, or given.

vCenter registers a remote plugin's server by its certificate thumbprint, so ``basil serve`` prints
the SHA-1 and SHA-256 thumbprints of whatever certificate it serves. A generated certificate is
kept (``server.tls.dir``) and reused while it is valid for another 30 days and covers the names the
service is reached by; otherwise a new one is made (a new thumbprint: re-register the plugin).
"""

from __future__ import annotations

import ipaddress
import logging
import os
import socket
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import urlsplit

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from basil.config import ServerConfig
from basil.config.schema import host_port
from basil.errors import Problem, ValidationError

log = logging.getLogger(__name__)

CERT_FILE = "basil.crt"
KEY_FILE = "basil.key"
VALIDITY = timedelta(days=730)
RENEW_BEFORE = timedelta(days=30)

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


@dataclass(frozen=True)
class Certificate:
    """The certificate and key files served, and the certificate's thumbprints (colon-separated hex)."""

    cert: Path
    key: Path
    sha1: str
    sha256: str
    generated: bool  # made by this start (a new thumbprint)
    self_signed: bool
    not_after: datetime


def thumbprint(cert: x509.Certificate, algorithm: hashes.HashAlgorithm) -> str:
    return ":".join(f"{b:02X}" for b in cert.fingerprint(algorithm))


def names_for(server: ServerConfig) -> tuple[list[str], list[IPAddress]]:
    """The DNS names and addresses the certificate must cover: loopback, this host, listen, public URL."""
    dns = ["localhost"]
    ips: list[IPAddress] = [ipaddress.ip_address("127.0.0.1"), ipaddress.ip_address("::1")]
    candidates = [socket.gethostname(), socket.getfqdn()]
    host, _ = host_port(server.listen)
    candidates.append(host)
    if server.public_url:
        candidates.append(urlsplit(server.public_url).hostname or "")
    for name in candidates:
        if not name or name in ("0.0.0.0", "::"):
            continue
        try:
            address = ipaddress.ip_address(name)
        except ValueError:
            if name.lower() not in dns:
                dns.append(name.lower())
            continue
        if address not in ips:
            ips.append(address)
    return dns, ips


def _covers(cert: x509.Certificate, dns: list[str], ips: list[IPAddress]) -> bool:
    try:
        san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return False
    have_dns = {n.lower() for n in san.get_values_for_type(x509.DNSName)}
    have_ips = set(san.get_values_for_type(x509.IPAddress))
    return set(dns) <= have_dns and set(ips) <= have_ips


def _load(path: Path) -> x509.Certificate:
    return x509.load_pem_x509_certificate(path.read_bytes())


def _describe(cert_path: Path, key_path: Path, *, generated: bool, self_signed: bool) -> Certificate:
    cert = _load(cert_path)
    return Certificate(
        cert_path, key_path, thumbprint(cert, hashes.SHA1()), thumbprint(cert, hashes.SHA256()),
        generated, self_signed, cert.not_valid_after_utc,
    )  # fmt: skip


def generate(directory: Path, dns: list[str], ips: list[IPAddress], now: datetime | None = None) -> None:
    """Write a new self-signed RSA 2048 certificate and key (mode 0600) into *directory*."""
    at = now or datetime.now(UTC)
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    name = x509.Name(
        [
            x509.NameAttribute(NameOID.COMMON_NAME, dns[-1] if len(dns) > 1 else dns[0]),
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "Basil (self-signed)"),
        ]
    )
    alt_names: list[x509.GeneralName] = [x509.DNSName(n) for n in dns]
    alt_names += [x509.IPAddress(ip) for ip in ips]
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(at - timedelta(minutes=5))
        .not_valid_after(at + VALIDITY)
        .add_extension(x509.SubjectAlternativeName(alt_names), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                key_encipherment=True,
                content_commitment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=False,
                crl_sign=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(key, hashes.SHA256())
    )
    directory.mkdir(parents=True, exist_ok=True)
    key_path = directory / KEY_FILE
    # The key is created 0600 from the start, never world-readable for a moment.
    fd = os.open(key_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(
            key.private_bytes(
                serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
            )
        )
    (directory / CERT_FILE).write_bytes(cert.public_bytes(serialization.Encoding.PEM))


def server_certificate(server: ServerConfig, now: datetime | None = None) -> Certificate:
    """The certificate to serve: the configured files, or the kept self-signed one (made when needed)."""
    tls = server.tls
    if not tls.self_signed:
        cert_path, key_path = Path(tls.cert), Path(tls.key)
        problems = [
            Problem(f"server.tls.{what}", f"{path} is not a readable file")
            for what, path in (("cert", cert_path), ("key", key_path))
            if not path.is_file()
        ]
        if problems:
            raise ValidationError(problems, "TLS configuration")
        try:
            return _describe(cert_path, key_path, generated=False, self_signed=False)
        except ValueError as err:
            raise ValidationError(
                [Problem("server.tls.cert", f"{cert_path} is not a PEM certificate: {err}")],
                "TLS configuration",
            ) from None
    at = now or datetime.now(UTC)
    directory = Path(tls.dir)
    cert_path, key_path = directory / CERT_FILE, directory / KEY_FILE
    dns, ips = names_for(server)
    if cert_path.is_file() and key_path.is_file():
        try:
            cert = _load(cert_path)
            if cert.not_valid_after_utc - at > RENEW_BEFORE and _covers(cert, dns, ips):
                return _describe(cert_path, key_path, generated=False, self_signed=True)
            log.warning(
                "the self-signed certificate in %s expires soon or misses a name: making a new one", directory
            )
        except ValueError:
            log.warning("%s is not a readable certificate: making a new one", cert_path)
    generate(directory, dns, ips, at)
    return _describe(cert_path, key_path, generated=True, self_signed=True)
