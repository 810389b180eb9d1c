"""Register Basil's vSphere Client remote plugin with a vCenter (ExtensionManager), update it, remove it.

vCenter downloads the plugin's ``plugin.json`` from the URL in the extension's client info (type
``vsphere-client-remote``) and proxies the plugin server, which it trusts by the thumbprint (or the
certificate) given here. Every command converges on the state asked for, so running it twice changes
nothing the second time::

    python scripts/register_plugin.py register --server vc.example.com --user administrator@vsphere.local \\
        --manifest-url https://basil.example.com:8443/plugin/plugin.json --plugin-cert /etc/basil/tls.pem
    python scripts/register_plugin.py unregister --server vc.example.com --user ...

The vCenter connection takes the options of ``basil vcenter`` (and its BASIL_VCENTER_* environment).
"""

from __future__ import annotations

import datetime
import hashlib
import json
import re
import ssl
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import click

from basil.cli.vcenter import connection_options
from basil.errors import BasilError, NotFoundError, Problem, ValidationError, raise_if_problems

CLIENT_TYPE = "vsphere-client-remote"
DEFAULT_KEY = "io.basil.vsphere.plugin"
ROOT = Path(__file__).resolve().parents[1]
_HEX = re.compile(r"^[0-9A-F]+$")


def colon_thumbprint(thumbprint: str) -> str:
    """A thumbprint the way vCenter writes it: upper-case hex pairs joined by colons."""
    hexdigits = thumbprint.replace(":", "").replace(" ", "").upper()
    return ":".join(hexdigits[i : i + 2] for i in range(0, len(hexdigits), 2))


def pem_certificate(path: Path) -> tuple[str, str]:
    """The first certificate of a PEM file and its SHA-256 thumbprint."""
    text = path.read_text(encoding="ascii")
    match = re.search(r"-----BEGIN CERTIFICATE-----.+?-----END CERTIFICATE-----", text, re.S)
    if match is None:
        raise BasilError(f"--plugin-cert: {path} holds no PEM certificate")
    pem = match.group(0)
    der = ssl.PEM_cert_to_DER_cert(pem)
    return pem + "\n", colon_thumbprint(hashlib.sha256(der).hexdigest())


@dataclass(frozen=True)
class PluginRegistration:
    """What the extension should look like in vCenter."""

    key: str
    version: str
    manifest_url: str
    thumbprint: str | None = None
    certificate: str | None = None
    company: str = "Basil"
    label: str = "Basil"
    summary: str = "IO load balancing and storage QoS for vSphere"
    admin_email: str = "basil@localhost"

    def validate(self) -> list[Problem]:
        """Every problem at once: what vCenter would refuse, or the vSphere Client fail to load."""
        problems: list[Problem] = []
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", self.key):
            problems.append(Problem("key", f"must be letters, digits, dots, dashes; got {self.key!r}"))
        if not re.fullmatch(r"\d+(\.\d+){0,3}", self.version):
            problems.append(Problem("version", f"must be dotted numbers such as 1.2.0; got {self.version!r}"))
        url = urlsplit(self.manifest_url)
        if url.scheme != "https" or not url.hostname:
            problems.append(
                Problem("manifest_url", "must be an https URL (vCenter fetches the manifest over TLS)")
            )
        if not url.path.endswith("/plugin.json"):
            problems.append(Problem("manifest_url", "must end in /plugin.json"))
        if self.thumbprint is None and self.certificate is None:
            problems.append(
                Problem(
                    "plugin_thumbprint",
                    "give the plugin server's thumbprint or certificate so vCenter can trust it",
                )
            )
        if self.thumbprint is not None:
            hexdigits = self.thumbprint.replace(":", "")
            if len(hexdigits) not in (40, 64) or not _HEX.match(hexdigits):
                problems.append(
                    Problem("plugin_thumbprint", "must be a SHA-1 (40) or SHA-256 (64 hex digits) thumbprint")
                )
        return problems

    def extension(self, vim: Any, now: datetime.datetime) -> Any:
        """The ``vim.Extension`` to register."""
        description = vim.Description(label=self.label, summary=self.summary)
        server = vim.Extension.ServerInfo(
            url=self.manifest_url,
            description=description,
            company=self.company,
            type="HTTPS",
            adminEmail=[self.admin_email],
            serverThumbprint=self.thumbprint,
        )
        if self.certificate is not None:
            server.serverCertificate = self.certificate
        client = vim.Extension.ClientInfo(
            version=self.version,
            description=description,
            company=self.company,
            type=CLIENT_TYPE,
            url=self.manifest_url,
        )
        return vim.Extension(
            key=self.key,
            version=self.version,
            company=self.company,
            description=description,
            client=[client],
            server=[server],
            lastHeartbeatTime=now,
            shownInSolutionManager=False,
        )

    def matches(self, existing: Any) -> bool:
        """Whether a registered extension already is this registration (so nothing needs doing).

        A vCenter older than 8.0.2 keeps no server certificate (the field came with 8.0.2); one it
        dropped is not a difference: the thumbprint, which it keeps, pins the same certificate.
        """
        found = summarize(existing)
        wanted = self.summary_dict()
        for have, want in zip(found["servers"], wanted["servers"], strict=False):
            if have.get("certificate") is None:
                want["certificate"] = None
        return found == wanted

    def summary_dict(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "version": self.version,
            "company": self.company,
            "label": self.label,
            "summary": self.summary,
            "clients": [{"type": CLIENT_TYPE, "url": self.manifest_url, "version": self.version}],
            "servers": [
                {
                    "type": "HTTPS",
                    "url": self.manifest_url,
                    "thumbprint": self.thumbprint,
                    "certificate": self.certificate,
                }
            ],
        }


