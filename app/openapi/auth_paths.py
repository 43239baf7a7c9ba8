"""The /auth half of the OpenAPI document: the browser sign-in, the session, sign-out and your sessions.

Every answer under /auth is `Cache-Control: no-store`; the ones a person sees in the browser (the sign-in
and its callback) are HTML pages, the ones a script reads are JSON.
"""

from ..prefixes import AUTH_PREFIX
from ..security import CSRF_HEADER
from .parts import CHALLENGE, LOCATION, RETRY, error, page, private
from .signin_query import login_description, login_parameters

OPERATIONS = {
    (f"{AUTH_PREFIX}/login", "get"): "auth.login",
    (f"{AUTH_PREFIX}/callback", "get"): "auth.callback",
    (f"{AUTH_PREFIX}/exchange", "post"): "auth.exchange",
    (f"{AUTH_PREFIX}/session", "get"): "auth.current_session",
    (f"{AUTH_PREFIX}/logout", "post"): "auth.logout",
    (f"{AUTH_PREFIX}/backchannel-logout", "post"): "auth.backchannel_logout",
    (f"{AUTH_PREFIX}/sessions", "get"): "auth.your_sessions",
    (f"{AUTH_PREFIX}/sessions", "delete"): "auth.end_other_sessions",
    (f"{AUTH_PREFIX}/sessions/{{session_id}}", "delete"): "auth.end_one_session",
}

_SET_COOKIE = {"Set-Cookie": {"schema": {"type": "string"}, "description": "the cookie this answer sets"}}
_SESSION_INFO = {"application/json": {"schema": "SessionInfo"}}
_NEEDS_SESSION = [{"session": [], "csrf": []}]
_PAGES = {
    "500": page("something went wrong"),
    "503": page("storage or identity provider unreachable, or too many sign-ins in progress", RETRY),
}
_JSON = {"500": error("`internal_error`"), "503": error("`unavailable`: storage or provider unreachable", RETRY)}
_SIGNED_IN = {
    "401": error("`unauthorized`: no session cookie (`sign in first`) or the session has ended", CHALLENGE),
    "403": error(f"`forbidden`: the call lacks `{CSRF_HEADER}: 1`", CHALLENGE),
    **_JSON,
}


def _operation(summary: str, responses: dict, **more) -> dict:
    return {"summary": summary, **more, "responses": private(responses)}


def _query(*names: str) -> list[dict]:
    return [{"name": name, "in": "query", "schema": {"type": "string"}} for name in names]


