"""The OpenAPI 3.1 document of /api/v1, generated with apispec from the marshmallow schemas."""

from functools import cache

from apispec import APISpec
from apispec.ext.marshmallow import MarshmallowPlugin
from flask import current_app

from ..prefixes import API_PREFIX
from ..security import CSRF_HEADER
from ..tokens.provider import discovery_url
from .schemas import (
    ErrorEnvelopeSchema,
    OwnProfileEnvelopeSchema,
    PokeRequestSchema,
    PokeResultSchema,
    PublicProfileSchema,
)
from .scopes import poke_scope, profile_scope

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


def _paths(profile_scope: str, poke_scope: str) -> dict:
    user = [{"bearer": [profile_scope]}, {"session": []}]
    return {
        "/users/{username}": {
            "get": {
                "summary": "A user's public profile",
                "parameters": [{"name": "username", "in": "path", "required": True, "schema": {"type": "string"}}],
                "security": [{}, {"bearer": []}],
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
                "security": user,
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
                "security": [{"bearer": [poke_scope]}, {"session": []}],
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


@cache
def _document(issuer: str, cookie_name: str, profile_scope: str, poke_scope: str) -> dict:
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
            "description": f"access token with `{profile_scope}` and/or `{poke_scope}`, "
            "issued to a login client (Authorization Code + PKCE)",
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
    for path, operations in _paths(profile_scope, poke_scope).items():
        spec.path(path=path, operations=operations)
    return spec.to_dict()


def openapi_document() -> dict:
    """The document for this app's issuer and scopes (built once per process)."""
    config = current_app.config
    return _document(config["OIDC_ISSUER_URL"], config["SESSION_COOKIE_NAME"], profile_scope(), poke_scope())
