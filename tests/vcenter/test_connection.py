"""Connecting to the lab vCenter: TLS trust, login, a lost session, retries and what reaches the logs."""

from __future__ import annotations

import logging
import time

import pytest

from basil.vcenter.connection import TLSOptions, VCenterConnection, fetch_server_thumbprint
from basil.vcenter.errors import VCenterAuthenticationError, VCenterConnectionError, VCenterTLSError
from basil.vcenter.inventory import fetch_inventory
from basil.vcenter.types import Inventory

from .labvc import LabVC

pytestmark = pytest.mark.lab


def test_default_tls_refuses_the_labs_self_signed_certificate(lab_vc: LabVC) -> None:
    with pytest.raises(VCenterTLSError, match="not trusted"):
        VCenterConnection(lab_vc.connection_params(tls=TLSOptions())).connect()


def test_ca_bundle_with_the_labs_certificate_is_accepted(lab_vc: LabVC) -> None:
    with VCenterConnection(lab_vc.connection_params(tls=TLSOptions(ca_bundle=lab_vc.pem))) as c:
        assert c.content.about.apiType == "VirtualCenter"


@pytest.mark.parametrize("length", [40, 64], ids=["sha1", "sha256"])
def test_pinned_thumbprint_is_accepted(lab_vc: LabVC, lab_thumbprint: str, length: int) -> None:
    tp = lab_thumbprint if length == 64 else fetch_server_thumbprint(lab_vc.server, length=40)
    colons = ":".join(tp[i : i + 2] for i in range(0, len(tp), 2)).upper()
    with VCenterConnection(lab_vc.connection_params(tls=TLSOptions(thumbprint=colons))) as c:
        assert c.content.about.apiType == "VirtualCenter"
        # Every pooled connection is checked, not only the first: run a few calls.
        assert fetch_inventory(c, with_tags=False).hosts


def test_wrong_pin_is_refused_before_any_login(lab_vc: LabVC, lab_thumbprint: str) -> None:
    wrong = ("0" if lab_thumbprint[0] != "0" else "1") + lab_thumbprint[1:]
    c = VCenterConnection(lab_vc.connection_params(tls=TLSOptions(thumbprint=wrong)))
    with pytest.raises(VCenterTLSError, match="does not match the pinned thumbprint"):
        c.connect()
    assert c.requests_made == 1  # the version probe only: no login was attempted


def test_insecure_warns(lab_vc: LabVC, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="basil.vcenter")
    with VCenterConnection(lab_vc.connection_params(tls=TLSOptions(verify=False))) as c:
        assert c.content.about.apiType == "VirtualCenter"
    assert any("verification is OFF" in r.getMessage() for r in caplog.records)


def test_wrong_password_is_a_typed_error_without_the_password(lab_vc: LabVC) -> None:
    with pytest.raises(VCenterAuthenticationError) as info:
        VCenterConnection(lab_vc.connection_params(password="not-the-password-42")).connect()
    assert info.value.fault == "InvalidLogin"
    assert "not-the-password-42" not in str(info.value)


def test_unreachable_server_is_a_connection_error(lab_vc: LabVC) -> None:
    with pytest.raises(VCenterConnectionError, match="cannot reach"):
        VCenterConnection(lab_vc.connection_params(server="127.0.0.1:9", retries=0)).connect()


def test_lost_session_recovers_by_logging_in_again(lab_vc: LabVC, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="basil.vcenter")
    with (
        VCenterConnection(lab_vc.connection_params()) as victim,
        VCenterConnection(lab_vc.connection_params()) as admin,
    ):
        key = victim.content.sessionManager.currentSession.key
        admin.content.sessionManager.TerminateSession(sessionId=[key])
        # The next call meets NotAuthenticated, logs in again and succeeds.
        inv = fetch_inventory(victim, with_tags=False)
        assert isinstance(inv, Inventory)
        assert inv.vms
        assert victim.content.sessionManager.currentSession.key != key
    assert any("session on" in r.getMessage() and "lost" in r.getMessage() for r in caplog.records)


def test_session_cookie_login_and_no_relogin_without_password(lab_vc: LabVC) -> None:
    with (
        VCenterConnection(lab_vc.connection_params()) as owner,
        VCenterConnection(lab_vc.connection_params()) as admin,
    ):
        cookie = owner._soap.GetSessionId()  # the vmware_soap_session value
        borrowed = VCenterConnection(
            lab_vc.connection_params(user=None, password=None, session_cookie=cookie)
        )
        with borrowed:
            session = borrowed.content.sessionManager.currentSession
            assert session.key == owner.content.sessionManager.currentSession.key
            admin.content.sessionManager.TerminateSession(sessionId=[session.key])
            with pytest.raises(VCenterAuthenticationError, match="no password to log in again"):
                fetch_inventory(borrowed, with_tags=False)
        # A borrowed session is not Basil's to end: closing it sent no Logout; the owner, who has
        # the password, simply logs in again.
        assert fetch_inventory(owner, with_tags=False).vms


def test_no_secret_in_any_log_line(lab_vc: LabVC, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    secret = lab_vc.password
    with VCenterConnection(lab_vc.connection_params()) as c:
        fetch_inventory(c, with_tags=True)
        key = c.content.sessionManager.currentSession.key
        with VCenterConnection(lab_vc.connection_params()) as other:
            other.content.sessionManager.TerminateSession(sessionId=[key])
        fetch_inventory(c, with_tags=False)  # re-login
    with pytest.raises(VCenterAuthenticationError):
        VCenterConnection(lab_vc.connection_params(password=secret + "-wrong")).connect()
    text = "\n".join(f"{r.name} {r.getMessage()} {r.exc_text or ''}" for r in caplog.records)
    assert len(caplog.records) > 3  # DEBUG logging really was captured
    assert secret not in text
    assert key not in text  # nor a session id


def test_keepalive_touches_the_session_and_renews_a_lost_one(lab_vc: LabVC) -> None:
    with VCenterConnection(lab_vc.connection_params(keepalive_s=0.1)) as c:
        lab_vc.session_loss()
        start = c.requests_made
        deadline = time.monotonic() + 30
        # Without any call of ours, the keep-alive thread reaches vCenter (and logs in again).
        while c.requests_made < start + 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert c.requests_made >= start + 3
        assert fetch_inventory(c, with_tags=False).vms


def test_close_logs_out(lab_vc: LabVC) -> None:
    with VCenterConnection(lab_vc.connection_params()) as watcher:
        c = VCenterConnection(lab_vc.connection_params()).connect()
        key = c.content.sessionManager.currentSession.key
        assert key in {s.key for s in watcher.content.sessionManager.sessionList}
        c.close()
        assert key not in {s.key for s in watcher.content.sessionManager.sessionList}
        with pytest.raises(VCenterConnectionError, match="not connected"):
            _ = c.content
