"""The pod page of a pod with the SLO goal in Debian's chromium, against the real service and the lab's
slo-tiers scenario (simulated time stepped): after a round, the SLO panel shows a row per priority group
with the service's figures, and each move its predicted group response times. Screenshot in
test-artifacts/plugin/."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

import pytest

from basil.config import BasilConfig, DeviceConfig, PodConfig
from basil.config.schema import SloConfig, SloGroupConfig
from tests.app.conftest import SCENARIOS
from tests.vcenter.labproc import LabProcess

from .e2e import Basil, shot, start_basil
from .test_e2e_navigation import sign_in

pytestmark = [pytest.mark.lab, pytest.mark.browser]

POD = "slo-pod"
DEVICES = {
    "ssd-01": DeviceConfig(kind="ssd", spindles=4),
    "fc-01": DeviceConfig(kind="fc15k", spindles=8),
    "sata-01": DeviceConfig(kind="sata7k", spindles=8),
    "sata-02": DeviceConfig(kind="sata7k", spindles=8),
}
GROUPS = (SloGroupConfig("gold", 2.0), SloGroupConfig("silver", 15.0), SloGroupConfig("bronze", 40.0))


def slo_pod(config: BasilConfig) -> BasilConfig:
    pod = PodConfig(name=POD, vcenter="lab", datastore_cluster=POD, goal="slo", slo=SloConfig(groups=GROUPS))
    return dataclasses.replace(config, pods=(pod,), devices=DEVICES)


@pytest.fixture(scope="module")
def slo_basil() -> Iterator[Basil]:
    with LabProcess.start(SCENARIOS / "slo-tiers.yaml", speed=0) as lab:
        yield from start_basil(lab, slo_pod)


def test_the_pod_page_shows_the_slo_panel_with_the_services_figures(page: Any, slo_basil: Basil) -> None:
    lab = slo_basil.lab
    lab.step(2)
    slo_basil.run_job("collect")
    lab.step(30)
    slo_basil.run_job("collect")
    slo_basil.run_job("model")
    answer = slo_basil.api("POST", f"/pods/{POD}/recommendations", role="operator", expect=201)
    slo = answer["slo"]
    assert [g["name"] for g in slo["groups"]] == ["gold", "silver", "bronze"]

    sign_in(page, slo_basil, f"#/pod/{POD}")
    panel = page.get_by_test_id("slo-panel")
    panel.wait_for()
    rows = panel.locator("tbody tr")
    assert [rows.nth(i).get_attribute("data-group") for i in range(rows.count())] == [
        "gold",
        "silver",
        "bronze",
    ]
    gold = next(g for g in slo["groups"] if g["name"] == "gold")
    assert gold["measured_ms"] > gold["drt_ms"]  # gold starts on SATA and FC
    gold_row = panel.locator("tr[data-group='gold']").inner_text()
    assert "2.00 ms" in gold_row  # its DRT
    assert ("unmet" in gold_row) == (not gold["within_drt_after"])
    for sentence in slo["unmet"]:
        assert sentence in panel.inner_text()
    summary = page.get_by_test_id("slo-summary").inner_text()
    assert f"{slo['queue_model']} queues" in summary
    moves = page.get_by_test_id("slo-move")
    assert moves.count() == len(answer["moves"]) > 0
    assert "damage" in moves.first.inner_text()

    # Over time: a chart per group from the pod's SLO series (this round is its point), measured RT
    # against the DRT line, and damage.
    history = slo_basil.api("GET", f"/pods/{POD}/slo/history")
    assert [p["round_id"] for p in history["points"]] == [answer["id"]]
    charts = page.get_by_test_id("slo-history-group")
    charts.first.wait_for()
    assert [charts.nth(i).get_attribute("data-group") for i in range(charts.count())] == [
        "gold",
        "silver",
        "bronze",
    ]
    gold_chart = panel.locator("[data-testid='slo-history-group'][data-group='gold']")
    point = next(g for g in history["points"][0]["groups"] if g["name"] == "gold")
    within = f"{round(point['measured_within_drt'] * 100)} %"
    assert f"gold: DRT 2.00 ms, {within} of its measured disks within it" in gold_chart.inner_text()
    assert gold_chart.get_by_test_id("slo-rt-chart-reference").text_content() == "DRT 2.00 ms"
    assert gold_chart.locator("[data-testid='slo-rt-chart'] circle[data-point='measured']").count() == 1
    assert gold_chart.locator("[data-testid='slo-damage-chart'] circle[data-point='measured']").count() == 1
    shot(page, "slo-pod-panel", full_page=True)
