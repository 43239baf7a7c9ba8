"""Who may call: bearer token or session cookie -> principal -> scope, user and account checks,
in the contract's order (see `authorize`).
"""

import logging

from flask import current_app, g, request

from ..errors import Forbidden, InsufficientScope, InvalidToken, Unauthorized
from ..extensions import services
from ..security import CSRF_HEADER, sent_csrf_header
from ..store.profiles import NoProfile, Profile, SubjectClash, UnusableUsername
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


def required_principal() -> tuple[Principal, Profile | None]:
    """The caller of a protected route, by bearer token, else by session cookie with the CSRF header;
    with the caller's profile when the session read it along with the token (else None)."""
    token = bearer_token()
    if token is not None:
        return services().access_tokens.verify(token), None
    cookie = request.cookies.get(current_app.config["SESSION_COOKIE_NAME"])
    if not cookie:
        raise Unauthorized("authentication required")
    if not sent_csrf_header(request.headers):
        raise Forbidden(f"cookie-authenticated calls need the header {CSRF_HEADER}: 1")
    credential = services().session_tokens.credential_for_cookie(cookie)
    return services().access_tokens.verify(credential.access_token), credential.profile


def authorize(scope: str) -> tuple[str, Profile | None]:
    """The username of the caller, checked in the contract's order: 401 (no or bad credentials), then
    403 insufficient_scope (no `scope`), then 403 forbidden (an application token), then, by whoever
    reads the account, 403 forbidden (a disabled account: see `require_enabled`). Also returns the
    caller's profile when it came with the credential (else None)."""
    principal, profile = required_principal()
    if not principal.has_scope(scope):
        raise InsufficientScope(scope)
    if not principal.is_user:
        raise Forbidden("a user-delegated token is required")
    try:
        username = services().store.profiles.find_or_link_username(
            principal.subject, principal.username, principal.name
        )
    except SubjectClash as clash:
        log.warning("refused subject link: %s", clash.log_line())
        raise Forbidden(clash.message) from None
    except UnusableUsername as error:
        raise Forbidden(str(error)) from None
    except NoProfile:
        raise Forbidden("this account has no profile") from None
    g.user = username
    return username, (profile if profile is not None and profile.username == username else None)


def current_username(scope: str) -> str:
    """The username of the user behind a token that carries `scope`; the account itself is not read."""
    username, _ = authorize(scope)
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
    username, profile = authorize(scope)
    if profile is None:  # not read together with the session's tokens: one more round trip
        profile = services().store.profiles.get(username)
    return require_enabled(profile)
