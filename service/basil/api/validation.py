"""Checking request bodies and query strings against the JSON Schemas the OpenAPI document publishes.

One schema serves both: the document shows it, this module enforces it, so the two cannot drift.
Only the subset of JSON Schema the API uses is understood (type, properties, required,
additionalProperties, items, enum, minimum/maximum, exclusiveMinimum, minLength/maxLength,
minItems/maxItems, minProperties, pattern, oneOf of required-sets); every problem is reported at once with its
path (``moves[2].to``), the way :class:`basil.errors.ValidationError` expects.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from basil.errors import Problem, ValidationError

Schema = Mapping[str, Any]

_TYPE_NAMES = {
    "object": "an object",
    "array": "a list",
    "string": "a string",
    "integer": "a whole number",
    "number": "a number",
    "boolean": "true or false",
    "null": "null",
}


_PYTHON_TYPES: dict[str, type | tuple[type, ...]] = {
    "object": dict,
    "array": list,
    "string": str,
    "boolean": bool,
    "null": type(None),
}


def _is_type(value: Any, kind: str) -> bool:
    if kind in _PYTHON_TYPES:
        return isinstance(value, _PYTHON_TYPES[kind])
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    if kind == "integer":
        return isinstance(value, int) or (math.isfinite(value) and float(value).is_integer())
    return math.isfinite(value)  # number: NaN and infinities are not JSON


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def problems(value: Any, schema: Schema, path: str = "") -> list[Problem]:
    """Every way *value* breaks *schema*, each with the path of the offending field."""
    found: list[Problem] = []
    kinds = schema.get("type")
    if kinds is not None:
        allowed = [kinds] if isinstance(kinds, str) else list(kinds)
        if not any(_is_type(value, k) for k in allowed):
            wanted = " or ".join(_TYPE_NAMES[k] for k in allowed)
            return [Problem(path or "body", f"must be {wanted}, got {_show(value)}")]
    if "enum" in schema and value not in schema["enum"]:
        options = ", ".join(repr(v) for v in schema["enum"])
        found.append(Problem(path or "body", f"must be one of {options}, got {_show(value)}"))
    if isinstance(value, dict):
        found += _object_problems(value, schema, path)
    elif isinstance(value, list):
        found += _array_problems(value, schema, path)
    elif isinstance(value, str):
        found += _string_problems(value, schema, path)
    elif isinstance(value, int | float) and not isinstance(value, bool):
        found += _number_problems(value, schema, path)
    return found


def _object_problems(value: dict[str, Any], schema: Schema, path: str) -> list[Problem]:
    found: list[Problem] = []
    properties: Mapping[str, Schema] = schema.get("properties", {})
    if len(value) < schema.get("minProperties", 0):
        found.append(Problem(path or "body", f"must give at least one of {', '.join(properties)}"))
    for key in schema.get("required", ()):
        if key not in value:
            found.append(Problem(_join(path, key), "is required"))
    extra = schema.get("additionalProperties", True)
    for key, item in value.items():
        if key in properties:
            found += problems(item, properties[key], _join(path, key))
        elif extra is False:
            known = ", ".join(properties) or "none"
            found.append(Problem(_join(path, key), f"is not a known field (known: {known})"))
        elif isinstance(extra, Mapping):
            found += problems(item, extra, _join(path, key))
    if "oneOf" in schema:
        # Only the "exactly one of these shapes" use: each branch lists the fields it requires.
        matching = [b for b in schema["oneOf"] if all(k in value for k in b.get("required", ()))]
        if len(matching) != 1:
            shapes = " or ".join("{" + ", ".join(b.get("required", ())) + "}" for b in schema["oneOf"])
            found.append(Problem(path or "body", f"give exactly one of {shapes}"))
    return found


def _array_problems(value: list[Any], schema: Schema, path: str) -> list[Problem]:
    found: list[Problem] = []
    where = path or "body"
    if "minItems" in schema and len(value) < schema["minItems"]:
        found.append(Problem(where, f"must have at least {schema['minItems']} item(s)"))
    if "maxItems" in schema and len(value) > schema["maxItems"]:
        found.append(Problem(where, f"must have at most {schema['maxItems']} item(s)"))
    items = schema.get("items")
    if isinstance(items, Mapping):
        for i, item in enumerate(value):
            found += problems(item, items, f"{path}[{i}]")
    return found


def _string_problems(value: str, schema: Schema, path: str) -> list[Problem]:
    found: list[Problem] = []
    where = path or "body"
    if "minLength" in schema and len(value) < schema["minLength"]:
        found.append(
            Problem(
                where,
                "must not be empty"
                if schema["minLength"] == 1
                else f"must have at least {schema['minLength']} characters",
            )
        )
    if "maxLength" in schema and len(value) > schema["maxLength"]:
        found.append(Problem(where, f"must have at most {schema['maxLength']} characters"))
    if "pattern" in schema and not re.search(schema["pattern"], value):
        found.append(Problem(where, f"{value!r} does not have the expected form ({schema['pattern']})"))
    return found


def _number_problems(value: float, schema: Schema, path: str) -> list[Problem]:
    found: list[Problem] = []
    where = path or "body"
    if "minimum" in schema and value < schema["minimum"]:
        found.append(Problem(where, f"must be at least {schema['minimum']:g}, got {value:g}"))
    if "exclusiveMinimum" in schema and value <= schema["exclusiveMinimum"]:
        found.append(Problem(where, f"must be greater than {schema['exclusiveMinimum']:g}, got {value:g}"))
    if "maximum" in schema and value > schema["maximum"]:
        found.append(Problem(where, f"must be at most {schema['maximum']:g}, got {value:g}"))
    return found


def _show(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "a list"
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def check(value: Any, schema: Schema, what: str = "request body") -> None:
    """Raise one :class:`ValidationError` listing every problem of *value* against *schema*."""
    found = problems(value, schema)
    if found:
        raise ValidationError(found, what)


def query_values(args: Mapping[str, str], parameters: Mapping[str, Schema]) -> dict[str, Any]:
    """Typed query parameters from their text, checked against each one's schema; unknown ones are errors.

    Problems name the parameter as ``query.<name>``.
    """
    found: list[Problem] = []
    values: dict[str, Any] = {}
    for name in args:
        if name not in parameters:
            known = ", ".join(parameters) or "none"
            found.append(Problem(f"query.{name}", f"is not a known parameter (known: {known})"))
    for name, schema in parameters.items():
        if name not in args:
            if "default" in schema:
                values[name] = schema["default"]
            continue
        text = args[name]
        kind = schema.get("type", "string")
        value: Any = text
        if kind in ("integer", "number"):
            try:
                value = int(text) if kind == "integer" else float(text)
            except ValueError:
                found.append(Problem(f"query.{name}", f"must be {_TYPE_NAMES[kind]}, got {text!r}"))
                continue
        elif kind == "boolean":
            if text.lower() not in ("true", "false", "1", "0"):
                found.append(Problem(f"query.{name}", f"must be true or false, got {text!r}"))
                continue
            value = text.lower() in ("true", "1")
        more = problems(value, schema, f"query.{name}")
        if more:
            found += more
            continue
        values[name] = value
    if found:
        raise ValidationError(found, "query")
    return values
