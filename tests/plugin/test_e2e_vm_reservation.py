"""The VM view's reservation suggestion in Debian's chromium, against the real service and the lab (BASIL
§6.2 scenario, simulated time stepped): an operator uploads a lab disk's request trace (GET /lab/trace)
through the view's "Upload trace…" control, and the view shows the suggestion the service kept beside
the reservation the VM's pool tree gives it. Screenshot in test-artifacts/plugin/."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from tests.vcenter.labproc import ROOT, LabProcess

from .e2e import Basil, shot, start_basil
from .test_e2e_navigation import sign_in

pytestmark = [pytest.mark.lab, pytest.mark.browser]

VM = "oltp-2"
RESERVATION = 150


@pytest.fixture(scope="module")
def stepped_basil() -> Iterator[Basil]:
    with LabProcess.start(ROOT / "lab" / "scenarios" / "basil-6.2.yaml", speed=0) as lab:
        lab.step(3)  # a minute solved: what the trace is drawn from
        yield from start_basil(lab)


def test_an_operator_uploads_a_trace_in_the_vm_view_and_sees_the_suggestion(
    page: Any, stepped_basil: Basil, tmp_path: Path
) -> None:
    basil = stepped_basil
    lab = basil.lab
    detail = basil.api("GET", f"/vms/{VM}")
    data_disk = detail["disks"][-1]
    tree = {
        "name": "ui-reservation",
        "datastore": data_disk["datastore_name"],
        "root": {"reservation": 300},
        "pools": [{"name": "gold", "children": [{"vm": VM, "reservation": RESERVATION}]}],
    }
    basil.api("POST", "/pools", role="operator", body=tree, expect=201)
    resp = requests.get(
        f"{lab.instance.control_url}trace?vm={VM}&unit={data_disk['instance']}&intervals=3&format=csv&seed=4",
        auth=(lab.user, lab.password),
        verify=lab.pem,
        timeout=60,
    )
    assert resp.status_code == 200, resp.text
    trace = tmp_path / "oltp-2.csv"
    trace.write_text(resp.text, encoding="utf-8")

    sign_in(page, basil, f"#/vm/{detail['id']}", role="operator")
    panel = page.get_by_test_id("vm-reservation")
    panel.get_by_test_id("no-suggestion").wait_for()
    panel.get_by_test_id("trace-upload-open").click()
    page.get_by_test_id("trace-file").set_input_files(str(trace))
    page.get_by_test_id("trace-fraction").fill("0.99")
    page.get_by_test_id("trace-bound").fill("20")
    page.get_by_test_id("trace-submit").click()
    panel.get_by_test_id("res-suggested").wait_for()

    kept = basil.api("GET", f"/vms/{detail['id']}/reservation", role="viewer")
    suggestion = kept["suggestion"]
    assert (suggestion["fraction"], suggestion["bound_ms"]) == (0.99, 20)
    assert suggestion["trace"]["format"] == "csv"
    assert suggestion["uploaded_by"] == "e2e-operator"
    assert f"{suggestion['reservation_iops']:,} IOPS" in panel.get_by_test_id("res-suggested").inner_text()
    assert "99 % of IOs within 20 ms" in panel.get_by_test_id("res-target").inner_text()
    current = (
        panel.get_by_test_id("res-current").text_content() or ""
    )  # the label as written (CSS capitalises it)
    assert "pool tree ui-reservation, pool gold" in current
    assert f"{RESERVATION} IOPS" in current
    meets = panel.get_by_test_id("res-meets").inner_text()
    assert meets.endswith("yes" if kept["meets_target"] else "no"), meets
    assert f"{suggestion['trace']['requests']:,} requests" in panel.get_by_test_id("res-trace").inner_text()
    shot(page, "vm-reservation", full_page=True)
