"""The Flask application factory: ``create_app(service)`` wires blueprints, auth, errors, metrics, headers.

Everything under ``/api/v1`` is JSON. Errors of the :mod:`basil.errors` hierarchy (and HTTP errors of
Flask itself) are answered by one handler as ``{"error", "message", "problems"?}`` with the class's
status. Every request but ``/health``, ``/openapi.json`` and the plugin's files is authenticated
(:mod:`basil.api.auth`); every write is audited: by the service for the actions it runs, here for a
write refused before reaching it (unauthenticated, forbidden, invalid).
"""

from __future__ import annotations

import logging
import math
import secrets
import time
from datetime import UTC, date, datetime
from enum import Enum
from importlib import import_module
from typing import Any

from flask import Flask, Response, g, request
from flask.json.provider import DefaultJSONProvider
from werkzeug.exceptions import HTTPException
from werkzeug.middleware.proxy_fix import ProxyFix

from basil.api import routes
from basil.api.auth import Authenticator, Principal, TooManyRefusalsError
from basil.api.context import ApiState, current_service, current_state
from basil.api.metrics import ApiMetrics
from basil.api.openapi import openapi_path
from basil.api.operations import OPERATIONS, Operation, declare_static, json_response
from basil.api.service import ServiceApi
from basil.errors import AuthenticationError, BasilError, PermissionDeniedError
from basil.store.audit import AuditEntry, record

log = logging.getLogger(__name__)

API_PREFIX = "/api/v1"
MAX_BODY_BYTES = 4 * 1024 * 1024

_API_HEADERS = {
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Content-Security-Policy": "default-src 'none'; frame-ancestors 'none'",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
    "Cross-Origin-Resource-Policy": "same-origin",
}
_OTHER_HEADERS = {"X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer"}
_CORS_HEADERS = "Authorization, Content-Type, X-Basil-VC-Session, X-Basil-VC-Server"


class JSONProvider(DefaultJSONProvider):
    """JSON with ISO 8601 times (Flask's default writes HTTP dates) and enums by value."""

    sort_keys = False

    @staticmethod
    def default(o: Any) -> Any:
        if isinstance(o, datetime):
            return (o if o.tzinfo else o.replace(tzinfo=UTC)).isoformat()
        if isinstance(o, date):
            return o.isoformat()
        if isinstance(o, Enum):
            return o.value
        if isinstance(o, set | frozenset):
            return sorted(o)
        return DefaultJSONProvider.default(o)


def create_app(service: ServiceApi, *, authenticator: Authenticator | None = None) -> Flask:
    """The WSGI application of the Basil API over *service* (its config, store and façade)."""
    app = Flask("basil.api", static_folder=None)
    app.json_provider_class = JSONProvider
    app.json = JSONProvider(app)
    app.config["MAX_CONTENT_LENGTH"] = MAX_BODY_BYTES
    app.url_map.strict_slashes = False
    config = service.config
    metrics = ApiMetrics()
    if authenticator is None:
        authenticator = Authenticator(
            config.auth,
            config.vcenters,
            service.store,
            on_session_validation=lambda outcome: metrics.session_validations.labels(outcome).inc(),
        )
    origins = frozenset(f"https://{vc.server}".lower() for vc in config.vcenters)
    app.extensions["basil"] = ApiState(service, authenticator, metrics, origins)

    for blueprint in routes.API_BLUEPRINTS:
        app.register_blueprint(blueprint, url_prefix=API_PREFIX + (blueprint.url_prefix or ""))
    app.register_blueprint(routes.ROOT_BLUEPRINT)
    _register_plugin_assets(app)

    app.register_error_handler(BasilError, _basil_error)
    app.register_error_handler(HTTPException, _http_error)
    app.register_error_handler(Exception, _unexpected_error)
    app.before_request(_before)
    app.after_request(_after)
    proxies = config.server.trusted_proxies
    if proxies:
        # The audit's "from" is then the client's address as the proxies saw it, not the proxy's.
        app.wsgi_app = ProxyFix(app.wsgi_app, x_for=proxies, x_proto=proxies)  # type: ignore[method-assign]
    return app


def _register_plugin_assets(app: Flask) -> None:
    """The plugin's static files and manifest (built by the plugin helper), when that module exists."""
    try:
        module = import_module("basil.api.plugin_assets")
    except ModuleNotFoundError as err:
        if err.name != "basil.api.plugin_assets":
            raise
        return
    blueprint = module.blueprint
    app.register_blueprint(blueprint)
    # The plugin's files are public (the vSphere Client fetches them without Basil credentials) and
    # documented as such, so that every route of the app is in the OpenAPI document.
    for rule in app.url_map.iter_rules():
        if rule.endpoint.startswith(f"{blueprint.name}.") and rule.endpoint not in OPERATIONS:
            declare_static(rule.endpoint, openapi_path(rule.rule), "The vSphere Client plugin's files")


# --- per request ---------------------------------------------------------------------------------------


def _before() -> Response | None:
    g.started = time.perf_counter()
    current_state().metrics.in_flight.inc()
    if request.method == "OPTIONS" and request.path.startswith(API_PREFIX):
        # A CORS preflight: answered here (headers added in _after), never authenticated.
        return Response(status=204)
    return None


