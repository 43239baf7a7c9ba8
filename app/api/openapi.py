"""The OpenAPI 3.1 document of /api/v1, generated with apispec from the marshmallow schemas."""

from functools import cache

from apispec import APISpec
from apispec.ext.marshmallow import MarshmallowPlugin
from flask import current_app

from ..prefixes import API_PREFIX
from ..provider.discovery import discovery_url
from ..security import CSRF_HEADER
from ..tokens.dpop import ALGORITHMS as DPOP_ALGORITHMS
from .schemas import (
    ErrorEnvelopeSchema,
    OwnProfileEnvelopeSchema,
    PokeRequestSchema,
    PokeResultSchema,
    PublicProfileSchema,
)
from .scopes import declared_scope
from .step_up import needs_step_up

# The view behind each operation: its declared scope (app.api.scopes) is the operation's security,
# and its step-up declaration (app.api.step_up) gives its 401 the RFC 9470 challenge.
OPERATIONS = {
    ("/users/{username}", "get"): "api.public_profile",
    ("/me/profile", "get"): "api.own_profile",
    ("/pokes", "post"): "api.create_poke",
}

_ERROR = {"application/json": {"schema": "ErrorEnvelope"}}
_POKE_RESULT = {"application/json": {"schema": "PokeResult"}}
_CHALLENGE = {"WWW-Authenticate": {"schema": {"type": "string"}, "description": "RFC 6750 challenge"}}
_RETRY = {"Retry-After": {"schema": {"type": "integer"}, "description": "seconds until it may work"}}


def _error(description: str, headers=None) -> dict:
    return {"description": description, "content": _ERROR, **({"headers": headers} if headers else {})}


_COMMON = {
    "401": _error("no valid credentials (`unauthorized`, or `invalid_token` for a bad token)", _CHALLENGE),
    "403": _error(
        "`insufficient_scope` (message `scope <scope> required`), or `forbidden`: an "
        f"application token, a disabled account, or a cookie call without `{CSRF_HEADER}: 1`",
        _CHALLENGE,
    ),
    "405": _error("`method_not_allowed`"),
    "500": _error("`internal_error`"),
    "503": _error("`unavailable`: storage or identity provider unreachable", _RETRY),
}


def _step_up_401(acr_values: tuple[str, ...], max_age: int | None) -> dict:
    """The 401 of a sensitive action: the usual ones, and RFC 9470's challenge under this app's policy."""
    wanted = [f"`acr` one of `{' '.join(acr_values)}`"] if acr_values else []
    wanted += [f"a sign-in at most {max_age} s old (`auth_time`)"] if max_age is not None else []
    policy = " and ".join(wanted) or "nothing here (STEP_UP_ACR and STEP_UP_MAX_AGE are unset)"
    return _error(
        "no valid credentials (`unauthorized`, `invalid_token`), or `insufficient_user_authentication` "
        f"(RFC 9470): the sign-in behind the token or session must show {policy}; the envelope and the "
        'challenge (`error="insufficient_user_authentication"`) carry `acr_values` / `max_age` to sign in '
        "again with (`/auth/login?acr_values=...&max_age=...`)",
        _CHALLENGE,
    )


def _security(scope: str | None, dpop: bool) -> list[dict]:
    """A public operation takes no credentials or any access token; a protected one a token with its
    scope (as a bearer token, or DPoP-bound with a proof), or the session cookie."""
    tokens = ["bearer", "dpop"] if dpop else ["bearer"]
    if scope is None:
        return [{}, *({scheme: []} for scheme in tokens)]
    return [*({scheme: [scope]} for scheme in tokens), {"session": []}]


