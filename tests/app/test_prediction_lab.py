"""Prediction checked against reality, against the lab (BASIL §6.3 pod, simulated time paused): an applied
plan's prediction is recorded when it ends and measured one hour later in vCenter's time, not the
service's; the measurement is the lab's truth over the window before that hour, and the error is shown
in the API (valid against the OpenAPI document), the pod view and the metrics."""

from __future__ import annotations

import math
from collections.abc import Iterator
from datetime import datetime
from typing import Any

import pytest
from openapi_schema_validator import OAS31Validator, oas31_format_checker

from basil.api import create_app
from basil.api.openapi import build_document
from basil.app import Service
from basil.app.prediction import DELAY_S, WINDOW_S
from basil.store.tokens import create_token
from tests.app.conftest import SCENARIOS, ServiceFactory
from tests.app.test_recommendations_lab import OPERATOR, POD, run_stepping
from tests.vcenter.labproc import LabProcess

pytestmark = pytest.mark.lab


@pytest.fixture(scope="module")
def lab() -> Iterator[LabProcess]:
    with LabProcess.start(SCENARIOS / "basil-6.3.yaml", speed=0) as lab:
        yield lab


def lab_now(lab: LabProcess) -> datetime:
    return datetime.fromisoformat(str(lab.control("GET", "/lab/time")["now"]).replace("Z", "+00:00"))


def when(text: str) -> datetime:
    return datetime.fromisoformat(text)


def run_model(svc: Service, lab: LabProcess) -> dict[str, Any]:
    """Collect until the samples reach the lab's time (a backlog comes window by window), then model."""
    for _ in range(30):
        assert svc.run_job("collect")["outcome"] == "succeeded"
        newest = svc.sample_now("lab")
        if newest is not None and newest >= lab_now(lab).timestamp() - 60:
            break
    run = svc.run_job("model")
    assert run["outcome"] == "succeeded", run
    return run


