"""Fixtures of the tests against govmomi's stock simulator model (``basil-lab --stock``, vcsim's default
inventory): a vCenter shaped differently from the lab's scenarios (DC0, DC0_C0_H0, LocalDS_0, an
empty DC0_POD0; an Automation API that answers tagging with null; a perf manager that echoes
instance ``*``)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from basil.app import Service
from basil.config import BasilConfig, PodConfig, StoreConfig, TLSOptions, VCenterConfig
from basil.vcenter.connection import ConnectionParams
from basil.vcenter.connection import TLSOptions as ConnTLS
from tests.lab_vcenter import STOCK, LabFactory, LabInstance

PASSWORD_ENV = "BASIL_TEST_STOCK_PASSWORD"
USER = "stock-user"  # the stock simulator lets any user and password in
PASSWORD = "any-password"


@pytest.fixture(scope="module")
def stock(lab_factory: LabFactory) -> Iterator[LabInstance]:
    """The stock model, on TLS, one per module."""
    instance = lab_factory(STOCK, tls=True)
    yield instance
    instance.stop()


def stock_params(stock: LabInstance, **kw: Any) -> ConnectionParams:
    fields: dict[str, Any] = {
        "server": f"{stock.host}:{stock.port}",
        "user": USER,
        "password": PASSWORD,
        "tls": ConnTLS(ca_bundle=str(stock.ca_pem)),
        "keepalive_s": 0,
        "backoff_s": 0.05,
    }
    fields.update(kw)
    return ConnectionParams(**fields)


def stock_config(
    stock: LabInstance, store_url: str, *, tags: bool = True, pods: tuple[PodConfig, ...] = ()
) -> BasilConfig:
    return BasilConfig(
        vcenters=(
            VCenterConfig(
                name="stock",
                server=f"{stock.host}:{stock.port}",
                user=USER,
                password_env=PASSWORD_ENV,
                tls=TLSOptions(ca_bundle=str(stock.ca_pem)),
                tags=tags,
            ),
        ),
        pods=pods or (PodConfig(name="pod0", vcenter="stock", datastore_cluster="DC0_POD0"),),
        store=StoreConfig(url=store_url),
    )


StockService = Callable[..., Service]


@pytest.fixture
def stock_service(
    stock: LabInstance, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[StockService]:
    """``stock_service(tags=True, pods=(...))``: a started Service (no scheduler) on the stock model."""
    monkeypatch.setenv(PASSWORD_ENV, PASSWORD)
    made: list[Service] = []

    def make(**kw: Any) -> Service:
        url = f"sqlite:///{tmp_path / f'basil-{len(made)}.db'}"
        svc = Service.from_config(stock_config(stock, url, **kw))
        svc.start(scheduler=False)
        svc.wait_connected()
        made.append(svc)
        return svc

    yield make
    for svc in made:
        svc.shutdown()
