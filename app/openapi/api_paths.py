"""The /api/v1 half of the OpenAPI document: each operation's parameters, bodies, answers and credentials."""

from ..prefixes import API_PREFIX
from ..security import CSRF_HEADER
from .parts import CHALLENGE, RETRY, error, private

# The view behind each operation: its declared scope (app.api.scopes) is the operation's security,
# and its step-up declaration (app.api.step_up) gives its 401 the RFC 9470 challenge.
OPERATIONS = {
    (f"{API_PREFIX}/users/{{username}}", "get"): "api.public_profile",
    (f"{API_PREFIX}/me/profile", "get"): "api.own_profile",
    (f"{API_PREFIX}/pokes", "post"): "api.create_poke",
    (f"{API_PREFIX}/openapi.json", "get"): "api.openapi",
}

_POKE_RESULT = {"application/json": {"schema": "PokeResult"}}
_COMMON = {
    "401": error("no valid credentials (`unauthorized`, or `invalid_token` for a bad token)", CHALLENGE),
    "403": error(
        "`insufficient_scope` (message `scope <scope> required`), or `forbidden`: an "
        f"application token, a disabled account, or a cookie call without `{CSRF_HEADER}: 1`",
        CHALLENGE,
    ),
    "405": error("`method_not_allowed`"),
    "500": error("`internal_error`"),
    "503": error("`unavailable`: storage or identity provider unreachable", RETRY),
}


def _step_up_401(acr_values: tuple[str, ...], max_age: int | None) -> dict:
    """The 401 of a sensitive action: the usual ones, and RFC 9470's challenge under this app's policy."""
    wanted = [f"`acr` one of `{' '.join(acr_values)}`"] if acr_values else []
    wanted += [f"a sign-in at most {max_age} s old (`auth_time`)"] if max_age is not None else []
    policy = " and ".join(wanted) or "nothing here (STEP_UP_ACR and STEP_UP_MAX_AGE are unset)"
    return error(
        "no valid credentials (`unauthorized`, `invalid_token`), or `insufficient_user_authentication` "
        f"(RFC 9470): the sign-in behind the token or session must show {policy}; the envelope and the "
        'challenge (`error="insufficient_user_authentication"`) carry `acr_values` / `max_age` to sign in '
        "again with (`/auth/login?acr_values=...&max_age=...`)",
        CHALLENGE,
    )


def _security(scope: str | None, dpop: bool) -> list[dict]:
    """A public operation takes no credentials or any access token; a protected one a token with its
    scope (as a bearer token, or DPoP-bound with a proof), or the session cookie with the CSRF header."""
    tokens = ["bearer", "dpop"] if dpop else ["bearer"]
    if scope is None:
        return [{}, *({scheme: []} for scheme in tokens)]
    return [*({scheme: [scope]} for scheme in tokens), {"session": [], "csrf": []}]


def api_paths(
    scopes: dict[tuple[str, str], str | None],
    dpop: bool,
    step_up_operations: tuple[tuple[str, str], ...],
    step_up: tuple[tuple[str, ...], int | None],
) -> dict:
    """The /api/v1 paths under this app's scopes, DPoP setting and step-up policy."""
    paths = {
        f"{API_PREFIX}/users/{{username}}": {
            "get": {
                "summary": "A user's public profile",
                "parameters": [{"name": "username", "in": "path", "required": True, "schema": {"type": "string"}}],
                "responses": {
                    "200": {
                        "description": "the public profile (`Cache-Control: no-cache`)",
                        "content": {"application/json": {"schema": "PublicProfile"}},
                    },
                    "401": _COMMON["401"],
                    "404": {"description": "unknown user", "content": {"text/plain": {"schema": {"type": "string"}}}},
                    **{code: _COMMON[code] for code in ("405", "500", "503")},
                },
            }
        },
        f"{API_PREFIX}/me/profile": {
            "get": {
                "summary": "The signed-in user's own profile",
                "responses": private(
                    {
                        "200": {
                            "description": "own profile",
                            "content": {"application/json": {"schema": "OwnProfileEnvelope"}},
                        },
                        **_COMMON,
                    }
                ),
            }
        },
        f"{API_PREFIX}/pokes": {
            "post": {
                "summary": "Poke another user (once per target per 24 hours)",
                "requestBody": {"required": True, "content": {"application/json": {"schema": "PokeRequest"}}},
                "responses": private(
                    {
                        "200": {"description": "poked", "content": _POKE_RESULT},
                        "400": {
                            "description": "unknown target, yourself, cooldown, or a bad body",
                            "content": _POKE_RESULT,
                            "headers": RETRY,
                        },
                        "413": {"description": "body too large", "content": _POKE_RESULT},
                        "415": {"description": "Content-Type is not application/json", "content": _POKE_RESULT},
                        **_COMMON,
                    }
                ),
            }
        },
        f"{API_PREFIX}/openapi.json": {
            "get": {
                "summary": "This document: the OpenAPI 3.1 description of /api/v1 and /auth",
                "security": [{}],
                "responses": {
                    "200": {
                        "description": "the document",
                        "content": {"application/json": {"schema": {"type": "object"}}},
                    },
                    **{code: _COMMON[code] for code in ("405", "500")},
                },
            }
        },
    }
    for (path, method), scope in scopes.items():
        paths[path][method].setdefault("security", _security(scope, dpop))
    for path, method in step_up_operations:
        responses = paths[path][method]["responses"]
        responses["401"] = {**_step_up_401(*step_up), "headers": responses["401"]["headers"]}
    return paths
