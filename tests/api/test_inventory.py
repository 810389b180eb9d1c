"""Pods and vCenters as the plugin finds them: a pod's StoragePod id, a vCenter's instance UUID.

The expected values are read from the lab with pyVmomi here, not from the service's inventory.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from pyVmomi import vim

from basil.api import create_app
from basil.app import Service
from basil.config.schema import BasilConfig, PodConfig, StoreConfig, TLSOptions, VCenterConfig
from basil.store.tokens import create_token
from basil.vcenter.connection import VCenterConnection
from tests.vcenter.labproc import LabProcess

from .conftest import PASSWORD_ENV, ApiEnv


def lab_truth(lab: LabProcess) -> tuple[str, dict[str, str]]:
    """The lab's instance UUID and its StoragePods' moids by name, as vCenter itself reports them."""
    with VCenterConnection(lab.connection_params(keepalive_s=0)) as vc:
        content = vc.content
        view = content.viewManager.CreateContainerView(content.rootFolder, [vim.StoragePod], True)
        try:
            pods = {p.name: p._moId for p in view.view}
        finally:
            view.DestroyView()
        return str(content.about.instanceUuid), pods


def test_a_datastore_cluster_pod_names_its_storage_pod(api_env: ApiEnv) -> None:
    uuid, storage_pods = lab_truth(api_env.lab)
    expected = storage_pods["basil-pod"]
    assert expected.startswith("group-")
    pods = api_env.get("/api/v1/pods").get_json()
    assert [(p["name"], p["storage_pod"]) for p in pods] == [("basil", expected)]
    assert api_env.get("/api/v1/pods/basil").get_json()["storage_pod"] == expected
    vcenters = api_env.get("/api/v1/vcenters").get_json()
    assert [(v["name"], v["instance_uuid"]) for v in vcenters] == [("lab", uuid)]
    assert uuid


@pytest.fixture
def two_vcenters(api_env: ApiEnv, tmp_path: Path) -> Iterator[ApiEnv]:
    """The lab and a second vCenter that is down, with a cluster pod, a listed pod and a tagged pod."""
    lab = api_env.lab
    os.environ[PASSWORD_ENV] = lab.password
    config = BasilConfig(
        vcenters=(
            VCenterConfig(
                name="lab", server=lab.server, user=lab.user, password_env=PASSWORD_ENV,
                tls=TLSOptions(ca_bundle=lab.pem),
            ),
            VCenterConfig(name="down", server="127.0.0.1:1", user="nobody", password_env=PASSWORD_ENV),
        ),
        pods=(
            PodConfig(name="cluster", vcenter="lab", datastore_cluster="basil-pod"),
            PodConfig(name="listed", vcenter="lab", datastores=("os-lun",)),
            PodConfig(name="tagged", vcenter="lab", tag="basil-tier/fc"),
        ),
        store=StoreConfig(url=f"sqlite:///{tmp_path / 'basil.db'}"),
    )  # fmt: skip
    service = Service.from_config(config)
    service.start(scheduler=False)
    tokens = {}
    with service.store.session() as session:
        tokens["viewer"], _ = create_token(session, "test-viewer", "viewer", created_by="tests")
    try:
        yield ApiEnv(lab, service, create_app(service), tokens, config)
    finally:
        service.shutdown()


def test_ids_carry_the_vcenter_when_several_are_configured(two_vcenters: ApiEnv) -> None:
    uuid, storage_pods = lab_truth(two_vcenters.lab)
    pods = {p["name"]: p for p in two_vcenters.get("/api/v1/pods").get_json()}
    assert pods["cluster"]["storage_pod"] == f"lab:{storage_pods['basil-pod']}"
    assert pods["cluster"]["datastores"][0]["id"].startswith("lab:datastore-")
    # Pods that are not datastore clusters have none, even when their datastores are in one.
    assert pods["listed"]["storage_pod"] is None
    assert pods["tagged"]["storage_pod"] is None
    assert pods["tagged"]["datastores"], "the tag pod resolved no datastore"
    one = two_vcenters.get("/api/v1/pods/cluster").get_json()
    assert one["storage_pod"] == pods["cluster"]["storage_pod"]
    vcenters = {v["name"]: v for v in two_vcenters.get("/api/v1/vcenters").get_json()}
    assert vcenters["lab"]["instance_uuid"] == uuid
    assert vcenters["down"]["instance_uuid"] is None  # never connected: unknown, not made up
    assert vcenters["down"]["connected"] is False
