"""Who may call: bearer token or session cookie -> principal -> scope, user and account checks.

The order of checks is the contract's: 401 -> 403 insufficient_scope -> 403 forbidden (app token)
-> 403 forbidden (disabled account).
"""

import logging

from flask import current_app, g, request

from ..auth.session_tokens import access_token_for_cookie
from ..auth.sessions import CSRF_HEADER
from ..errors import Forbidden, InsufficientScope, InvalidToken, Unauthorized
from ..extensions import services
from ..store.profiles import NoProfile, Profile, SubjectClash
from ..tokens import Principal

log = logging.getLogger(__name__)


def bearer_token() -> str | None:
    """The token of the request's Authorization header, None without one; InvalidToken if malformed."""
    header = request.headers.get("Authorization")
    if header is None:
        return None
    scheme, _, token = header.strip().partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token or " " in token:
        raise InvalidToken("the Authorization header is not a bearer token")
    return token


def optional_principal() -> Principal | None:
    """The caller of a public route: a sent token must be valid; the session cookie is ignored."""
    token = bearer_token()
    return services().access_tokens.verify(token) if token is not None else None


def required_principal() -> Principal:
    """The caller of a protected route, by bearer token, else by session cookie with the CSRF header."""
    token = bearer_token()
    if token is None:
        cookie = request.cookies.get(current_app.config["SESSION_COOKIE_NAME"])
        if not cookie:
            raise Unauthorized("authentication required")
        if request.headers.get(CSRF_HEADER) != "1":
            raise Forbidden(f"cookie-authenticated calls need the header {CSRF_HEADER}: 1")
        token = access_token_for_cookie(cookie)
    return services().access_tokens.verify(token)


def current_username(scope: str) -> str:
    """The username of the user behind a token that carries `scope`; the account itself is not read."""
    principal = required_principal()
    if not principal.has_scope(scope):
        raise InsufficientScope(scope)
    if not principal.is_user:
        raise Forbidden("a user-delegated token is required")
    try:
        username = services().store.profiles.username_for(
            principal.subject, principal.preferred_username, principal.name
        )
    except SubjectClash as clash:
        log.warning("refused subject link: %s", clash)
        raise Forbidden("this account's username belongs to another account") from None
    except NoProfile:
        raise Forbidden("this account has no profile") from None
    g.user = username
    return username


def require_enabled(profile: Profile | None) -> Profile:
    """`profile`, unless it is gone or disabled (403 forbidden)."""
    if profile is None:
        raise Forbidden("this account has no profile")
    if profile.disabled:
        raise Forbidden("the account is disabled")
    return profile


def current_user(scope: str) -> Profile:
    """The enabled profile of the user behind a token that carries `scope`."""
    username = current_username(scope)
    prefetched_user, raw = g.get("session_profile", (None, None))
    if prefetched_user == username:  # read together with the session's tokens: no second round trip
        return require_enabled(Profile.from_hash(raw) if raw else None)
    return require_enabled(services().store.profiles.get(username))
