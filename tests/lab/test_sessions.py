"""Sessions: the vSphere Client's clone-ticket endpoint a remote plugin server uses, CloneSession,
the loss of every session, and the extension registration of a remote plugin."""

from __future__ import annotations

import ssl
import time
from typing import Any

import pytest
import requests
from pyVim.connect import SmartStubAdapter
from pyVmomi import vim, vmodl

from tests.lab.helpers import objects
from tests.lab_vcenter import LabInstance


def http(lab: LabInstance) -> requests.Session:
    session = requests.Session()
    session.trust_env = False  # else REQUESTS_CA_BUNDLE overrides the session's verify
    session.verify = str(lab.ca_pem)
    return session


def soap_session_id(si: Any) -> str:
    # pyVmomi keeps the session cookie as 'vmware_soap_session="<id>"; ...'
    return str(si._stub.cookie.split("=", 1)[1].split(";", 1)[0].strip('"'))


def clone(lab: LabInstance, ticket: str) -> tuple[Any, Any]:
    stub = SmartStubAdapter(
        host=lab.host, port=lab.port, sslContext=ssl.create_default_context(cafile=str(lab.ca_pem))
    )
    sessions = vim.ServiceInstance("ServiceInstance", stub).RetrieveContent().sessionManager
    return stub, sessions


def test_clone_ticket_for_a_client_session_token(lab: LabInstance, si: Any) -> None:
    guid = si.RetrieveContent().about.instanceUuid
    with http(lab) as web:
        api_token = web.post(lab.base_url + "/api/session", auth=(lab.user, lab.password)).json()
        for token in (soap_session_id(si), api_token):
            res = web.post(
                lab.base_url + "/api/ui/vcenter/session/clone-ticket",
                headers={"vmware-api-session-id": token},
                json={"vc_guid": guid},
            )
            assert res.status_code == 200, res.text
            ticket = res.json()["session_clone_ticket"]
            stub, sessions = clone(lab, ticket)
            again, sessions_again = clone(lab, ticket)
            try:
                user = sessions.CloneSession(ticket)
                assert user.userName == lab.user
                assert sessions.currentSession.userName == lab.user
                with pytest.raises(vim.fault.InvalidLogin):  # a ticket serves once
                    sessions_again.CloneSession(ticket)
            finally:
                stub.DropConnections()
                again.DropConnections()
        refused = web.post(
            lab.base_url + "/api/ui/vcenter/session/clone-ticket",
            headers={"vmware-api-session-id": "not-a-session"},
            json={"vc_guid": guid},
        )
        assert refused.status_code == 401


def test_session_loss_invalidates_every_session(lab: LabInstance, si: Any) -> None:
    with http(lab) as web:
        token = web.post(lab.base_url + "/api/session", auth=(lab.user, lab.password)).json()
        assert lab.control("POST", "faults/session-loss")["sessions"] >= 2
        with pytest.raises(vim.fault.NotAuthenticated):
            objects(si, vim.VirtualMachine)
        assert (
            web.get(lab.base_url + "/api/session", headers={"vmware-api-session-id": token}).status_code
            == 401
        )
    si.RetrieveContent().sessionManager.Login(lab.user, lab.password)
    assert "db-1" in objects(si, vim.VirtualMachine)


def test_added_latency_slows_every_call(lab: LabInstance, si: Any) -> None:
    content = si.RetrieveContent()
    assert lab.control("PUT", "faults/latency", {"ms": 300})["latency_ms"] == 300
    start = time.monotonic()
    content.sessionManager.currentSession  # noqa: B018 - a property read is a call
    # A lower bound only: a loaded machine can make a call slower, never faster than the delay.
    assert time.monotonic() - start >= 0.3
    # That clearing removes it is read from the lab's state (it delays calls only while that is
    # non-zero), not timed: no upper bounds on a shared machine.
    assert lab.control("DELETE", "faults")["latency_ms"] == 0
    assert lab.control("GET", "faults")["latency_ms"] == 0
    assert content.sessionManager.currentSession.userName == lab.user


def test_remote_plugin_extension_registration(lab: LabInstance, si: Any) -> None:
    manager = si.RetrieveContent().extensionManager
    client = vim.Extension.ClientInfo(
        version="1.0.0",
        company="Basil",
        type="vsphere-client-remote",
        url="https://127.0.0.1:8443/plugin/plugin.json",
        description=vim.Description(label="Basil", summary="IO load balancing"),
    )
    ext = vim.Extension(
        key="io.basil.plugin",
        version="1.0.0",
        company="Basil",
        description=vim.Description(label="Basil", summary="IO load balancing"),
        client=[client],
        lastHeartbeatTime=si.CurrentTime(),
    )
    manager.RegisterExtension(ext)
    found = manager.FindExtension("io.basil.plugin")
    assert found.client[0].type == "vsphere-client-remote"
    assert found.client[0].url.endswith("plugin.json")
    with pytest.raises(vmodl.fault.InvalidArgument):
        manager.RegisterExtension(ext)  # the key is taken
    client.version = "1.1.0"
    manager.UpdateExtension(ext)
    assert manager.FindExtension("io.basil.plugin").client[0].version == "1.1.0"
    client.url = "http://127.0.0.1:8443/plugin.json"
    with pytest.raises(vmodl.fault.InvalidArgument, match="https"):
        manager.UpdateExtension(ext)
    manager.UnregisterExtension("io.basil.plugin")
    assert manager.FindExtension("io.basil.plugin") is None
