"""scripts/register_plugin.py against the lab vCenter's ExtensionManager: register, update, unregister,
idempotent, and every bad argument named before vCenter is asked anything."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from basil.errors import NotFoundError, ValidationError
from basil.vcenter.connection import VCenterConnection
from tests.lab_vcenter import LabInstance

from .conftest import ROOT

KEY = "io.basil.vsphere.test"
URL = "https://basil.example.test:8443/plugin/plugin.json"
THUMB = "AB:" * 31 + "CD"


def registration(mod: ModuleType, **kw: Any) -> Any:
    fields: dict[str, Any] = {"key": KEY, "version": "0.1.0", "manifest_url": URL, "thumbprint": THUMB}
    fields.update(kw)
    return mod.PluginRegistration(**fields)


def test_register_update_unregister_converge(register_plugin: ModuleType, vc: VCenterConnection) -> None:
    registrar = register_plugin.Registrar(vc)
    registrar.unregister(KEY)
    assert registrar.register(registration(register_plugin)) == "registered"

    ext = vc.content.extensionManager.FindExtension(KEY)
    assert ext is not None
    assert [(c.type, c.url, c.version) for c in ext.client] == [("vsphere-client-remote", URL, "0.1.0")]
    assert [(s.type, s.url, s.serverThumbprint) for s in ext.server] == [("HTTPS", URL, THUMB)]
    assert ext.description.label == "Basil"
    first_beat = ext.lastHeartbeatTime

    # Idempotent: the same registration again changes nothing.
    assert registrar.register(registration(register_plugin)) == "unchanged"
    assert registrar.update(registration(register_plugin)) == "unchanged"
    assert vc.content.extensionManager.FindExtension(KEY).lastHeartbeatTime == first_beat

    # A new version and manifest URL: register converges on it, update does too.
    assert registrar.register(registration(register_plugin, version="0.2.0")) == "updated"
    new_url = "https://basil2.example.test/plugin/plugin.json"
    assert registrar.update(registration(register_plugin, version="0.2.0", manifest_url=new_url)) == "updated"
    ext = vc.content.extensionManager.FindExtension(KEY)
    assert (ext.version, ext.client[0].version, ext.client[0].url) == ("0.2.0", "0.2.0", new_url)
    assert ext.server[0].url == new_url

    assert registrar.unregister(KEY) == "unregistered"
    assert vc.content.extensionManager.FindExtension(KEY) is None
    assert registrar.unregister(KEY) == "not registered"


def test_update_of_an_unknown_plugin_is_refused(register_plugin: ModuleType, vc: VCenterConnection) -> None:
    registrar = register_plugin.Registrar(vc)
    registrar.unregister(KEY + ".other")
    with pytest.raises(NotFoundError, match="not registered"):
        registrar.update(registration(register_plugin, key=KEY + ".other"))
    assert vc.content.extensionManager.FindExtension(KEY + ".other") is None


def test_bad_registration_names_every_field_and_changes_nothing(
    register_plugin: ModuleType, vc: VCenterConnection
) -> None:
    registrar = register_plugin.Registrar(vc)
    bad = registration(
        register_plugin, key="bad key!", version="one", manifest_url="http://x/manifest", thumbprint=None
    )
    with pytest.raises(ValidationError) as err:
        registrar.register(bad)
    fields = sorted({p.field for p in err.value.problems})
    assert fields == ["key", "manifest_url", "plugin_thumbprint", "version"]
    assert vc.content.extensionManager.FindExtension("bad key!") is None


def test_certificate_gives_thumbprint_and_is_registered(
    register_plugin: ModuleType, vc: VCenterConnection, registration_lab: LabInstance
) -> None:
    assert registration_lab.ca_pem is not None
    assert registration_lab.thumbprint_sha256 is not None
    pem, thumb = register_plugin.pem_certificate(Path(registration_lab.ca_pem))
    assert thumb == registration_lab.thumbprint_sha256.upper()
    registrar = register_plugin.Registrar(vc)
    registrar.unregister(KEY)
    assert (
        registrar.register(registration(register_plugin, thumbprint=thumb, certificate=pem)) == "registered"
    )
    server = vc.content.extensionManager.FindExtension(KEY).server[0]
    assert server.serverThumbprint == thumb
    assert "BEGIN CERTIFICATE" in server.serverCertificate
    registrar.unregister(KEY)


def _run(lab: LabInstance, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "BASIL_VCENTER_SERVER": f"{lab.host}:{lab.port}",
        "BASIL_VCENTER_USER": lab.user,
        "BASIL_VCENTER_PASSWORD": lab.password,
    }
    cmd = [sys.executable, str(ROOT / "scripts" / "register_plugin.py"), *args]
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120, check=False)


def test_command_line_registers_once_and_reports(registration_lab: LabInstance) -> None:
    assert registration_lab.ca_pem is not None
    common = ["--ca-bundle", str(registration_lab.ca_pem), "--key", KEY + ".cli"]
    plugin = ["--manifest-url", URL, "--plugin-cert", str(registration_lab.ca_pem), "--skip-manifest-check"]
    _run(registration_lab, "unregister", *common)
    first = _run(registration_lab, "register", *common, *plugin)
    assert first.returncode == 0, first.stderr
    assert first.stdout.startswith(f"registered: {KEY}.cli 0.1.0 (vsphere-client-remote, {URL})")
    again = _run(registration_lab, "register", *common, *plugin)
    assert again.stdout.startswith("unchanged:"), again.stderr
    shown = _run(registration_lab, "show", *common)
    assert '"type": "vsphere-client-remote"' in shown.stdout
    gone = _run(registration_lab, "unregister", *common)
    assert gone.stdout.strip() == f"unregistered: {KEY}.cli"


def test_command_line_refuses_bad_input_with_exit_2(registration_lab: LabInstance) -> None:
    assert registration_lab.ca_pem is not None
    out = _run(
        registration_lab,
        "register",
        "--ca-bundle",
        str(registration_lab.ca_pem),
        "--manifest-url",
        "http://basil/plugin.json",
        "--plugin-thumbprint",
        "12:34",
    )
    assert out.returncode == 2
    assert out.stderr.startswith("error: ")
    assert "manifest_url" in out.stderr
    assert "plugin_thumbprint" in out.stderr


# --- the manifest URL is checked, and a certificate vCenter drops is not a change ---------------------


@pytest.fixture(scope="module")
def manifest_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path, str]]:
    """An HTTPS server answering /plugin/plugin.json (the repository's manifest) with a self-signed
    certificate: its URL, its certificate (PEM) and its SHA-256 thumbprint."""
    import http.server  # noqa: PLC0415
    import ssl  # noqa: PLC0415
    import threading  # noqa: PLC0415

    from basil.config.schema import ServerConfig, ServerTLSConfig  # noqa: PLC0415
    from basil.serve.tls import server_certificate  # noqa: PLC0415

    tmp = tmp_path_factory.mktemp("manifest")
    cert = server_certificate(
        ServerConfig(listen="127.0.0.1:8443", tls=ServerTLSConfig(dir=str(tmp / "tls")))  # type: ignore[arg-type]
    )
    body = (ROOT / "plugin" / "plugin.json").read_bytes()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            found = self.path == "/plugin/plugin.json"
            self.send_response(200 if found else 404)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(body if found else b"{}")

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert.cert, cert.key)
    server.socket = ctx.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"https://127.0.0.1:{server.server_address[1]}/plugin/plugin.json", cert.cert, cert.sha256
    server.shutdown()
    server.server_close()


def test_a_certificate_vcenter_drops_is_not_updated_on_every_run(
    register_plugin: ModuleType,
    vc: VCenterConnection,
    registration_lab: LabInstance,
    manifest_server: tuple[str, Path, str],
) -> None:
    url, pem_path, _ = manifest_server
    pem, thumb = register_plugin.pem_certificate(pem_path)
    reg = registration(register_plugin, manifest_url=url, thumbprint=thumb, certificate=pem)
    registrar = register_plugin.Registrar(vc)
    registrar.unregister(KEY)
    registration_lab.control("PUT", "settings", {"drop_server_certificate": True})  # a vCenter before 8.0.2
    try:
        assert registrar.register(reg) == "registered"
        assert vc.content.extensionManager.FindExtension(KEY).server[0].serverCertificate is None
        assert registrar.register(reg) == "unchanged"
        assert registrar.update(reg) == "unchanged"
    finally:
        registration_lab.control("PUT", "settings", {"drop_server_certificate": False})
        registrar.unregister(KEY)


def test_the_manifest_url_is_fetched_as_vcenter_will_before_registering(
    register_plugin: ModuleType, manifest_server: tuple[str, Path, str]
) -> None:
    from tests.ports import free_port  # noqa: PLC0415

    url, _, sha256 = manifest_server
    register_plugin.check_manifest(registration(register_plugin, manifest_url=url, thumbprint=sha256))
    refusals = {
        f"https://127.0.0.1:{free_port()}/plugin/plugin.json": (sha256, "does not answer"),
        url: ("AB:" * 31 + "CD", "does not match the plugin's thumbprint"),
        url.replace("/plugin/plugin.json", "/other/plugin.json"): (sha256, "answered HTTP 404"),
    }
    for bad_url, (thumb, why) in refusals.items():
        with pytest.raises(ValidationError, match="manifest_url") as err:
            register_plugin.check_manifest(
                registration(register_plugin, manifest_url=bad_url, thumbprint=thumb)
            )
        assert why in str(err.value)


def test_command_line_refuses_a_manifest_url_that_does_not_answer(registration_lab: LabInstance) -> None:
    from tests.ports import free_port  # noqa: PLC0415

    assert registration_lab.ca_pem is not None
    closed = f"https://127.0.0.1:{free_port()}/plugin/plugin.json"
    common = ["--ca-bundle", str(registration_lab.ca_pem), "--key", KEY + ".checked"]
    out = _run(registration_lab, "register", *common, "--manifest-url", closed, "--plugin-thumbprint", THUMB)
    assert out.returncode == 2
    assert f"manifest_url: {closed} does not answer" in out.stderr