def summarize(ext: Any) -> dict[str, Any]:
    """The parts of a registered extension this script manages, as plain data."""
    desc = ext.description
    return {
        "key": ext.key,
        "version": ext.version,
        "company": ext.company,
        "label": desc.label if desc else None,
        "summary": desc.summary if desc else None,
        "clients": [{"type": c.type, "url": c.url, "version": c.version} for c in ext.client or []],
        "servers": [
            {
                "type": s.type,
                "url": s.url,
                "thumbprint": s.serverThumbprint,
                "certificate": getattr(s, "serverCertificate", None),
            }
            for s in ext.server or []
        ],
    }


def check_manifest(reg: PluginRegistration, timeout_s: float = 15.0) -> None:
    """Fetch the manifest as vCenter will (over TLS, trusting only the registered thumbprint) and
    make sure it is a plugin manifest: a registration vCenter cannot follow is refused up front."""
    import requests  # noqa: PLC0415

    from basil.vcenter.connection import TLSOptions, pinned_or_plain_session  # noqa: PLC0415

    url = reg.manifest_url

    def bad(why: str) -> ValidationError:
        return ValidationError([Problem("manifest_url", f"{url} {why}")])

    session = pinned_or_plain_session(TLSOptions(thumbprint=reg.thumbprint))
    try:
        resp = session.get(url, timeout=timeout_s, headers={"Accept": "application/json"})
    except requests.exceptions.SSLError as err:
        if "ingerprint" in str(err):
            raise bad("presents a certificate that does not match the plugin's thumbprint") from None
        raise bad(f"refused the TLS handshake ({type(err).__name__})") from None
    except requests.RequestException as err:
        raise bad(f"does not answer ({type(err).__name__})") from None
    finally:
        session.close()
    if resp.status_code != 200:
        raise bad(f"answered HTTP {resp.status_code}")
    try:
        doc = resp.json()
    except ValueError:
        doc = None
    if not isinstance(doc, dict) or "manifestVersion" not in doc:
        raise bad("is not a plugin manifest (no manifestVersion)")


def plugin_version() -> str:
    """The plugin's version, from plugin/package.json (the one version the build and vCenter see)."""
    data = json.loads((ROOT / "plugin" / "package.json").read_text(encoding="utf-8"))
    return str(data["version"])


class Registrar:
    """Register, update and unregister one extension through a connected :class:`VCenterConnection`."""

    def __init__(self, conn: Any) -> None:
        from basil.vcenter._vmomi import vim  # noqa: PLC0415

        self.conn = conn
        self.vim = vim
        self.manager = conn.content.extensionManager

    def find(self, key: str) -> Any | None:
        with self.conn.translate(f"looking up extension {key}"):
            return self.manager.FindExtension(key)

    def register(self, reg: PluginRegistration) -> str:
        """Create the extension, or bring an existing one to this registration; what was done."""
        raise_if_problems(reg.validate(), "plugin registration")
        existing = self.find(reg.key)
        if existing is not None and reg.matches(existing):
            return "unchanged"
        ext = reg.extension(self.vim, self._now())
        if existing is None:
            with self.conn.translate(f"registering extension {reg.key}"):
                self.manager.RegisterExtension(ext)
            return "registered"
        with self.conn.translate(f"updating extension {reg.key}"):
            self.manager.UpdateExtension(ext)
        return "updated"

    def update(self, reg: PluginRegistration) -> str:
        """Change a registered extension (a new version, URL or certificate); refuses an unknown key."""
        raise_if_problems(reg.validate(), "plugin registration")
        existing = self.find(reg.key)
        if existing is None:
            raise NotFoundError(
                f"extension {reg.key} is not registered with {self.conn.server}: register it first"
            )
        if reg.matches(existing):
            return "unchanged"
        with self.conn.translate(f"updating extension {reg.key}"):
            self.manager.UpdateExtension(reg.extension(self.vim, self._now()))
        return "updated"

    def unregister(self, key: str) -> str:
        if self.find(key) is None:
            return "not registered"
        with self.conn.translate(f"unregistering extension {key}"):
            self.manager.UnregisterExtension(key)
        return "unregistered"

    def _now(self) -> datetime.datetime:
        """vCenter's own clock, for the heartbeat time (the machine running this script may be off)."""
        with self.conn.translate("reading vCenter's time"):
            now: datetime.datetime = self.conn.ref(self.vim.ServiceInstance, "ServiceInstance").CurrentTime()
        return now