def _after(response: Response) -> Response:
    state = current_state()
    started = g.pop("started", None)
    rule = request.url_rule.rule if request.url_rule is not None else "unmatched"
    if started is not None:
        state.metrics.in_flight.dec()
        state.metrics.latency.labels(request.method, rule).observe(time.perf_counter() - started)
    state.metrics.requests.labels(request.method, rule, str(response.status_code)).inc()
    # Headers a view did not set (werkzeug's setdefault raises and catches an HTTP exception per absent
    # header: ten a request, about 40 µs of the serving process's CPU).
    present = {name.lower() for name, _ in response.headers}
    api = request.path.startswith(API_PREFIX) or request.path == "/metrics"
    for name, value in (_API_HEADERS if api else _OTHER_HEADERS).items():
        if name.lower() not in present:
            response.headers.add(name, value)
    if api:
        _cors(response, state)
    if request.is_secure and "strict-transport-security" not in present:
        response.headers.add("Strict-Transport-Security", "max-age=31536000")
    return response


def _cors(response: Response, state: ApiState) -> None:
    """CORS only for the configured vCenters' origins (a vSphere Client calling the API directly)."""
    origin = request.headers.get("Origin", "")
    if not origin or origin.lower() not in state.cors_origins or not request.path.startswith(API_PREFIX):
        return
    response.headers["Access-Control-Allow-Origin"] = origin
    response.headers["Vary"] = "Origin"
    if request.method == "OPTIONS":
        response.headers["Access-Control-Allow-Methods"] = "GET, POST, PUT, DELETE"
        response.headers["Access-Control-Allow-Headers"] = _CORS_HEADERS
        response.headers["Access-Control-Max-Age"] = "600"


# --- errors --------------------------------------------------------------------------------------------


def _error_response(body: dict[str, object], status: int) -> Response:
    response = json_response(body, status)
    if status == 401:
        response.headers["WWW-Authenticate"] = 'Bearer realm="basil"'
    return response


def _basil_error(err: BasilError) -> Response:
    status = err.http_status
    metrics = current_state().metrics
    if isinstance(err, AuthenticationError):
        metrics.auth_failures.labels("unauthenticated").inc()
    elif isinstance(err, PermissionDeniedError):
        metrics.auth_failures.labels("forbidden").inc()
    _audit_refused(err.code, status, err.message)
    if status >= 500:
        log.warning("%s %s: %s (%s)", request.method, request.path, err.message, err.code)
    response = _error_response(err.to_dict(), status)
    if isinstance(err, TooManyRefusalsError):
        response.headers["Retry-After"] = str(max(1, math.ceil(err.retry_after_s)))
    return response


def _http_error(err: HTTPException) -> Response:
    status = err.code or 500
    code = {
        404: "not_found",
        405: "method_not_allowed",
        413: "too_large",
        415: "unsupported_media_type",
    }.get(status, (err.name or "error").lower().replace(" ", "_"))
    message = err.description or err.name or "error"
    if status == 404:
        message = f"no such resource: {request.path}"
    elif status == 413:
        message = f"the request body is larger than {MAX_BODY_BYTES // (1024 * 1024)} MiB"
    _audit_refused(code, status, message)
    response = _error_response({"error": code, "message": message}, status)
    if status == 405 and err.valid_methods:  # type: ignore[attr-defined]
        response.headers["Allow"] = ", ".join(err.valid_methods)  # type: ignore[attr-defined]
    return response


def _unexpected_error(err: Exception) -> Response:
    reference = secrets.token_hex(4)
    log.exception("unexpected error %s on %s %s", reference, request.method, request.path)
    _audit_refused("internal", 500, f"unexpected error (reference {reference})")
    return _error_response(
        {
            "error": "internal",
            "message": f"internal error; the service log has the details (reference {reference})",
        },
        500,
    )


_REFUSALS = {
    401: "denied",
    403: "denied",
    429: "denied",
    400: "invalid",
    405: "invalid",
    413: "invalid",
    415: "invalid",
}


def _audit_refused(code: str, status: int, message: str) -> None:
    """Audit a write that never reached a service action (the service audits those it runs)."""
    if request.method not in ("POST", "PUT", "DELETE", "PATCH"):
        return
    op: Operation | None = g.get("operation")
    if op is None or not op.is_write or g.get("service_called", False):
        return  # no such operation, one that changes nothing, or one the service audits itself
    outcome = _REFUSALS.get(status, "failed")
    principal: Principal | None = g.get("principal")
    try:
        target = op.target.format(**(request.view_args or {})) if op.target else request.path
    except (KeyError, IndexError):
        target = request.path
    entry = AuditEntry(
        actor=principal.name if principal else "anonymous",
        actor_kind=principal.via if principal else "anonymous",
        action=op.action,
        target=target,
        source=request.remote_addr or "",
        outcome=outcome,
        message=message[:2000],
        details={"status": status, "error": code, "method": request.method, "path": request.path},
    )
    try:
        with current_service().store.session() as session:
            record(session, entry)
    except BasilError as err:
        log.error("audit of a refused %s %s not recorded: %s", request.method, request.path, err.message)
