"""The request validator: every problem at once, each with its path, for the JSON Schema subset used."""

from __future__ import annotations

from typing import Any

import pytest

from basil.api import schemas
from basil.api.validation import check, problems, query_values
from basil.errors import ValidationError


def _fields(value: Any, schema: dict[str, Any]) -> dict[str, str]:
    return {p.field: p.message for p in problems(value, schema)}


def test_valid_plan_bodies_pass() -> None:
    assert problems({"recommendation_id": "e83e"}, schemas.CREATE_PLAN) == []
    assert (
        problems({"pod": "p", "moves": [{"disk": "vm-1:scsi0:1", "to": "datastore-3"}]}, schemas.CREATE_PLAN)
        == []
    )


def test_nested_problems_have_paths_and_all_are_reported() -> None:
    found = _fields(
        {"pod": 3, "moves": [{"to": "x"}, "nope", {"disk": "", "to": "y", "when": 1}]},
        schemas.CREATE_PLAN,
    )
    assert found == {
        "pod": "must be a string, got 3",
        "moves[0].disk": "is required",
        "moves[1]": "must be an object, got 'nope'",
        "moves[2].disk": "must not be empty",
        "moves[2].when": "is not a known field (known: disk, to)",
    }


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"size_gb": True}, "size_gb"),  # a boolean is not a number
        ({"size_gb": float("nan")}, "size_gb"),
        ({"size_gb": 0}, "size_gb"),  # exclusiveMinimum
        ({"read_pct": 100.5}, "read_pct"),
        ({"hosts": "esx1"}, "hosts"),
        ({"hosts": ["esx1", 2]}, "hosts[1]"),
    ],
)
def test_numbers_and_lists(body: dict[str, Any], field: str) -> None:
    base = {"pod": "p", "size_gb": 1, "oio": 1, "io_size_kb": 8, "read_pct": 50, "random_pct": 50}
    assert set(_fields({**base, **body}, schemas.PLACEMENT_REQUEST)) == {field}


def test_integers_accept_whole_floats_only() -> None:
    schema = {"type": "integer"}
    assert problems(3, schema) == []
    assert problems(3.0, schema) == []
    assert [p.field for p in problems(3.5, schema)] == ["body"]


def test_one_of_shapes() -> None:
    both = _fields(
        {"recommendation_id": 1, "pod": "p", "moves": [{"disk": "d", "to": "t"}]}, schemas.CREATE_PLAN
    )
    assert "give exactly one of" in both["body"]


def test_check_raises_one_error_with_every_problem() -> None:
    with pytest.raises(ValidationError) as err:
        check({"name": "", "role": "god"}, schemas.CREATE_TOKEN)
    assert {p.field for p in err.value.problems} == {"name", "role"}


def test_min_properties() -> None:
    assert "at least one of" in _fields({}, schemas.REBALANCE_REQUEST)["body"]


def test_query_values_are_typed_defaulted_and_checked() -> None:
    params = {
        "hours": {"type": "number", "exclusiveMinimum": 0, "default": 24},
        "limit": {"type": "integer", "minimum": 1},
        "state": {"type": "string", "enum": ["a", "b"]},
        "flag": {"type": "boolean"},
    }
    assert query_values({}, params) == {"hours": 24}
    assert query_values({"hours": "1.5", "limit": "3", "state": "b", "flag": "true"}, params) == {
        "hours": 1.5, "limit": 3, "state": "b", "flag": True,
    }  # fmt: skip
    with pytest.raises(ValidationError) as err:
        query_values({"hours": "x", "limit": "0", "state": "c", "flag": "maybe", "other": "1"}, params)
    assert {p.field for p in err.value.problems} == {
        "query.hours", "query.limit", "query.state", "query.flag", "query.other",
    }  # fmt: skip
