"""The plugin's navigation and what-if in Debian's chromium against the real service and the lab vCenter.

From the overview to a VM through the VM list (search, link), on to the datastore its disk is on and
back, an unknown VM's way back, and the "What if…" dialog of a datastore answering with the service's
prediction. Screenshots go to test-artifacts/plugin/.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
import requests

from .e2e import POD, Basil, shot

pytestmark = [pytest.mark.lab, pytest.mark.browser]


def sign_in(page: Any, basil: Basil, route: str, role: str = "viewer") -> None:
    page.goto(f"{basil.url}/plugin/index.html{route}")
    page.get_by_test_id("token-input").fill(basil.tokens[role])
    page.get_by_test_id("token-submit").click()
    page.get_by_test_id("token-screen").wait_for(state="detached")


@pytest.fixture(scope="module")
def sampled(basil: Basil) -> Basil:
    """The service after collecting and modelling: every active disk has samples (what the what-if reads)
    and a workload model (the VM view's charts)."""
    for _ in range(2):
        basil.collect(3)
        basil.run_job("model")
    return basil


def a_vm_on_the_pod(basil: Basil) -> dict[str, Any]:
    """A VM of the pod with a disk, as the list endpoint gives it."""
    vms = basil.api("GET", f"/vms?pod={POD}&sort=name&limit=100")["items"]
    vm: dict[str, Any] | None = next((v for v in vms if v["disks"] > 0), None)
    assert vm is not None, vms
    return vm


def test_overview_to_a_vm_and_back_through_the_lists_and_links(page: Any, sampled: Basil) -> None:
    failed: list[str] = []
    # The page's own files (the icon included) all load; API answers such as "no recommendation yet"
    # (404) are the views' business.
    page.on(
        "response",
        lambda r: (
            failed.append(f"{r.status} {r.url}") if r.status >= 400 and "/api/v1/" not in r.url else None
        ),
    )
    vm = a_vm_on_the_pod(sampled)
    sign_in(page, sampled, "#/pods")
    page.get_by_test_id("pods-overview").wait_for()

    # The VM list: searched by a part of the name, the VM's row links to its view.
    page.get_by_test_id("tab-vms").click()
    page.get_by_test_id("vm-table").wait_for()
    part = vm["name"][1:-1] if len(vm["name"]) > 2 else vm["name"]
    page.get_by_test_id("vm-search").fill(part)
    expected = [v["name"] for v in sampled.api("GET", f"/vms?q={part}&sort=name&limit=50")["items"]]
    rows = page.get_by_test_id("vm-table").locator("tbody tr")
    page.wait_for_function(
        "n => document.querySelectorAll('[data-testid=vm-table] tbody tr').length === n", arg=len(expected)
    )
    assert [rows.nth(i).get_by_test_id("vm-link").inner_text() for i in range(rows.count())] == expected
    shot(page, "vm-list-search")
    page.locator(f"tr[data-vm='{vm['id']}']").get_by_test_id("vm-link").click()

    # The VM's view, reached through the link: its name, and each disk's datastore linking on.
    page.get_by_test_id("vm-view").wait_for()
    assert page.get_by_test_id("view-title").inner_text() == vm["name"]
    assert page.evaluate("() => location.hash") == f"#/vm/{vm['id']}"
    detail = sampled.api("GET", f"/vms/{vm['id']}")
    link = page.get_by_test_id("disk-datastore-link").first
    assert link.inner_text() == (detail["disks"][0].get("datastore_name") or detail["disks"][0]["datastore"])
    shot(page, "vm-view-linked", full_page=True)
    link.click()

    # The datastore's view lists its disks, each linking to its VM: back to the VM we came from.
    page.get_by_test_id("datastore-view").wait_for()
    assert page.evaluate("() => location.hash") == f"#/datastore/{detail['disks'][0]['datastore']}"
    disks = page.get_by_test_id("datastore-disks-table")
    disks.wait_for()
    disks.locator(f"tr[data-disk='{detail['disks'][0]['id']}']").get_by_test_id("vm-link").click()
    page.get_by_test_id("vm-view").wait_for()
    assert page.get_by_test_id("view-title").inner_text() == vm["name"]

    # And back the way we came: the browser's history holds each view.
    page.go_back()
    page.get_by_test_id("datastore-view").wait_for()
    page.go_back()
    page.get_by_test_id("vm-view").wait_for()
    page.go_back()
    page.get_by_test_id("vm-list").wait_for()

    # The datastore list reaches the same datastore.
    page.get_by_test_id("tab-datastores").click()
    table = page.get_by_test_id("datastore-table")
    table.wait_for()
    table.locator(f"tr[data-datastore='{detail['disks'][0]['datastore']}']").get_by_test_id(
        "datastore-link"
    ).click()
    page.get_by_test_id("datastore-view").wait_for()

    # No file of the page failed to load, the icon included.
    assert failed == [], failed


def test_an_unknown_vm_has_a_way_back(page: Any, sampled: Basil) -> None:
    sign_in(page, sampled, "#/vm/vm-99999")
    page.get_by_test_id("not-found").wait_for()
    shot(page, "vm-unknown")
    page.get_by_test_id("back-link").click()
    page.get_by_test_id("vm-list").wait_for()
    page.get_by_test_id("vm-table").wait_for()


def test_the_favicon_is_served(sampled: Basil) -> None:
    for path in ("/favicon.ico", "/plugin/favicon.ico"):
        resp = requests.get(f"{sampled.url}{path}", verify=str(sampled.cert), timeout=30)
        assert (path, resp.status_code, resp.content[:4]) == (path, 200, b"\x00\x00\x01\x00")


def test_the_what_if_dialog_answers_with_the_services_prediction(page: Any, sampled: Basil) -> None:
    pod = sampled.api("GET", f"/pods/{POD}")
    target = pod["datastores"][0]
    # A disk with a sample on another datastore of the pod: what the dialog offers first.
    others = sampled.api("GET", f"/disks?pod={POD}&sort=name&limit=200")["items"]
    candidates = [d for d in others if d["datastore"]["id"] != target["id"]]
    assert candidates, others
    sign_in(page, sampled, f"#/datastore/{target['id']}")
    page.get_by_test_id("datastore-view").wait_for()
    page.get_by_test_id("whatif-open").click()
    dialog = page.get_by_test_id("whatif")
    dialog.wait_for()
    # The dialog sits over a backdrop that covers the page.
    backdrop = page.get_by_test_id("whatif-backdrop")
    box = backdrop.bounding_box()
    assert box is not None
    assert box["width"] >= 1280
    assert box["height"] >= 800
    assert backdrop.evaluate("e => getComputedStyle(e).backgroundColor") not in (
        "",
        "rgba(0, 0, 0, 0)",
        "transparent",
    )

    picks = page.get_by_test_id("whatif-candidates").locator("[data-disk]")
    picks.first.wait_for()
    offered = [picks.nth(i).get_attribute("data-disk") for i in range(picks.count())]
    assert set(offered) == {d["id"] for d in candidates}
    # The first offered disk that has a sample (the service refuses one without, naming it).
    chosen = offered[0]
    picks.nth(0).get_by_test_id("whatif-pick").check()
    page.get_by_test_id("whatif-ask").click()
    page.wait_for_function(
        "() => document.querySelector('[data-testid=whatif-answer]') ||"
        " document.querySelector('[data-testid=whatif-error]')"
    )
    answer = sampled.api("POST", f"/datastores/{target['id']}/whatif", body={"disks": [chosen]})
    shot(page, "whatif-answer", full_page=True)
    row = page.get_by_test_id("whatif-table").locator(f"tr[data-disk='{chosen}']")
    assert row.get_attribute("data-moved") == "yes"
    predicted = next(w for w in answer["workloads"] if w["name"] == chosen)
    shown_iops = row.get_by_test_id("whatif-iops").inner_text().split("→")[1].strip()
    assert shown_iops == (f"{round(predicted['iops']):,}" if predicted["iops"] is not None else "—")
    level, _, reason = predicted["confidence"].partition(": ")
    assert row.get_by_test_id("whatif-confidence-level").inner_text() == level
    assert row.get_by_test_id("whatif-confidence-reason").all_inner_texts() == ([reason] if reason else [])
    rows = page.get_by_test_id("whatif-table").locator("tbody tr")
    assert rows.count() == len(answer["workloads"])
    # The lab's disks write through its write-back cache: their destaging adds to every disk's reads.
    assert any(abs(w["destage_added_ms"] or 0.0) >= 0.001 for w in answer["workloads"]), answer["workloads"]
    for w in answer["workloads"]:
        shown = page.get_by_test_id("whatif-table").locator(f"tr[data-disk='{w['name']}']")
        check_added_and_flags(shown, w)
    check_summary(page, answer)
    # The inputs are folded away until asked for; then one row per disk, with its random share.
    inputs = page.get_by_test_id("whatif-inputs-section")
    assert inputs.evaluate("e => e.open") is False
    inputs.locator("summary").click()
    assert page.get_by_test_id("whatif-inputs").locator("tbody tr").count() == len(answer["inputs"])
    for i in answer["inputs"]:
        random = page.get_by_test_id("whatif-inputs").locator(f"tr[data-disk='{i['name']}']")
        text = random.get_by_test_id("whatif-input-random").inner_text()
        assert text == ("—" if i["random_pct"] is None else f"{i['random_pct']:.0f} %"), (i, text)
    shot(page, "whatif-inputs", full_page=True)
    # Escape closes it, and nothing changed: the disk is still where it was.
    page.keyboard.press("Escape")
    dialog.wait_for(state="detached")
    still = sampled.api("GET", f"/disks?pod={POD}&sort=name&limit=200")["items"]
    assert {d["id"]: d["datastore"]["id"] for d in still} == {d["id"]: d["datastore"]["id"] for d in others}


def shown_ms(text: str) -> float:
    """A signed latency as the plugin writes it (``+0.22 ms``, ``−3.4 ms``) as a number."""
    figure = text.split(maxsplit=1)[0].replace("−", "-").replace("+", "").replace(",", "")
    return float(figure)


def check_added_and_flags(row: Any, w: dict[str, Any]) -> None:
    """A disk's row shows the positioning and destage ms the answer adds (only where not zero), its
    flags (sequential, cached writes) and nothing else."""
    for kind, field in (("positioning", "positioning_added_ms"), ("destage", "destage_added_ms")):
        value = w[field]
        cell = row.get_by_test_id("whatif-added").locator(f"[data-added='{kind}']")
        if value is None or abs(value) < 0.001:
            assert cell.count() == 0, (w, kind)
        else:
            text = cell.inner_text()
            assert text.endswith(kind), text
            assert shown_ms(text) == pytest.approx(value, rel=0.06, abs=0.001), (w, text)
    flags = row.get_by_test_id("whatif-flags").locator("[data-label]")
    expected = [
        label for label, on in (("sequential", w["sequential"]), ("cached writes", w["write_cached"])) if on
    ]
    assert flags.all_inner_texts() == expected, w


def check_summary(page: Any, answer: dict[str, Any]) -> None:
    """The datastore's lines: the mix beside eq. 1–2, IOPS beside eq. 3–4, m, t_pos, k and c each
    with the source the answer gives, ΔU, and a warning exactly when destaging saturates."""
    summary = page.get_by_test_id("whatif-summary")

    def cell(line: str, part: str) -> str:
        return str(
            summary.locator(f"tr[data-line='{line}']").get_by_test_id(f"whatif-summary-{part}").inner_text()
        )

    assert f"{answer['paper_read_mix'] * 100:.0f} %" in cell("mix", "beside")
    assert cell("mix", "beside").startswith("eq. 1–2")
    assert (
        cell("iops", "beside")
        == f"eq. 3–4: {round(answer['paper_read_iops']):,} / {round(answer['paper_write_iops']):,}"
    )
    assert cell("parallelism", "source") == answer["parallelism_source"]
    assert cell("positioning", "source") == answer["positioning_source"]
    if answer["positioning_ms"] is not None:
        assert shown_ms(cell("positioning", "value")) == pytest.approx(answer["positioning_ms"], rel=0.06)
    assert cell("write-cost", "source") == answer["write_cost_source"]
    # c, the devices' time per destaged write, beside its source (the device model with its disks'
    # destaging separated where the target has one).
    assert cell("destage-cost", "source") == answer["destage_source"]
    if answer["destage_ms"] is None:
        assert cell("destage-cost", "value") == "none (no t_pos)"
    else:
        assert shown_ms(cell("destage-cost", "value")) == pytest.approx(answer["destage_ms"], rel=0.06)
    assert cell("destage", "value").endswith("%")
    saturated = page.get_by_test_id("whatif-destage-saturated")
    # The warning: destaging saturated, or a disk measured with the write cache full or at its limit.
    full = answer.get("full_where_measured") or answer.get("edge_where_measured")
    warned = answer["destage_saturated"] or full
    assert saturated.count() == (1 if warned else 0)


# The text of a select's options measured in its own font, against the room the select gives them.
SELECT_FITS = """e => {
  const cs = getComputedStyle(e);
  const ctx = document.createElement('canvas').getContext('2d');
  ctx.font = `${cs.fontWeight} ${cs.fontSize} ${cs.fontFamily}`;
  const room = e.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight);
  const widest = Math.max(...[...e.options].map(o => ctx.measureText(o.text).width));
  return [widest, room];
}"""


def test_labels_the_pools_picker_and_the_pod_status_are_whole(page: Any, sampled: Basil) -> None:
    sign_in(page, sampled, "#/pools", role="admin")
    page.get_by_test_id("pools-tab").wait_for()
    picker = page.get_by_label("datastore", exact=True)
    picker.wait_for()
    widest, room = picker.evaluate(SELECT_FITS)
    assert widest <= room, (widest, room)
    shot(page, "pools-picker")

    page.goto(f"{sampled.url}/plugin/index.html#/pod/{POD}")
    status = page.get_by_test_id("pod-status")
    status.wait_for()
    pod = sampled.api("GET", f"/pods/{POD}")
    words = {
        "ok": "balanced",
        "warn": "near the threshold",
        "over": "over the threshold",
        "unknown": "no figures yet",
    }
    assert status.inner_text().strip() == words[status.get_attribute("data-status")]
    over = pod["imbalance"] is not None and pod["imbalance"] > pod["threshold"]
    assert (status.get_attribute("data-status") == "over") == over


def test_the_vm_views_charts_have_level_axis_titles(page: Any, sampled: Basil) -> None:
    disks = sampled.api("GET", f"/disks?pod={POD}&sort=-iops&limit=1")["items"]
    assert disks, "no disk in the pod"
    sign_in(page, sampled, f"#/vm/{disks[0]['vm']['id']}")
    chart = page.get_by_test_id("param-oio").first
    chart.wait_for()
    title = page.get_by_test_id("param-oio-ytitle").first
    assert title.text_content() == "Outstanding IOs (90th percentile) over time"
    assert title.get_attribute("transform") is None
    assert chart.locator("[transform*=rotate]").count() == 0
    shot(page, "vm-charts", full_page=True)


def test_the_live_entitlements_show_each_vm_under_its_pool(page: Any, sampled: Basil) -> None:
    # Two VMs with a disk on the same datastore of the pod, each in a pool of its own.
    disks = sampled.api("GET", f"/disks?pod={POD}&sort=name&limit=200")["items"]
    by_datastore: dict[str, list[dict[str, Any]]] = {}
    for d in disks:
        by_datastore.setdefault(d["datastore"]["name"], []).append(d)
    datastore, on = next(
        (name, ds) for name, ds in sorted(by_datastore.items()) if len({d["vm"]["id"] for d in ds}) >= 2
    )
    first, second = sorted({d["vm"]["name"]: d["vm"] for d in on}.values(), key=lambda v: v["name"])[:2]
    doc = {
        "name": "nav-tree",
        "datastore": datastore,
        "root": {},
        "pools": [
            {"name": "gold", "shares": "high", "children": [{"vm": second["name"]}]},
            {"name": "bronze", "shares": "low", "children": [{"vm": first["name"]}]},
        ],
    }
    sampled.api("POST", "/pools", body=doc, expect=201)
    sampled.collect(2)
    sampled.run_job("srp")
    ent = sampled.api("GET", "/pools/nav-tree/entitlements")
    assert {p["pool"] for p in ent["pools"]} == {"gold", "bronze"}, ent

    sign_in(page, sampled, "#/pools", role="admin")
    page.get_by_test_id("pool-select").select_option("nav-tree")
    tree = page.get_by_test_id("entitlements-tree")
    tree.locator("tr[data-kind=vm]").first.wait_for()
    rows = tree.locator("tbody tr")
    shown = [
        (
            rows.nth(i).get_attribute("data-kind"),
            rows.nth(i).get_attribute("data-depth"),
            rows.nth(i).get_attribute("data-label"),
        )
        for i in range(rows.count())
    ]
    disk_rows = {
        vm: [("disk", "2", d["disk"]) for d in ent["disks"] if d["vm"] == vm]
        for vm in (first["name"], second["name"])
    }
    assert shown == [
        ("pool", "0", "gold"),
        ("vm", "1", second["name"]),
        *disk_rows[second["name"]],
        ("pool", "0", "bronze"),
        ("vm", "1", first["name"]),
        *disk_rows[first["name"]],
    ]
    shot(page, "entitlements-tree", full_page=True)
    # "computed ... ago" on vCenter's clock (the lab runs at 120x): against the browser's clock the SRP
    # run would read hours in the future.
    computed = page.get_by_test_id("entitlements").locator("time").first.inner_text()
    assert re.fullmatch(r"computed (just now|\d+ s ago|\d+ min ago)", computed), computed
    # A VM's row links to its view.
    tree.locator(f"tr[data-kind=vm][data-label='{first['name']}']").get_by_test_id("vm-link").click()
    page.get_by_test_id("vm-view").wait_for()
    assert page.evaluate("() => location.hash") == f"#/vm/{first['id']}"