def _registration(kw: dict[str, Any]) -> PluginRegistration:
    certificate = None
    thumbprint = kw.pop("plugin_thumbprint")
    cert_path = kw.pop("plugin_cert")
    problems: list[Problem] = []
    if cert_path is not None:
        certificate, from_cert = pem_certificate(Path(cert_path))
        if thumbprint is not None and colon_thumbprint(thumbprint) != from_cert:
            problems.append(Problem("plugin_thumbprint", "does not match --plugin-cert's SHA-256 thumbprint"))
        thumbprint = from_cert
    raise_if_problems(problems, "plugin registration")
    return PluginRegistration(
        key=kw.pop("key"),
        version=kw.pop("version") or plugin_version(),
        manifest_url=kw.pop("manifest_url"),
        thumbprint=colon_thumbprint(thumbprint) if thumbprint else None,
        certificate=certificate,
        company=kw.pop("company"),
        label=kw.pop("label"),
        summary=kw.pop("summary"),
        admin_email=kw.pop("admin_email"),
    )


def _connect(kw: dict[str, Any]) -> Any:
    from basil.cli.vcenter import _params  # noqa: PLC0415
    from basil.vcenter.connection import VCenterConnection  # noqa: PLC0415

    return VCenterConnection(_params(kw))


def _plugin_options(f: Any) -> Any:
    options = [
        click.option("--key", default=DEFAULT_KEY, show_default=True, help="Extension key."),
        click.option("--version", default=None, help="Plugin version (default: plugin/package.json's)."),
        click.option(
            "--manifest-url", required=True, help="https://HOST:PORT/plugin/plugin.json of the Basil service."
        ),
        click.option(
            "--plugin-thumbprint", help="SHA-256 (or SHA-1) thumbprint of the Basil service's certificate."
        ),
        click.option(
            "--plugin-cert",
            type=click.Path(dir_okay=False, exists=True),
            help="PEM certificate of the Basil service (registered, with its SHA-256 thumbprint).",
        ),
        click.option("--company", default="Basil", show_default=True),
        click.option("--label", default="Basil", show_default=True),
        click.option("--summary", default="IO load balancing and storage QoS for vSphere", show_default=True),
        click.option("--admin-email", default="basil@localhost", show_default=True),
        click.option(
            "--skip-manifest-check",
            is_flag=True,
            help="Register without first fetching the manifest URL (the service is not up yet).",
        ),
    ]
    for option in reversed(options):
        f = option(f)
    return f


@click.group()
def main() -> None:
    """Register Basil's remote plugin with a vCenter (ExtensionManager)."""


def _run(action: str, kw: dict[str, Any]) -> None:
    try:
        if action == "unregister":
            key = kw.pop("key")
            with _connect(kw) as conn:
                outcome = Registrar(conn).unregister(key)
            click.echo(f"{outcome}: {key}")
            return
        skip_check = kw.pop("skip_manifest_check")
        reg = _registration(kw)
        raise_if_problems(reg.validate(), "plugin registration")
        if not skip_check:
            check_manifest(reg)
        with _connect(kw) as conn:
            registrar = Registrar(conn)
            outcome = registrar.register(reg) if action == "register" else registrar.update(reg)
        click.echo(f"{outcome}: {reg.key} {reg.version} ({CLIENT_TYPE}, {reg.manifest_url})")
    except BasilError as err:
        click.echo(f"error: {err}", err=True)
        sys.exit(2)


@main.command()
@connection_options
@_plugin_options
def register(**kw: Any) -> None:
    """Register the plugin, or bring an existing registration up to date (idempotent)."""
    _run("register", kw)


@main.command()
@connection_options
@_plugin_options
def update(**kw: Any) -> None:
    """Update a registered plugin (new version, manifest URL or certificate)."""
    _run("update", kw)


@main.command()
@connection_options
@click.option("--key", default=DEFAULT_KEY, show_default=True, help="Extension key.")
def unregister(**kw: Any) -> None:
    """Remove the plugin's registration (nothing to do when it is not registered)."""
    _run("unregister", kw)


@main.command()
@connection_options
@click.option("--key", default=DEFAULT_KEY, show_default=True, help="Extension key.")
def show(**kw: Any) -> None:
    """Print the plugin's registration as JSON (null when it is not registered)."""
    key = kw.pop("key")
    try:
        with _connect(kw) as conn:
            ext = Registrar(conn).find(key)
            click.echo(json.dumps(summarize(ext) if ext is not None else None, indent=2))
    except BasilError as err:
        click.echo(f"error: {err}", err=True)
        sys.exit(2)


if __name__ == "__main__":
    main()
