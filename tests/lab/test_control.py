"""The control API of the running lab binary: it needs the lab's credentials, and a JSON
Content-Type for what changes state, so neither another local process without the password nor a
cross-site form POST from a browser can reset the lab or inject faults."""

from __future__ import annotations

import requests

from tests.lab_vcenter import LabInstance


def web(lab: LabInstance) -> requests.Session:
    session = requests.Session()
    session.trust_env = False  # else REQUESTS_CA_BUNDLE overrides the session's verify
    session.verify = str(lab.ca_pem)
    return session


def test_control_needs_the_labs_credentials(lab: LabInstance) -> None:
    with web(lab) as http:
        for method, path in (("POST", "reset"), ("POST", "faults/session-loss"), ("GET", "truth")):
            res = http.request(method, lab.control_url + path, json={})
            assert res.status_code == 401, (method, path, res.text)
            assert res.headers["WWW-Authenticate"].startswith("Basic ")
        wrong = http.put(lab.control_url + "time", json={"speed": 60}, auth=(lab.user, "not-the-password"))
        assert wrong.status_code == 401
    assert lab.control("GET", "time")["speed"] == 0  # nothing refused changed the lab


def test_a_form_post_is_refused_even_with_credentials(lab: LabInstance) -> None:
    with web(lab) as http:
        # What an HTML form on another site makes a browser send (Basic credentials it remembers).
        res = http.post(
            lab.control_url + "faults/rules",
            data={"method": "RelocateVM_Task", "fault": "TaskInProgress"},
            auth=(lab.user, lab.password),
        )
        assert res.status_code == 415, res.text
        assert "application/json" in res.json()["error"]
    assert lab.control("GET", "faults")["rules"] == []
