"""Applies one plan in a process of its own, so that a test can kill it mid-way (run with python -m).

Argument: a JSON object with the lab's ``server``, ``pem``, ``user``, ``password``, the store ``url``
and the ``plan`` id.
"""

from __future__ import annotations

import json
import sys

from basil.app import Actor, Service
from basil.config import BasilConfig, PodConfig, StoreConfig, TLSOptions, VCenterConfig
from basil.store import Store
from basil.vcenter.connection import ConnectionParams
from basil.vcenter.connection import TLSOptions as ConnTLS


def main(argv: list[str]) -> int:
    args = json.loads(argv[1])
    config = BasilConfig(
        vcenters=(
            VCenterConfig(
                name="lab",
                server=args["server"],
                user=args["user"],
                password_env="UNUSED",
                tls=TLSOptions(ca_bundle=args["pem"]),
            ),
        ),
        pods=(PodConfig(name="basil-pod", vcenter="lab", datastore_cluster="basil-pod"),),
        store=StoreConfig(url=args["url"]),
    )
    params = ConnectionParams(
        server=args["server"],
        user=args["user"],
        password=args["password"],
        tls=ConnTLS(ca_bundle=args["pem"]),
        keepalive_s=0,
    )
    svc = Service(config, Store(args["url"]), params_factory=lambda _vc: params)
    svc.start(scheduler=False)
    svc.apply_plan(int(args["plan"]), Actor("plan-runner", "operator", via="cli"))
    svc.wait_for_plan(int(args["plan"]))
    svc.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
