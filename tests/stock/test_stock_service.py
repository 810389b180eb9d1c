"""The adapter and the service against govmomi's stock simulator model (issue 12, items 4, 5, 7)."""

from __future__ import annotations

import pytest
from click.testing import CliRunner
from sqlalchemy import select

from basil.cli import main
from basil.config import PodConfig
from basil.store.models import Disk
from tests.lab_vcenter import LabInstance
from tests.stock.conftest import PASSWORD, USER, StockService

pytestmark = pytest.mark.lab


def test_serve_starts_with_tags_on_and_health_names_the_tags_failure(stock_service: StockService) -> None:
    svc = stock_service()  # tags on (the default): the Automation API answers tagging with null
    link = svc.links["stock"]
    assert link.connected
    health = svc.health()
    assert health["status"] == "degraded"
    (problem,) = health["problems"]
    assert problem["vcenter"] == "stock"
    assert problem["job"] == "tags"
    assert "answered the category list with no data (null)" in problem["error"]
    # Only what needs tags is degraded: the inventory, collection and pods work.
    run = svc.run_job("inventory")
    assert run["outcome"] == "succeeded", run
    assert "no data (null)" in run["details"]["vcenters"]["stock"]["tags_error"]
    assert svc.resolved_pod("pod0").storage_pod is not None


def test_with_tags_off_the_automation_api_is_never_asked(stock_service: StockService) -> None:
    svc = stock_service(tags=False)
    run = svc.run_job("inventory")
    assert run["outcome"] == "succeeded", run
    assert svc.health()["status"] == "ok", svc.health()
    (vc,) = svc.vcenters()
    assert vc["tags"] == "off"
    assert vc["problems"] == []


def test_a_pod_by_tag_on_a_vcenter_with_tags_off_is_refused(stock_service: StockService) -> None:
    from basil.errors import ValidationError  # noqa: PLC0415

    with pytest.raises(ValidationError, match=r"pods\[0\]\.tag: needs tags, which are off"):
        stock_service(tags=False, pods=(PodConfig(name="gold", vcenter="stock", tag="tier/gold"),))


def test_a_pod_by_tag_says_tags_cannot_be_read(stock_service: StockService) -> None:
    svc = stock_service(pods=(PodConfig(name="gold", vcenter="stock", tag="tier/gold"),))
    (missing,) = svc.resolved_pod("gold").missing
    assert "tags cannot be read" in missing


def test_cli_inventory_warns_about_tags_instead_of_dying(stock: LabInstance) -> None:
    env = {
        "BASIL_VCENTER_SERVER": f"{stock.host}:{stock.port}",
        "BASIL_VCENTER_USER": USER,
        "BASIL_VCENTER_PASSWORD": PASSWORD,
    }
    result = CliRunner().invoke(main, ["vcenter", "inventory", "--ca-bundle", str(stock.ca_pem)], env=env)
    assert result.exit_code == 0, result.output
    assert "LocalDS_0" in result.output
    assert "warning: no tags:" in result.output


def test_instance_star_is_not_stored_as_a_disk(stock_service: StockService) -> None:
    svc = stock_service(tags=False)
    run = svc.run_job("collect")
    assert run["outcome"] == "succeeded", run
    with svc.store.read_session() as session:
        instances = set(session.scalars(select(Disk.instance)))
    assert "*" not in instances
    assert all(i.startswith(("scsi", "ide", "sata", "nvme")) for i in instances), instances


def test_a_session_loss_on_the_stock_model_is_survived(
    stock: LabInstance, stock_service: StockService
) -> None:
    svc = stock_service(tags=False)
    first = svc.run_job("collect")
    assert first["outcome"] == "succeeded", first
    assert stock.control("POST", "faults/session-loss")["sessions"] >= 1
    again = svc.run_job("collect")
    assert again["outcome"] == "succeeded", again
    link = svc.links["stock"]
    assert link.conn is not None
    assert link.conn.generation == 1
    assert svc.health()["status"] == "ok", svc.health()


def test_a_pod_that_excludes_by_tag_is_not_balanced_blind(stock_service: StockService) -> None:
    from basil.app.actor import SYSTEM  # noqa: PLC0415
    from basil.config.schema import BalanceConfig  # noqa: PLC0415
    from basil.errors import VCenterError  # noqa: PLC0415

    pod = PodConfig(
        name="local",
        vcenter="stock",
        datastores=("LocalDS_0",),
        balance=BalanceConfig(exclude_tag="keep/here"),
    )
    svc = stock_service(pods=(pod,))
    with pytest.raises(
        VCenterError, match=r"VMs tagged keep/here must not be moved, and tags cannot be read"
    ):
        svc.recommend_now("local", SYSTEM)
