"""The OpenAPI document and the answers agree where they once did not: a value the API refuses is one
the document's schema refuses too, a recommendation without moves (id null) is valid, and the plugin's
files document the 404 they answer."""

from __future__ import annotations

from typing import Any

import pytest
from openapi_schema_validator import OAS31Validator, oas31_format_checker

from .conftest import ApiEnv


@pytest.fixture(scope="module")
def document(api_env: ApiEnv) -> dict[str, Any]:
    doc: dict[str, Any] = api_env.get("/api/v1/openapi.json", role=None).get_json()
    return doc


def _valid(document: dict[str, Any], schema: dict[str, Any], value: Any) -> bool:
    validator = OAS31Validator(
        {**schema, "components": document["components"]}, format_checker=oas31_format_checker
    )
    return not list(validator.iter_errors(value))


def _component(name: str) -> dict[str, Any]:
    return {"$ref": f"#/components/schemas/{name}"}


def test_values_the_api_refuses_are_refused_by_the_document(
    api_env: ApiEnv, document: dict[str, Any]
) -> None:
    token = {"name": "zero", "role": "viewer", "expires_in": "0d"}
    assert not _valid(document, _component("CreateToken"), token)
    resp = api_env.post("/api/v1/tokens", role="admin", json=token)
    assert resp.status_code == 400
    assert [p["field"] for p in resp.get_json()["problems"]] == ["expires_in"]

    window = {"cron": "0"}
    assert not _valid(document, _component("RebalanceRequest"), window)
    resp = api_env.put("/api/v1/schedules/rebalance", role="admin", json=window)
    assert resp.status_code == 400
    assert [p["field"] for p in resp.get_json()["problems"]] == ["cron"]

    before = next(p for p in document["paths"]["/api/v1/audit"]["get"]["parameters"] if p["name"] == "before")
    assert not _valid(document, before["schema"], "")
    resp = api_env.get("/api/v1/audit?before=")
    assert resp.status_code == 400
    assert [p["field"] for p in resp.get_json()["problems"]] == ["query.before"]
    # And what the document accepts, the API accepts.
    assert _valid(document, before["schema"], "2024-05-01T10:00:00Z")
    assert api_env.get("/api/v1/audit?before=2024-05-01T10:00:00Z").status_code == 200
    assert _valid(document, _component("RebalanceRequest"), {"cron": "0 1 * * sun"})


def test_a_recommendation_without_moves_is_valid(document: dict[str, Any]) -> None:
    nothing_to_do = {"id": None, "pod": "basil", "moves": [], "valid": True, "state": "current"}
    assert _valid(document, _component("Recommendation"), nothing_to_do)


def test_plugin_files_document_their_404(api_env: ApiEnv, document: dict[str, Any]) -> None:
    paths = [p for p in document["paths"] if p.startswith("/plugin/") and "{" in p]
    assert paths
    for path in paths:
        assert "404" in document["paths"][path]["get"]["responses"]
    assert api_env.get("/plugin/no-such-file.js", role=None).status_code == 404
