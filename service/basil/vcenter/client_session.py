"""Who is behind a vSphere Client session token: the remote-plugin clone-ticket flow.

A remote plugin's UI gets the user's session token from ``htmlClientSdk.app.getSessionInfo`` and
sends it to its server, which must not trust it as such. The server asks vCenter to turn it into a
clone ticket (``POST /api/ui/vcenter/session/clone-ticket`` with the token in
``vmware-api-session-id`` and vCenter's instance UUID), redeems the ticket with
``SessionManager.CloneSession`` on a fresh SOAP connection, reads the user name and the privileges
of that cloned session, and logs it out at once. Nothing here keeps the token or the ticket.
"""

from __future__ import annotations

import http.client
import logging
import ssl
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any
from xml.parsers.expat import ExpatError

import requests

from basil.errors import AuthenticationError
from basil.vcenter._vmomi import SoapAdapter, vim, vmodl
from basil.vcenter.connection import ConnectionParams, _PinnedHTTPSConnection, pinned_or_plain_session
from basil.vcenter.errors import VCenterConnectionError, VCenterTLSError, error_from_fault

log = logging.getLogger(__name__)

CLONE_TICKET_PATH = "/api/ui/vcenter/session/clone-ticket"
SESSION_HEADER = "vmware-api-session-id"
# vSphere 6.0's API: CloneSession and HasPrivilegeOnEntity are older than it, every supported
# vCenter still serves it, and it spares a version negotiation round trip per validation.
_API_VERSION = "vim.version.version10"


@dataclass(frozen=True)
class ClientSession:
    """The vCenter user behind a validated session token and which of the asked privileges it holds."""

    server: str
    user: str
    granted: frozenset[str]


def validate_client_session(
    params: ConnectionParams, token: str, privileges: Sequence[str] = ()
) -> ClientSession:
    """Validate *token* against the vCenter of *params* (server and TLS; its credentials are not used).

    Raises :class:`AuthenticationError` when vCenter does not accept the token, and a
    :class:`VCenterError` subclass when vCenter cannot be reached or fails.
    """
    if not token.strip():
        raise AuthenticationError("empty vCenter session token")
    host, port = params.host_port()
    soap = SoapAdapter.SoapStubAdapter(
        host=host,
        port=port,
        version=_API_VERSION,
        sslContext=params.tls.ssl_context(),
        httpConnectionTimeout=params.timeout_s,
    )
    if params.tls.pinned is not None:
        soap.scheme = partial(_PinnedHTTPSConnection, pin=params.tls.pinned)
    try:
        content = _soap_call(
            params,
            "reading the service content",
            vim.ServiceInstance("ServiceInstance", soap).RetrieveContent,
        )
        ticket = _clone_ticket(params, token, str(content.about.instanceUuid))
        manager = content.sessionManager
        try:
            user_session = manager.CloneSession(cloneTicket=ticket)
        except vim.fault.InvalidLogin:
            # The ticket was issued a moment ago: it is refused when the user's session ended meanwhile.
            raise AuthenticationError("vCenter refused the session's clone ticket") from None
        except vmodl.MethodFault as fault:
            raise error_from_fault(fault, f"cloning a client session on {params.server}") from None
        except (OSError, http.client.HTTPException, ExpatError) as err:
            raise _transport_error(params, "cloning a client session", err) from None
        try:
            granted: frozenset[str] = frozenset()
            if privileges:
                answers = _soap_call(
                    params,
                    "checking the session's privileges",
                    lambda: content.authorizationManager.HasPrivilegeOnEntity(
                        entity=content.rootFolder, sessionId=user_session.key, privId=list(privileges)
                    ),
                )
                granted = frozenset(p for p, ok in zip(privileges, answers, strict=True) if ok)
            return ClientSession(params.server, str(user_session.userName), granted)
        finally:
            _logout(params, manager)
    finally:
        soap.DropConnections()


def _soap_call(params: ConnectionParams, doing: str, fn: Any) -> Any:
    try:
        return fn()
    except ssl.SSLCertVerificationError as err:
        raise VCenterTLSError(
            f"{doing}: the certificate of {params.server} is not trusted: {err.verify_message}"
        ) from None
    except vmodl.MethodFault as fault:
        raise error_from_fault(fault, f"{doing} on {params.server}") from None
    except (OSError, http.client.HTTPException, ExpatError) as err:
        raise _transport_error(params, doing, err) from None


def _transport_error(params: ConnectionParams, doing: str, err: Exception) -> VCenterConnectionError:
    if isinstance(err, VCenterConnectionError):
        return err
    return VCenterConnectionError(f"{doing} on {params.server}: {type(err).__name__}: {err}")


def _http_session(params: ConnectionParams) -> requests.Session:
    return pinned_or_plain_session(params.tls)  # the trust chosen in the config, not REQUESTS_CA_BUNDLE


def _clone_ticket(params: ConnectionParams, token: str, instance_uuid: str) -> str:
    """Trade the client's session token for a one-time clone ticket (the vSphere Client's REST endpoint)."""
    url = f"https://{params.server}{CLONE_TICKET_PATH}"
    with _http_session(params) as http:
        try:
            resp = http.post(
                url,
                headers={SESSION_HEADER: token, "Accept": "application/json"},
                json={"vc_guid": instance_uuid},
                timeout=params.timeout_s,
            )
        except requests.exceptions.SSLError as err:
            raise VCenterTLSError(f"the certificate of {params.server} is not trusted: {err}") from None
        except requests.RequestException as err:
            raise VCenterConnectionError(
                f"asking {params.server} for a clone ticket: {type(err).__name__}"
            ) from None
    if resp.status_code in (401, 403):
        raise AuthenticationError("vCenter does not recognise the session token (expired or logged out?)")
    if resp.status_code != 200:
        raise VCenterConnectionError(
            f"{params.server} answered {resp.status_code} to the clone-ticket request: {_vapi_message(resp)}"
        )
    try:
        ticket = resp.json().get("session_clone_ticket")
    except ValueError:
        ticket = None
    if not isinstance(ticket, str) or not ticket:
        raise VCenterConnectionError(f"{params.server} answered the clone-ticket request without a ticket")
    return ticket


def _vapi_message(resp: requests.Response) -> str:
    try:
        body = resp.json()
        messages = body.get("messages") or body.get("value", {}).get("messages") or []
        return "; ".join(str(m.get("default_message", "")) for m in messages) or resp.reason
    except (ValueError, AttributeError):
        return str(resp.reason)


def _logout(params: ConnectionParams, manager: Any) -> None:
    try:
        manager.Logout()
    except (vmodl.MethodFault, OSError, http.client.HTTPException, ExpatError) as err:
        # The cloned session then ends by vCenter's idle timeout; the validation itself stands.
        log.info("logging out the cloned session on %s: %s", params.server, type(err).__name__)
