"""Declaring an API operation once: its route, role, schemas and audit name, for Flask and for OpenAPI.

Each view is registered with :func:`operation`, which records an :class:`Operation` beside the Flask
rule and wraps the view so that every call goes through the same steps: authenticate, check the
role, parse the query string and the JSON body against the declared schemas, run the view, and
answer JSON with the declared status. The OpenAPI document (:mod:`basil.api.openapi`) is built from
the same records, so a route cannot exist undocumented or be documented with a different shape.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from flask import Blueprint, Response, current_app, g, request

from basil.api import validation
from basil.api.answers import Answer, Cached
from basil.api.auth import ROLE_RANK
from basil.errors import Problem, ValidationError

Schema = Mapping[str, Any]
View = Callable[..., Any]

_PARAM = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")

#: How deep objects and lists may nest in a request body: far beyond any body of the API (a pool tree
#: of MAX_POOL_DEPTH levels fits), and the checks that walk a body stay shallow.
MAX_JSON_DEPTH = 100
_TOO_DEEP = object()

#: Every operation declared, by Flask endpoint ("<blueprint>.<function>").
OPERATIONS: dict[str, Operation] = {}


@dataclass(frozen=True)
class Operation:
    """One method on one path, as both Flask and the OpenAPI document see it."""

    method: str
    path: str  # OpenAPI form, relative to the blueprint's prefix: "/plans/{id}/approve"
    summary: str
    tag: str
    role: str | None  # None: no authentication (health, the OpenAPI document)
    response: Schema | None = None
    status: int = 200
    body: Schema | None = None
    body_required: bool = True
    query: Mapping[str, Schema] = field(default_factory=dict)
    description: str = ""
    errors: tuple[int, ...] = ()
    # Name of the audited action for writes ("plan.approve"); target like "plan/{id}" from path values.
    action: str = ""
    target: str = ""
    media_type: str = "application/json"
    # Headers of the success answer, by name: their description (e.g. Location of a 202's resource).
    headers: Mapping[str, str] = field(default_factory=dict)
    endpoint: str = ""
    prefix: str = ""
    # A read whose rendered answer is cached while what it names is unchanged (basil.api.answers).
    cache: Cached | None = None

    @property
    def full_path(self) -> str:
        return f"{self.prefix}{self.path}"

    @property
    def path_params(self) -> list[str]:
        return _PARAM.findall(self.path)

    @property
    def is_write(self) -> bool:
        return bool(self.action)


def flask_rule(path: str) -> str:
    """``/plans/{id}`` -> ``/plans/<id>`` (ids may hold ':' as in ``vm-17:scsi0:1``, never '/')."""
    return _PARAM.sub(r"<\1>", path)


def operation(
    bp: Blueprint,
    method: str,
    path: str,
    *,
    summary: str,
    role: str | None,
    response: Schema | None = None,
    status: int = 200,
    body: Schema | None = None,
    body_required: bool = True,
    query: Mapping[str, Schema] | None = None,
    description: str = "",
    errors: tuple[int, ...] = (),
    action: str = "",
    target: str = "",
    media_type: str = "application/json",
    headers: Mapping[str, str] | None = None,
    cache: Cached | None = None,
) -> Callable[[View], View]:
    """Register the decorated function as *method* *path* on *bp* and record its :class:`Operation`.

    *cache*: the answer (a GET's, returned as data, not as a Response) is cached and served again
    while the tables and state it names are unchanged (:mod:`basil.api.answers`)."""
    if role is not None and role not in ROLE_RANK:
        raise ValueError(f"unknown role {role!r}")
    if cache is not None and (method.upper() != "GET" or action):
        raise ValueError(f"only reads may be cached, not {method} {path}")

    def register(view: View) -> View:
        endpoint = f"{bp.name}.{view.__name__}"
        op = Operation(
            method=method.upper(),
            path=path,
            summary=summary,
            tag=bp.name,
            role=role,
            response=response,
            status=status,
            body=body,
            body_required=body_required,
            query=dict(query or {}),
            description=description or (view.__doc__ or "").strip(),
            errors=errors,
            action=action,
            target=target,
            media_type=media_type,
            headers=dict(headers or {}),
            endpoint=endpoint,
            prefix=bp.url_prefix or "",
            cache=cache,
        )
        if endpoint in OPERATIONS and OPERATIONS[endpoint].full_path != op.full_path:
            raise ValueError(f"endpoint {endpoint} declared twice")
        OPERATIONS[endpoint] = op

        def wrapped(**path_values: str) -> Response:
            return run_operation(op, view, path_values)

        wrapped.__name__ = view.__name__
        wrapped.__doc__ = view.__doc__
        bp.add_url_rule(flask_rule(path), endpoint=view.__name__, view_func=wrapped, methods=[op.method])
        return view

    return register


def declare_static(endpoint: str, path: str, summary: str) -> None:
    """Declare a public GET route registered by other means (the plugin's files), for the OpenAPI document."""
    OPERATIONS[endpoint] = Operation(
        method="GET",
        path=path,
        summary=summary,
        tag=endpoint.split(".", 1)[0],
        role=None,
        response={},
        media_type="*/*",
        errors=(404,),
        endpoint=endpoint,
    )


def run_operation(op: Operation, view: View, path_values: Mapping[str, str]) -> Response:
    """Authenticate, authorise, validate, run *view*, and make the response (see module docstring)."""
    state = current_app.extensions["basil"]
    g.operation = op
    if op.role is not None:
        principal = state.authenticate()
        state.authorize(principal, op.role)
    g.query = validation.query_values(request.args, op.query)
    g.body = _body(op) if op.body is not None else None
    # From here on a write is the service's to audit (or the view's own, for tokens): the web layer
    # audits only what it refused above.
    g.service_called = True
    if op.cache is not None:
        return _cached_answer(state, op, op.cache, view, path_values)
    result = view(**path_values)
    if isinstance(result, Response):
        return result
    if op.status == 204:
        return Response(status=204)
    return json_response(result, op.status)


def _cached_answer(
    state: Any, op: Operation, cached: Cached, view: View, path_values: Mapping[str, str]
) -> Response:
    """The answer of a cached read: the stored bytes while their basis holds, else the view's, stored."""
    principal = g.get("principal")
    role = principal.role if principal is not None else ""
    key = state.answers.key(op.endpoint, role, path_values, g.query)
    # Taken before the view runs (basil.app.view_cache): a write landing meanwhile moves it again.
    basis = state.answers.basis(cached, state.service.read_basis(cached.tables, cached.state))

    def build() -> Answer:
        result = view(**path_values)
        if isinstance(result, Response):
            raise TypeError(f"{op.endpoint} is cached and must return data, not a Response")
        return Answer(op.status, render_json(result))

    answer = state.answers.get(key, basis, build)
    return Response(answer.body, status=answer.status, mimetype="application/json")


def render_json(data: Any) -> bytes:
    """*data* as the app's JSON text (ISO 8601 times), newline-terminated, encoded."""
    text: str = current_app.json.dumps(data)
    return (text + "\n").encode("utf-8")


def json_response(data: Any, status: int = 200) -> Response:
    """*data* as a JSON response with the app's encoder (ISO 8601 times)."""
    return Response(render_json(data), status=status, mimetype="application/json")


def _body(op: Operation) -> Any:
    raw = request.get_data(cache=True)
    if not raw.strip():
        if op.body_required:
            raise ValidationError([Problem("body", "a JSON body is required")], "request body")
        return None
    if not request.is_json:
        raise ValidationError(
            [Problem("body", "must be JSON, sent with Content-Type: application/json")], "request body"
        )
    try:
        data = request.get_json(silent=True)
    except RecursionError:
        data = _TOO_DEEP
    if data is _TOO_DEEP or _deeper_than(data, MAX_JSON_DEPTH):
        raise ValidationError(
            [Problem("body", f"is nested deeper than {MAX_JSON_DEPTH} levels")], "request body"
        )
    if data is None:
        raise ValidationError([Problem("body", "is not valid JSON")], "request body")
    assert op.body is not None
    validation.check(data, op.body)
    return data


def _deeper_than(value: Any, limit: int) -> bool:
    """Whether objects and lists nest more than *limit* levels in *value* (walked without recursion)."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth >= limit:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False


def query_args() -> dict[str, Any]:
    """The current request's query parameters, typed and checked against the operation's schemas."""
    values: dict[str, Any] = g.query
    return values


def json_body() -> Any:
    """The current request's JSON body, checked against the operation's schema (None if optional, absent)."""
    return g.body
