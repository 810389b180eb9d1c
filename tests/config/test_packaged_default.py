"""The packaged default is the configuration `make demo` runs: scripts/demo.py writes it with only the
demo's changes, and loaded as shipped (only the lab's port overridden, as the demo does when 8989 is
taken) it connects to a lab started the demo's way and resolves its pod."""

from __future__ import annotations

import importlib.util
import shutil
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest
import yaml

from basil.app import Service
from basil.config import default_config_text, load_config, runtime_problems, store_url
from basil.store import Store
from tests.vcenter.labproc import ROOT, LabProcess

SCENARIOS = ROOT / "lab" / "scenarios"


def _demo() -> ModuleType:
    spec = importlib.util.spec_from_file_location("basil_demo_script", ROOT / "scripts" / "demo.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_demo_runs_the_packaged_default_with_only_its_own_changes() -> None:
    demo = _demo()
    default = yaml.safe_load(default_config_text())
    written = demo.demo_config("127.0.0.1:8989", 8443, SCENARIOS / "basil-6.3.yaml")
    assert {k: v for k, v in written.items() if k != "schedules"} == {
        k: v for k, v in default.items() if k != "schedules"
    }
    assert written["schedules"] == {**default["schedules"], **demo.DEMO_SCHEDULES}
    # What the demo's lab is: its user, its certificate file, and the packaged password variable.
    vc = default["vcenters"][0]
    assert (vc["server"], vc["user"], vc["password_env"]) == (
        "127.0.0.1:8989",
        demo.LAB_USER,
        demo.PASSWORD_ENV,
    )
    assert (ROOT / vc["tls"]["ca_bundle"]) == demo.WORK / "lab.pem"  # where the demo's lab writes it
    assert demo.scenario_pods(SCENARIOS / "basil-6.3.yaml") == [default["pods"][0]["datastore_cluster"]]
    # Busy ports and other scenarios change only the addresses and the datastore cluster.
    other = demo.demo_config("127.0.0.1:9999", 9443, SCENARIOS / "tiered.yaml")
    assert other["vcenters"][0]["server"] == "127.0.0.1:9999"
    assert other["server"]["listen"] == "127.0.0.1:9443"
    assert other["pods"][0]["datastore_cluster"] == "tiered-pod"


@pytest.fixture
def demo_lab() -> Iterator[LabProcess]:
    """The demo's lab: BASIL §6.3, administrator@vsphere.local, TLS with its certificate written out."""
    with LabProcess.start(SCENARIOS / "basil-6.3.yaml", speed=30) as lab:
        yield lab


@pytest.mark.lab
def test_the_packaged_default_resolves_its_pod_on_the_demos_lab(
    demo_lab: LabProcess, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The demo runs everything from the repository with the lab's certificate in var/demo/lab.pem;
    # here a scratch directory plays the repository.
    (tmp_path / "var" / "demo").mkdir(parents=True)
    shutil.copyfile(demo_lab.pem, tmp_path / "var" / "demo" / "lab.pem")
    monkeypatch.chdir(tmp_path)
    env = {"BASIL_VCENTER_PASSWORD": demo_lab.password, "BASIL_VCENTERS__LAB__SERVER": demo_lab.server}
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    config = load_config(None, env=env)
    assert runtime_problems(config, env) == []
    assert config.vcenters[0].user == demo_lab.user
    service = Service(config, Store(store_url(config.store, env)))
    try:
        service.start(scheduler=False)
        assert service.link("lab").inventory().datastores, "connected with the default's user and TLS"
        (pod,) = service.resolved_pods()
        assert pod.name == "basil"
        assert pod.missing == ()
        names = sorted(service.inventory("lab").datastores[d].name for d in pod.datastores)
        assert names == ["3diskLUN", "6diskLUN", "9diskLUN"]
    finally:
        service.shutdown()
    assert (tmp_path / "var" / "demo" / "basil.db").exists()  # the default's store, where it says