def _paths(
    scopes: dict[tuple[str, str], str | None],
    dpop: bool,
    step_up_operations: tuple[tuple[str, str], ...] = (),
    step_up: tuple[tuple[str, ...], int | None] = ((), None),
) -> dict:
    paths = {
        "/users/{username}": {
            "get": {
                "summary": "A user's public profile",
                "parameters": [{"name": "username", "in": "path", "required": True, "schema": {"type": "string"}}],
                "responses": {
                    "200": {
                        "description": "the public profile",
                        "content": {"application/json": {"schema": "PublicProfile"}},
                    },
                    "401": _COMMON["401"],
                    "404": {"description": "unknown user", "content": {"text/plain": {"schema": {"type": "string"}}}},
                    **{code: _COMMON[code] for code in ("405", "500", "503")},
                },
            }
        },
        "/me/profile": {
            "get": {
                "summary": "The signed-in user's own profile",
                "responses": {
                    "200": {
                        "description": "own profile",
                        "content": {"application/json": {"schema": "OwnProfileEnvelope"}},
                    },
                    **_COMMON,
                },
            }
        },
        "/pokes": {
            "post": {
                "summary": "Poke another user (once per target per 24 hours)",
                "requestBody": {"required": True, "content": {"application/json": {"schema": "PokeRequest"}}},
                "responses": {
                    "200": {"description": "poked", "content": _POKE_RESULT},
                    "400": {
                        "description": "unknown target, yourself, cooldown, or a bad body",
                        "content": _POKE_RESULT,
                        "headers": _RETRY,
                    },
                    "413": {"description": "body too large", "content": _POKE_RESULT},
                    "415": {"description": "Content-Type is not application/json", "content": _POKE_RESULT},
                    **_COMMON,
                },
            }
        },
    }
    for (path, method), scope in scopes.items():
        paths[path][method]["security"] = _security(scope, dpop)
    for path, method in step_up_operations:
        paths[path][method]["responses"]["401"] = _step_up_401(*step_up)
    return paths


@cache
def _document(
    issuer: str,
    cookie_name: str,
    scopes: tuple[tuple[tuple[str, str], str | None], ...],
    dpop: bool,
    step_up_operations: tuple[tuple[str, str], ...] = (),
    step_up: tuple[tuple[str, ...], int | None] = ((), None),
) -> dict:
    spec = APISpec(
        title="Profile & Poke API",
        version="1.0.0",
        openapi_version="3.1.0",
        plugins=[MarshmallowPlugin()],
        servers=[{"url": API_PREFIX}],
    )
    for name, schema in {
        "PublicProfile": PublicProfileSchema,
        "OwnProfileEnvelope": OwnProfileEnvelopeSchema,
        "PokeRequest": PokeRequestSchema,
        "PokeResult": PokeResultSchema,
        "ErrorEnvelope": ErrorEnvelopeSchema,
    }.items():
        spec.components.schema(name, schema=schema)
    spec.components.security_scheme(
        "bearer",
        {
            "type": "openIdConnect",
            "openIdConnectUrl": discovery_url(issuer),
            "description": f"access token with {' and/or '.join(f'`{scope}`' for _, scope in scopes if scope)}, "
            "issued to a login client (Authorization Code + PKCE)",
        },
    )
    if dpop:
        spec.components.security_scheme(
            "dpop",
            {
                "type": "http",
                "scheme": "DPoP",
                "description": "the same access token bound to a key (RFC 9449): `Authorization: DPoP <token>` "
                f"and one `DPoP` proof per request, signed with {' '.join(DPOP_ALGORITHMS)}",
            },
        )
    spec.components.security_scheme(
        "session",
        {
            "type": "apiKey",
            "in": "cookie",
            "name": cookie_name,
            "description": f"same-origin browser session; every call also needs the header {CSRF_HEADER}: 1",
        },
    )
    for path, operations in _paths(dict(scopes), dpop, step_up_operations, step_up).items():
        spec.path(path=path, operations=operations)
    return spec.to_dict()


def openapi_document(view_functions: dict) -> dict:
    """The document for this app's issuer and the scopes its views declare (built once per process)."""
    config = current_app.config
    scopes = tuple((operation, declared_scope(view_functions[endpoint])) for operation, endpoint in OPERATIONS.items())
    sensitive = tuple(
        operation for operation, endpoint in OPERATIONS.items() if needs_step_up(view_functions[endpoint])
    )
    step_up = (tuple(config["STEP_UP_ACR"]), config["STEP_UP_MAX_AGE"])
    return _document(
        config["OIDC_ISSUER_URL"], config["SESSION_COOKIE_NAME"], scopes, config["DPOP"], sensitive, step_up
    )
