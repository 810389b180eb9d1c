"""One pod's problem stays in that pod's answer: a pod with no datastores (a misspelt datastore cluster,
an empty one) neither fails the recommend job for the other pods nor answers 500."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path

import pytest

from basil.app import Actor, Service
from basil.config import PodConfig
from basil.errors import BasilError
from basil.store import Store
from basil.vcenter._vmomi import vim
from tests.app.conftest import SCENARIOS, collect, lab_config
from tests.vcenter.labproc import LabProcess

pytestmark = pytest.mark.lab

OPERATOR = Actor("pod-tester", "operator", "127.0.0.1")


@pytest.fixture(scope="module")
def lab() -> Iterator[LabProcess]:
    with LabProcess.start(SCENARIOS / "basil-6.3.yaml", speed=120) as lab:
        yield lab


@pytest.fixture
def service(lab: LabProcess, tmp_path: Path) -> Iterator[Service]:
    lab.reset()
    url = f"sqlite:///{tmp_path / 'basil.db'}"
    config = lab_config(lab, url)
    pods = (
        *config.pods,
        PodConfig(name="misspelt", vcenter="lab", datastore_cluster="basil-pdo"),
        PodConfig(name="empty", vcenter="lab", datastore_cluster="empty-cluster"),
    )
    svc = Service(
        dataclasses.replace(config, pods=pods), Store(url), params_factory=lambda _vc: lab.connection_params()
    )
    svc.start(scheduler=False)
    conn = svc.link("lab").call(lambda c: c)
    datacenter = next(e for e in conn.content.rootFolder.childEntity if isinstance(e, vim.Datacenter))
    datacenter.datastoreFolder.CreateStoragePod(name="empty-cluster")
    svc.inventory("lab")
    yield svc
    svc.shutdown()


def test_a_pod_without_datastores_fails_alone_in_the_recommend_job(service: Service) -> None:
    collect(service, 3)
    assert service.run_job("model")["outcome"] == "succeeded"
    run = service.run_job("recommend")
    assert run["outcome"] == "succeeded", run
    pods = run["details"]["pods"]
    assert "moves" in pods["basil-pod"], pods  # the good pod got its round
    for name in ("misspelt", "empty"):
        assert "no datastores" in pods[name]["error"], pods[name]
        assert f"pod {name}" in run["message"], run["message"]


@pytest.mark.parametrize(("pod", "why"), [("misspelt", "basil-pdo"), ("empty", "empty-cluster")])
def test_asking_a_pod_without_datastores_for_a_recommendation_is_a_conflict(
    service: Service, pod: str, why: str
) -> None:
    with pytest.raises(BasilError) as caught:
        service.recommend_now(pod, OPERATOR)
    assert caught.value.http_status == 409, caught.value.to_dict()
    assert "no datastores" in caught.value.message
    assert why in caught.value.message
    assert service.recommend_now("basil-pod", OPERATOR)["pod"] == "basil-pod"