def test_an_applied_plan_is_measured_an_hour_later_in_vcenter_time(
    lab: LabProcess, make_service: ServiceFactory
) -> None:
    lab.reset()
    lab.set_speed(0)
    lab.step(2)
    svc = make_service(lab)
    assert svc.run_job("collect")["outcome"] == "succeeded"  # a first collection takes the newest sample
    lab.step(90)  # half an hour of samples: the disks' outstanding IOs and the device model
    run_model(svc, lab)
    rec = svc.recommend_now(POD, OPERATOR)
    assert rec["moves"], rec
    # Every move carries the what-if of its source and target datastores.
    first = rec["moves"][0]
    effect = first["consolidation"]
    assert effect["target"]["datastore"] == first["to"].split(":")[-1]
    assert effect["source"]["datastore"] == first["from"].split(":")[-1]
    moved = {m["disk"] for m in rec["moves"] if m["move"] == first["move"]}
    listed = [d["disk"] for d in effect["target"]["disks"]]
    assert set(listed[: len(moved)]) == moved  # the moved disks are listed first on the target
    assert not moved & {d["disk"] for d in effect["source"]["disks"]}  # and are gone from the source
    assert effect["target"]["read_iops"] > 0
    plan = svc.create_plan(OPERATOR, recommendation_id=rec["id"])
    started = lab_now(lab)
    assert run_stepping(svc, lab, plan["id"])["state"] == "succeeded"
    ended = lab_now(lab)

    (check,) = svc.predictions(POD)
    assert check["plan"] == plan["id"]
    assert check["state"] == "waiting"
    assert check["error"] is None
    # vCenter's time, not the service's: the lab stood still between the steps.
    assert started <= when(check["finished_at"]) <= ended
    assert (when(check["due_at"]) - when(check["finished_at"])).total_seconds() == DELAY_S
    predicted = {d["name"]: d for d in check["datastores"]}
    assert set(predicted) == {"3diskLUN", "6diskLUN", "9diskLUN"}
    assert all(d["predicted"]["iops"] > 0 and d["predicted"]["latency_ms"] > 0 for d in predicted.values())
    assert check["imbalance"]["predicted_by_round"] == pytest.approx(rec["after"]["imbalance"])

    # Three quarters of an hour later nothing is measured yet.
    lab.step(135)
    assert run_model(svc, lab)["details"]["predictions"] == []
    assert svc.predictions(POD)[0]["state"] == "waiting"

    # Just past the hour: measured over the 15 minutes before it, which is what the lab's truth says.
    due = when(check["due_at"])
    lab.step(max(1, math.ceil((due - lab_now(lab)).total_seconds() / 20)) + 2)  # vCenter publishes late
    truth = {d["name"]: d for d in lab.truth(WINDOW_S // 20)["datastores"]}
    model = run_model(svc, lab)
    assert [p["plan"] for p in model["details"]["predictions"]] == [plan["id"]]
    (measured,) = svc.predictions(POD)
    assert measured["state"] == "measured"
    for ds in measured["datastores"]:
        real = truth[ds["name"]]
        assert ds["measured"]["iops"] == pytest.approx(real["iops"], rel=0.1), ds
        assert ds["measured"]["latency_ms"] == pytest.approx(real["avg_latency_ms"], rel=0.1), ds
        err = ds["error"]
        assert err["iops"] == pytest.approx(ds["predicted"]["iops"] / ds["measured"]["iops"] - 1)
        assert err["latency"] == pytest.approx(
            ds["predicted"]["latency_ms"] / ds["measured"]["latency_ms"] - 1
        )
    errors = measured["error"]
    assert errors["latency_median_abs"] == pytest.approx(
        sorted(abs(d["error"]["latency"]) for d in measured["datastores"])[1]
    )
    assert measured["imbalance"]["measured"] == pytest.approx(svc.pod(POD)["imbalance"])
    assert errors["imbalance_abs"] == pytest.approx(
        abs(measured["imbalance"]["predicted"] - measured["imbalance"]["measured"])
    )

    # The pod view, the metrics and the API (valid against the published document) show the same error.
    assert svc.pod(POD)["prediction_error"]["latency_median_abs"] == errors["latency_median_abs"]
    metrics = svc.metrics()
    line = next(
        x
        for x in metrics.splitlines()
        if x.startswith('basil_prediction_error{pod="basil-pod",quantity="iops"}')
    )
    assert float(line.split()[-1]) == pytest.approx(errors["iops_median_abs"])
    app = create_app(svc)
    with svc.store.session() as session:
        token, _ = create_token(session, "viewer", "viewer", created_by="tests")
    resp = app.test_client().get(
        f"/api/v1/pods/{POD}/predictions", headers={"Authorization": f"Bearer {token}"}
    )
    assert resp.status_code == 200
    document = build_document(app)
    schema = document["paths"]["/api/v1/pods/{pod}/predictions"]["get"]["responses"]["200"]["content"][
        "application/json"
    ]["schema"]
    validator = OAS31Validator(
        {**schema, "components": document["components"]}, format_checker=oas31_format_checker
    )
    assert [e.message for e in validator.iter_errors(resp.get_json())] == []
    assert resp.get_json() == svc.predictions(POD)
    # Per datastore, both estimators' error over time (GET /datastores/{id}/predictions) and its gauge.
    for ds in measured["datastores"]:
        resp = app.test_client().get(
            f"/api/v1/datastores/{ds['datastore']}/predictions", headers={"Authorization": f"Bearer {token}"}
        )
        assert resp.status_code == 200
        body = resp.get_json()
        schema = document["paths"]["/api/v1/datastores/{id}/predictions"]["get"]["responses"]["200"][
            "content"
        ]["application/json"]["schema"]
        validator = OAS31Validator(
            {**schema, "components": document["components"]}, format_checker=oas31_format_checker
        )
        assert [e.message for e in validator.iter_errors(body)] == []
        (point,) = body["series"]
        assert point["plan"] == plan["id"]
        whatif = point["predicted"]["whatif"]
        assert whatif["iops"] > 0
        assert point["error"]["whatif"]["iops"] == pytest.approx(whatif["iops"] / ds["measured"]["iops"] - 1)
        assert point["error"]["device_model"]["iops"] == pytest.approx(ds["error"]["iops"])
        gauge = next(
            x
            for x in metrics.splitlines()
            if x.startswith("basil_datastore_prediction_error")
            and f'datastore="{ds["name"]}"' in x
            and 'estimator="whatif"' in x
            and 'quantity="iops"' in x
        )
        assert float(gauge.split()[-1]) == pytest.approx(point["error"]["whatif"]["iops"])
        print(
            ds["name"],
            "what-if error:",
            point["error"]["whatif"],
            "device model:",
            point["error"]["device_model"],
        )
    print(
        "prediction error an hour later:",
        {k: round(v, 3) for k, v in errors.items() if v is not None},
        {d["name"]: d["error"] for d in measured["datastores"]},
    )
