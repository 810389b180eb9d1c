"""Checks of the PowerShell module scripts/powershell/Basil (PowerShell itself cannot be installed
here): every file parses with a real PowerShell parser, the manifest exports exactly the module's
cmdlets, their verbs are approved, state changes support -WhatIf/-Confirm, every cmdlet has
comment-based help with examples, every output type has a default view, and every REST path, body
field, query parameter and mapped response field exists in Basil's OpenAPI document, so an API
change that breaks the module fails here."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from basil.api import create_app
from basil.api.openapi import build_document
from basil.config.schema import BasilConfig

from . import psparse

MODULE = Path(__file__).resolve().parents[2] / "scripts" / "powershell" / "Basil"
PSM1 = MODULE / "Basil.psm1"
PSD1 = MODULE / "Basil.psd1"
FORMAT = MODULE / "Basil.Format.ps1xml"
REQUIRED = {
    "Connect-Basil", "Get-BasilPod", "Get-BasilRecommendation", "New-BasilPlan", "Approve-BasilPlan",
    "Start-BasilPlan", "Wait-BasilPlan", "Stop-BasilPlan", "Get-BasilPool", "Set-BasilPool",
    "Get-BasilPlacement", "Start-BasilJob",
}  # fmt: skip
# POSTs that change nothing: ranking datastores and validating a pool tree.
READ_LIKE = {("POST", "/placement"), ("POST", "/pools/validate")}


@pytest.fixture(scope="module")
def openapi() -> dict[str, Any]:
    """Basil's OpenAPI document, built from the app's routes as /api/v1/openapi.json serves it."""
    app = create_app(SimpleNamespace(config=BasilConfig(), store=None))  # type: ignore[arg-type]
    return build_document(app)


@pytest.fixture(scope="module")
def functions() -> dict[str, psparse.Function]:
    return {f.name: f for f in psparse.functions(psparse.read(PSM1))}


@pytest.fixture(scope="module")
def exported() -> list[str]:
    tree = psparse.read(PSD1)
    entry = next(
        n for n in psparse.walk(tree.root_node)
        if n.type == "hash_entry" and psparse.text(n).startswith("FunctionsToExport")
    )  # fmt: skip
    return psparse.string_values(entry)


def _schema(doc: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    ref = schema.get("$ref")
    if ref is None:
        return schema
    resolved: dict[str, Any] = doc["components"]["schemas"][ref.rsplit("/", 1)[1]]
    return resolved


def _properties(doc: dict[str, Any], schema: dict[str, Any]) -> set[str]:
    """Every property a schema allows (through $ref and allOf)."""
    schema = _schema(doc, schema)
    found = set(schema.get("properties", {}))
    for part in schema.get("allOf", []):
        found |= _properties(doc, part)
    return found


def _operation(doc: dict[str, Any], method: str, path: str) -> dict[str, Any] | None:
    for template, item in doc["paths"].items():
        if re.sub(r"\{[^}]+\}", "{}", template) == "/api/v1" + path and method.lower() in item:
            operation: dict[str, Any] = item[method.lower()]
            return operation
    return None


@pytest.mark.parametrize("path", sorted(MODULE.glob("*.ps*1")), ids=lambda p: p.name)
def test_every_powershell_file_parses(path: Path) -> None:
    assert psparse.syntax_errors(path.read_bytes()) == []


def test_the_parser_finds_syntax_errors() -> None:
    broken = b"function Get-Broken {\n    param([string]$Name\n    if ($Name { 'x' }\n"
    assert psparse.syntax_errors(broken) != []


def test_the_format_file_is_xml_with_a_view_per_output_type(functions: dict[str, psparse.Function]) -> None:
    root = ET.parse(FORMAT).getroot()
    views = {v.findtext("ViewSelectedBy/TypeName"): v for v in root.iter("View")}
    typenames = set(re.findall(r"'(Basil\.[A-Za-z]+)'\s*=\s*@\{", PSM1.read_text(encoding="utf-8")))
    typenames |= set(re.findall(r"PSTypeName\s*=\s*'(Basil\.[A-Za-z]+)'", PSM1.read_text(encoding="utf-8")))
    assert typenames == set(views)
    declared = {
        t for f in functions.values() for t in re.findall(r"\[OutputType\('(Basil\.[A-Za-z]+)'\)\]", f.source)
    }
    assert declared <= set(views)
    for name, view in views.items():
        columns = [c.findtext("PropertyName") for c in view.iter("TableColumnItem")]
        labels = [h.findtext("Label") for h in view.iter("TableColumnHeader")]
        assert len(columns) == len(labels), name
        fields = _mapped_fields().get(name)
        if fields is not None:
            assert {c for c in columns if c} <= set(fields), name


def test_the_manifest_exports_exactly_the_module_s_cmdlets(
    exported: list[str], functions: dict[str, psparse.Function]
) -> None:
    assert set(exported) == REQUIRED
    members = next(
        n for n in psparse.walk(psparse.read(PSM1).root_node)
        if n.type == "command" and psparse.text(n).startswith("Export-ModuleMember")
    )  # fmt: skip
    assert sorted(psparse.string_values(members)) == sorted(exported)
    assert set(exported) <= set(functions)
    manifest = PSD1.read_text(encoding="utf-8")
    assert re.search(r"RootModule\s*=\s*'Basil\.psm1'", manifest)
    assert re.search(r"FormatsToProcess\s*=\s*@\('Basil\.Format\.ps1xml'\)", manifest)
    assert re.search(r"GUID\s*=\s*'[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}'", manifest)


def test_every_function_has_an_approved_verb(functions: dict[str, psparse.Function]) -> None:
    assert functions
    for name in functions:
        verb, _, noun = name.partition("-")
        assert noun, name
        assert verb in psparse.APPROVED_VERBS, name


def test_state_changes_support_whatif_and_confirm(functions: dict[str, psparse.Function]) -> None:
    changing = set()
    for function in functions.values():
        for call in psparse.api_calls(function):
            if call.method != "GET" and (call.method, call.path) not in READ_LIKE:
                changing.add(function.name)
    assert changing >= {"New-BasilPlan", "Approve-BasilPlan", "Start-BasilPlan", "Stop-BasilPlan",
                        "Set-BasilPool", "Start-BasilJob"}  # fmt: skip
    for name in changing:
        function = functions[name]
        assert "SupportsShouldProcess" in function.attributes, name
        assert "$PSCmdlet.ShouldProcess(" in function.source, name
    for function in functions.values():
        if "SupportsShouldProcess" in function.attributes:
            assert "$PSCmdlet.ShouldProcess(" in function.source, function.name


def test_every_cmdlet_has_help_with_examples(
    exported: list[str], functions: dict[str, psparse.Function]
) -> None:
    for name in exported:
        function = functions[name]
        assert ".SYNOPSIS" in function.help, name
        assert ".DESCRIPTION" in function.help, name
        assert function.help.count(".EXAMPLE") >= 1, name
        for parameter in function.parameters:
            assert f".PARAMETER {parameter}" in function.help, (name, parameter)


def _mapped_fields() -> dict[str, dict[str, str]]:
    """$script:BasilTypes: per output type, its schema and the Basil field of each property."""
    tree = psparse.read(PSM1)
    out: dict[str, dict[str, str]] = {}
    for entry in psparse.walk(tree.root_node):
        if entry.type != "hash_entry" or not psparse.text(entry).startswith("'Basil."):
            continue
        name = psparse.unquote(psparse.text(entry.children[0]))
        fields = next(
            n for n in psparse.walk(entry)
            if n.type == "hash_entry" and psparse.text(n).startswith("Fields")
        )  # fmt: skip
        literal = next(n for n in psparse.walk(fields) if n.type == "hash_literal_expression")
        pairs = dict(zip(psparse.hash_keys(literal), psparse.string_values(literal), strict=True))
        schema = re.search(r"Schema\s*=\s*'(\w+)'", psparse.text(entry))
        assert schema is not None, name
        out[name] = {"$schema": schema.group(1), **pairs}
    return out


def test_every_mapped_response_field_is_in_the_openapi_schema(openapi: dict[str, Any]) -> None:
    mapped = _mapped_fields()
    assert len(mapped) >= 8
    for name, fields in mapped.items():
        schema = {"$ref": f"#/components/schemas/{fields['$schema']}"}
        allowed = _properties(openapi, schema)
        missing = {k: v for k, v in fields.items() if k != "$schema" and v not in allowed}
        assert missing == {}, f"{name}: fields not in {fields['$schema']}"


def test_every_rest_call_exists_in_the_openapi_document(
    openapi: dict[str, Any], functions: dict[str, psparse.Function]
) -> None:
    calls = [c for f in functions.values() for c in psparse.api_calls(f)]
    assert len(calls) >= 15
    for call in calls:
        operation = _operation(openapi, call.method, call.path)
        assert operation is not None, (
            f"{call.function}: {call.method} {call.path} is not in the OpenAPI document"
        )
        if call.body_keys is not None:
            assert "requestBody" in operation, call
            schema = operation["requestBody"]["content"]["application/json"]["schema"]
            unknown = set(call.body_keys) - _properties(openapi, schema)
            assert unknown == set(), f"{call.function}: {call.method} {call.path} sends unknown {unknown}"
        query = {p["name"] for p in operation.get("parameters", []) if p["in"] == "query"}
        assert set(call.query_keys) <= query, call


def test_an_api_change_would_fail_the_check(openapi: dict[str, Any]) -> None:
    """The checks above compare against the document: a renamed field or path is caught."""
    renamed = {
        **openapi,
        "components": {**openapi["components"], "schemas": dict(openapi["components"]["schemas"])},
    }
    plan = dict(renamed["components"]["schemas"]["Plan"])
    plan["properties"] = {k: v for k, v in plan["properties"].items() if k != "state"}
    renamed["components"]["schemas"]["Plan"] = plan
    assert "state" not in _properties(renamed, {"$ref": "#/components/schemas/Plan"})
    assert "state" in _mapped_fields()["Basil.Plan"].values()
    assert _operation(openapi, "POST", "/plans/{}/apply") is not None
    assert _operation(openapi, "POST", "/plans/{}/execute") is None
