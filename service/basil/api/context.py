"""The per-app state the views reach (service, authenticator, metrics) and the current caller."""

from __future__ import annotations

from dataclasses import dataclass, field

from flask import current_app, g, request

from basil.api.answers import AnswerCache
from basil.api.auth import CREDENTIAL_HEADERS, Authenticator, Principal
from basil.api.metrics import ApiMetrics
from basil.api.service import ServiceApi
from basil.app.actor import Actor
from basil.errors import AuthenticationError, PermissionDeniedError


@dataclass
class ApiState:
    """What the views reach through ``current_app.extensions["basil"]``."""

    service: ServiceApi
    authenticator: Authenticator
    metrics: ApiMetrics
    cors_origins: frozenset[str] = field(default_factory=frozenset)
    answers: AnswerCache = field(default_factory=AnswerCache)  # rendered answers of cached reads

    def authenticate(self) -> Principal:
        """The caller of the current request (stored in ``g.principal``), or AuthenticationError."""
        headers = {name: request.headers.get(name, "") for name in CREDENTIAL_HEADERS}
        principal = self.authenticator.authenticate(headers, request.remote_addr or "")
        if principal is None:
            config = self.authenticator.config
            if config.anonymous_read and request.method in ("GET", "HEAD"):
                principal = Principal("anonymous", "viewer", "anonymous")
            else:
                raise AuthenticationError(
                    "authentication required: send 'Authorization: Bearer <API token>' "
                    "(or the vSphere Client's session in X-Basil-VC-Session)"
                )
        g.principal = principal
        return principal

    def authorize(self, principal: Principal, role: str) -> None:
        if not principal.allows(role):
            raise PermissionDeniedError(
                f"{principal.name} has the role {principal.role}; this needs {role} or above"
            )


def current_state() -> ApiState:
    state: ApiState = current_app.extensions["basil"]
    return state


def current_service() -> ServiceApi:
    return current_state().service


def current_actor() -> Actor:
    """The caller as the service's actions expect it."""
    principal: Principal = g.principal
    return Actor(principal.name, principal.role, request.remote_addr or "", principal.via)
