"""The OpenAPI 3.1 document of the service's two front doors, /api/v1 and /auth, generated with apispec
from their marshmallow schemas and from what each view declares (its scope, its step-up). It stands
above both doors, which never import each other, so one document describes them both."""

from functools import cache
from typing import NamedTuple

from apispec import APISpec
from apispec.ext.marshmallow import MarshmallowPlugin
from flask import current_app

from ..api import schemas as api
from ..api.scopes import declared_scope
from ..api.step_up import needs_step_up
from ..auth import schemas as auth
from ..provider.discovery import discovery_url
from ..security import CSRF_HEADER
from ..tokens.dpop_jwt import ALGORITHMS as DPOP_ALGORITHMS
from .api_paths import OPERATIONS as API_OPERATIONS
from .api_paths import api_paths
from .auth_paths import OPERATIONS as AUTH_OPERATIONS
from .auth_paths import auth_paths

OPERATIONS = API_OPERATIONS | AUTH_OPERATIONS  # (path, method) -> the endpoint of its view
SCHEMAS = {
    "PublicProfile": api.PublicProfileSchema,
    "OwnProfileEnvelope": api.OwnProfileEnvelopeSchema,
    "PokeRequest": api.PokeRequestSchema,
    "PokeResult": api.PokeResultSchema,
    "ErrorEnvelope": api.ErrorEnvelopeSchema,
    "ExchangeRequest": auth.ExchangeRequestSchema,
    "SessionInfo": auth.SessionInfoSchema,
    "SessionList": auth.SessionListSchema,
    "LogoutUrl": auth.LogoutUrlSchema,
    "BackchannelLogoutRequest": auth.BackchannelLogoutRequestSchema,
    "BackchannelError": auth.BackchannelErrorSchema,
}


class Described(NamedTuple):
    """What the document reads from one app: its settings and its views' declarations."""

    issuer: str
    session_cookie: str
    login_cookie: str
    dpop: bool
    scopes: tuple[tuple[tuple[str, str], str | None], ...]
    step_up_operations: tuple[tuple[str, str], ...]
    step_up: tuple[tuple[str, ...], int | None]
    login_acr_values: tuple[str, ...]


def openapi_document(view_functions: dict) -> dict:
    """The document for this app's settings and the declarations of its views (built once per process)."""
    config = current_app.config
    return _document(
        Described(
            issuer=config["OIDC_ISSUER_URL"],
            session_cookie=config["SESSION_COOKIE_NAME"],
            login_cookie=config["LOGIN_COOKIE_NAME"],
            dpop=config["DPOP"],
            scopes=tuple((key, declared_scope(view_functions[endpoint])) for key, endpoint in API_OPERATIONS.items()),
            step_up_operations=tuple(
                key for key, endpoint in API_OPERATIONS.items() if needs_step_up(view_functions[endpoint])
            ),
            step_up=(tuple(config["STEP_UP_ACR"]), config["STEP_UP_MAX_AGE"]),
            login_acr_values=tuple(config["LOGIN_ACR_VALUES"]),
        )
    )


@cache
def _document(app: Described) -> dict:
    spec = APISpec(
        title="Profile & Poke API",
        version="1.0.0",
        openapi_version="3.1.0",
        plugins=[MarshmallowPlugin()],
        servers=[{"url": "/", "description": "this service: the API under /api/v1, the browser sign-in under /auth"}],
    )
    for name, schema in SCHEMAS.items():
        spec.components.schema(name, schema=schema)
    for name, scheme in _security_schemes(app).items():
        spec.components.security_scheme(name, scheme)
    paths = api_paths(dict(app.scopes), app.dpop, app.step_up_operations, app.step_up)
    paths |= auth_paths(login_cookie=app.login_cookie, acr_values=app.login_acr_values)
    for path, operations in paths.items():
        for method, operation in operations.items():
            operation["operationId"] = OPERATIONS[path, method].rpartition(".")[2]
        spec.path(path=path, operations=operations)
    return spec.to_dict()


def _security_schemes(app: Described) -> dict:
    """Access tokens (bearer, and DPoP-bound when DPOP is on) for API clients; the session cookie and
    the CSRF header for the same-origin browser app."""
    scopes = " and/or ".join(f"`{scope}`" for _, scope in app.scopes if scope)
    schemes = {
        "bearer": {
            "type": "openIdConnect",
            "openIdConnectUrl": discovery_url(app.issuer),
            "description": f"access token with {scopes}, issued to a login client (Authorization Code + PKCE)",
        }
    }
    if app.dpop:
        schemes["dpop"] = {
            "type": "http",
            "scheme": "DPoP",
            "description": "the same access token bound to a key (RFC 9449): `Authorization: DPoP <token>` "
            f"and one `DPoP` proof per request, signed with {' '.join(DPOP_ALGORITHMS)}",
        }
    schemes["session"] = {
        "type": "apiKey",
        "in": "cookie",
        "name": app.session_cookie,
        "description": "the same-origin browser session /auth signs in; never readable by a script",
    }
    schemes["csrf"] = {
        "type": "apiKey",
        "in": "header",
        "name": CSRF_HEADER,
        "description": f"always the value `1`: `{CSRF_HEADER}: 1` proves a same-origin script sent the call (a "
        "cross-site page cannot set it without a CORS preflight, which this service never grants)",
    }
    return schemes