def auth_paths(*, login_cookie: str, acr_values: tuple[str, ...]) -> dict:
    """The /auth paths, with the sign-in query as LOGIN_ACR_VALUES allows it."""
    return {
        f"{AUTH_PREFIX}/login": {
            "get": _operation(
                "Sign in: redirect to the identity provider",
                {
                    "302": {"description": "to the provider; sets the login cookie", "headers": LOCATION | _SET_COOKIE},
                    "400": page("`invalid_request: the sign-in parameter <name> ...`"),
                    "429": page("too many sign-ins from this address, or from its network", RETRY),
                    "502": page("the provider refused the pushed authorization request"),
                    **_PAGES,
                },
                description=login_description(acr_values),
                parameters=login_parameters(acr_values),
            )
        },
        f"{AUTH_PREFIX}/callback": {
            "get": _operation(
                "The provider's redirect back (the registered redirect URI)",
                {
                    "302": {
                        "description": "to `return_to`, signed in (a new session cookie); or, when a `prompt=none` "
                        "sign-in needs the user, to `return_to?signin_error=<code>`",
                        "headers": LOCATION | _SET_COOKIE,
                    },
                    "400": page("unknown, used or expired `state`, another browser's sign-in, or a refusal"),
                    "403": page("a scope not granted, or an account that cannot sign in here"),
                    "429": page("too many callbacks from this address, or from its network", RETRY),
                    "502": page("the provider's answer or ID token was refused"),
                    **_PAGES,
                },
                parameters=[
                    *_query("state", "code", "iss", "error", "error_description"),
                    {"name": login_cookie, "in": "cookie", "schema": {"type": "string"}, "description": "login cookie"},
                ],
            )
        },
        f"{AUTH_PREFIX}/exchange": {
            "post": _operation(
                "Sign in with a code a same-origin page obtained (its own OIDC library); tokens stay here",
                {
                    "200": {"description": "signed in (a new session cookie)", "content": _SESSION_INFO},
                    "400": error("`invalid_request` (a bad body, a `redirect_uri` not accepted) or `login_failed`"),
                    "403": error(f"`forbidden`: no `{CSRF_HEADER}: 1`; or the account cannot sign in here"),
                    "413": error("the body is too large"),
                    "429": error("`too_many_requests` from this address, or from its network", RETRY),
                    "502": error("the provider's answer or ID token was refused"),
                    **_JSON,
                },
                security=[{"csrf": []}],
                requestBody={"required": True, "content": {"application/json": {"schema": "ExchangeRequest"}}},
            )
        },
        f"{AUTH_PREFIX}/session": {
            "get": _operation(
                "Who is signed in, until when; reading never extends the session",
                {"200": {"description": "the session, never a token", "content": _SESSION_INFO}, **_JSON},
                security=[{}, {"session": []}],
            )
        },
        f"{AUTH_PREFIX}/logout": {
            "post": _operation(
                "Sign out: end the session, revoke its refresh token, then go to the provider's logout",
                {
                    "200": {
                        "description": f"with `{CSRF_HEADER}: 1`",
                        "content": {"application/json": {"schema": "LogoutUrl"}},
                    },
                    "303": {"description": "a same-origin form post: to the provider's logout", "headers": LOCATION},
                    "403": error(f"`forbidden`: neither `{CSRF_HEADER}: 1` nor a same-origin form post", CHALLENGE),
                    **_JSON,
                },
                description="A script sends the CSRF header and gets the URL; a same-origin HTML form post "
                "(`Sec-Fetch-Site: same-origin`, or an `Origin` of this service) is redirected there.",
                security=[{"session": [], "csrf": []}, {"csrf": []}],
            )
        },
        f"{AUTH_PREFIX}/backchannel-logout": {
            "post": _operation(
                "The provider ends sessions (OpenID Connect Back-Channel Logout); no cookie, no CSRF header",
                {
                    "200": {"description": "the sessions the token names are ended (also when there are none)"},
                    "400": {
                        "description": "a missing, invalid or reused logout token",
                        "content": {"application/json": {"schema": "BackchannelError"}},
                    },
                    **_JSON,
                },
                security=[{}],
                requestBody={
                    "required": True,
                    "content": {"application/x-www-form-urlencoded": {"schema": "BackchannelLogoutRequest"}},
                },
            )
        },
        f"{AUTH_PREFIX}/sessions": {
            "get": _operation(
                "Your signed-in browsers, newest first",
                {"200": {"description": "your sessions", "content": {"application/json": {"schema": "SessionList"}}}}
                | _SIGNED_IN,
                security=_NEEDS_SESSION,
            ),
            "delete": _operation(
                "End all your other sessions, revoking their refresh tokens",
                {"204": {"description": "ended"}} | _SIGNED_IN,
                security=_NEEDS_SESSION,
            ),
        },
        f"{AUTH_PREFIX}/sessions/{{session_id}}": {
            "delete": _operation(
                "End one of your sessions, revoking its refresh token",
                {"204": {"description": "ended"}, "404": error("`not_found`: no such session of yours")} | _SIGNED_IN,
                security=_NEEDS_SESSION,
                parameters=[{"name": "session_id", "in": "path", "required": True, "schema": {"type": "string"}}],
            )
        },
    }
