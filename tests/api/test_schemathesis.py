"""The OpenAPI document against the API, fuzzed: schemathesis generates requests from the document (valid
ones and invalid ones) for every operation, sends them to the app over a real Service (SQLite, the lab
vCenter) as an admin, and runs all its checks on each answer: no 5xx, the status and content type
documented, the body valid against the documented schema, valid data accepted, invalid data refused,
authentication not ignored.

In-process (the WSGI app, not `basil serve`) so that a few thousand requests take a minute and a 5xx
comes with its traceback; the HTTP front end has tests of its own (tests/serve).

Bounded: ``BASIL_FUZZ_EXAMPLES`` examples per operation (default 4; half that for the pool trees,
recursive documents slow to generate), no shrinking, a fixed seed: about 3 minutes on the shared
2-core machine under load (the pool operations take half of it).
"""

from __future__ import annotations

import os
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, settings
from schemathesis.specs.openapi.checks import negative_data_rejection, positive_data_acceptance

from basil.api import create_app

from .conftest import ApiEnv

EXAMPLES = int(os.environ.get("BASIL_FUZZ_EXAMPLES", "4"))

# Operations whose rules reach beyond what a JSON Schema can say: for these a schema-valid request may
# still be a 400 naming the field (the other checks still run on them).
_BEYOND = "a schema-valid request may break a rule beyond the schema: 400 naming the field"
EXCLUDED: dict[str, tuple[list[Any], str]] = {
    # The document must name a datastore and VMs that exist; reservations must fit the capacity (§4).
    "POST /api/v1/pools": ([positive_data_acceptance], _BEYOND),
    "PUT /api/v1/pools/{name}": ([positive_data_acceptance], _BEYOND),
    # Cron values in range, an existing IANA time zone, a window of at most 7 days.
    "PUT /api/v1/schedules/rebalance": ([positive_data_acceptance], _BEYOND),
    # Moves name disks of the pod and datastores it holds.
    "POST /api/v1/plans": ([positive_data_acceptance], _BEYOND),
    "POST /api/v1/placement": ([positive_data_acceptance], _BEYOND),
    # The trace must parse as SPC or CSV lines in time order, and a bound too small to be a float in
    # seconds is refused; a JSON Schema cannot say either.
    "POST /api/v1/capacity": ([positive_data_acceptance], _BEYOND),
    "PUT /api/v1/vms/{id}/trace": ([positive_data_acceptance], _BEYOND),
    # Disk names must be unique within the question (a JSON Schema cannot say unique by key).
    "POST /api/v1/whatif": ([positive_data_acceptance], _BEYOND),
    # A cursor must be one the service made for that list and sort; pod, datastore and vm filters name
    # objects that exist.
    "GET /api/v1/datastores": ([positive_data_acceptance], _BEYOND),
    "GET /api/v1/vms": ([positive_data_acceptance], _BEYOND),
    "GET /api/v1/disks": ([positive_data_acceptance], _BEYOND),
    # Validation answers 200 listing every problem of the tree, those the schema shows included (as
    # `basil srp validate` does): a document the schema refuses is not refused with a 4xx here.
    "POST /api/v1/pools/validate": ([negative_data_rejection], "200 with the problems listed"),
}


@pytest.fixture(scope="module")
def fuzzed_api(api_env: ApiEnv) -> Any:
    return schemathesis.openapi.from_wsgi("/api/v1/openapi.json", _closing(create_app(api_env.service)))


def _closing(app: Any) -> Any:
    """The app as a WSGI server calls it: the answer read whole, then closed (PEP 3333), which
    schemathesis's own WSGI transport leaves undone (the plugin's files would stay open)."""

    def call(environ: dict[str, Any], start_response: Any) -> list[bytes]:
        result = app(environ, start_response)
        try:
            return [b"".join(result)]
        finally:
            close = getattr(result, "close", None)
            if close is not None:
                close()

    return call


schema = schemathesis.pytest.from_fixture("fuzzed_api")


def _settings(examples: int) -> settings:
    return settings(
        max_examples=examples,
        deadline=None,
        derandomize=True,
        phases=[Phase.explicit, Phase.generate],
        suppress_health_check=list(HealthCheck),
    )


def _check(case: Any, api_env: ApiEnv) -> None:
    excluded = EXCLUDED.get(case.operation.label, ([], ""))[0]
    case.call_and_validate(headers=api_env.headers("admin"), excluded_checks=excluded)


@schema.exclude(path_regex="^/api/v1/pools").parametrize()
@_settings(EXAMPLES)
def test_the_api_answers_as_documented(case: Any, api_env: ApiEnv) -> None:
    _check(case, api_env)


# Pool trees are recursive documents, slow to generate: fewer of them.
@schema.include(path_regex="^/api/v1/pools").parametrize()
@_settings(max(1, EXAMPLES // 2))
def test_the_pool_api_answers_as_documented(case: Any, api_env: ApiEnv) -> None:
    _check(case, api_env)
