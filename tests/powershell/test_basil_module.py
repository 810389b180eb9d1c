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


def api_mismatches(doc: dict[str, Any], functions: dict[str, psparse.Function]) -> list[str]:
    """Every way the module disagrees with the OpenAPI document *doc*: a mapped response field missing
    from its schema, a REST call whose method and path are not an operation, a body field or query
    parameter the operation does not take."""
    found: list[str] = []
    for name, fields in _mapped_fields().items():
        allowed = _properties(doc, {"$ref": f"#/components/schemas/{fields['$schema']}"})
        for prop, field in fields.items():
            if prop != "$schema" and field not in allowed:
                found.append(f"{name}.{prop}: no field {field!r} in schema {fields['$schema']}")
    for call in (c for f in functions.values() for c in psparse.api_calls(f)):
        where = f"{call.function}: {call.method} {call.path}"
        operation = _operation(doc, call.method, call.path)
        if operation is None:
            found.append(f"{where} is not in the OpenAPI document")
            continue
        if call.body_keys is not None:
            body = operation.get("requestBody", {}).get("content", {}).get("application/json", {})
            allowed = _properties(doc, body["schema"]) if body else set()
            found += [f"{where} sends unknown field {k!r}" for k in call.body_keys if k not in allowed]
        query = {p["name"] for p in operation.get("parameters", []) if p["in"] == "query"}
        found += [f"{where} sends unknown query parameter {k!r}" for k in call.query_keys if k not in query]
    return found


def test_every_rest_call_and_mapped_field_exists_in_the_openapi_document(
    openapi: dict[str, Any], functions: dict[str, psparse.Function]
) -> None:
    assert len(_mapped_fields()) >= 8
    assert len([c for f in functions.values() for c in psparse.api_calls(f)]) >= 15
    assert api_mismatches(openapi, functions) == []


def _without(doc: dict[str, Any], schema: str, field: str) -> dict[str, Any]:
    """A copy of *doc* whose component *schema* no longer has *field*."""
    schemas = dict(doc["components"]["schemas"])
    changed = dict(schemas[schema])
    changed["properties"] = {k: v for k, v in changed["properties"].items() if k != field}
    schemas[schema] = changed
    return {**doc, "components": {**doc["components"], "schemas": schemas}}


def test_an_api_change_that_breaks_the_module_is_caught(
    openapi: dict[str, Any], functions: dict[str, psparse.Function]
) -> None:
    assert api_mismatches(_without(openapi, "Plan", "state"), functions) == [
        "Basil.Plan.State: no field 'state' in schema Plan"
    ]
    assert api_mismatches(_without(openapi, "CreatePlan", "recommendation_id"), functions) == [
        "New-BasilPlan: POST /plans sends unknown field 'recommendation_id'"
    ]
    paths = {k.replace("/apply", "/execute"): v for k, v in openapi["paths"].items()}
    assert api_mismatches({**openapi, "paths": paths}, functions) == [
        "Start-BasilPlan: POST /plans/{}/apply is not in the OpenAPI document"
    ]
