"""Who may call: bearer token or session cookie -> principal -> scope, user and account checks,
in the contract's order (see `Guard.authorize`).
"""

import logging
from collections.abc import Mapping
from typing import NamedTuple

from flask import g, request

from ..auth.session_tokens import SessionTokens
from ..errors import Forbidden, InsufficientScope, InvalidToken, Unauthorized
from ..security import require_csrf_header
from ..store.profiles import NoProfile, Profile, Profiles, SubjectClash, UnusableUsername
from ..tokens import AccessTokens, IntrospectedTokens, Principal

log = logging.getLogger(__name__)


class Caller(NamedTuple):
    """A user allowed to call: the username, and the profile when it came with the credential."""

    username: str
    profile: Profile | None = None


def bearer_token(headers: Mapping[str, str]) -> str | None:
    """The token of the Authorization header, None without one; InvalidToken if malformed."""
    header = headers.get("Authorization")
    if header is None:
        return None
    scheme, _, token = header.strip().partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token or " " in token:
        raise InvalidToken("the Authorization header is not a bearer token")
    return token


def require_enabled(profile: Profile | None) -> Profile:
    """`profile`, unless it is gone or disabled (403 forbidden)."""
    if profile is None:
        raise Forbidden("this account has no profile")
    if profile.disabled:
        raise Forbidden("the account is disabled")
    return profile


class Guard:
    """Checks the caller of the current request against the access tokens, sessions and profiles."""

    def __init__(
        self,
        access_tokens: AccessTokens | IntrospectedTokens,
        session_tokens: SessionTokens,
        profiles: Profiles,
        *,
        session_cookie: str,
    ):
        self._access_tokens = access_tokens
        self._session_tokens = session_tokens
        self._profiles = profiles
        self._session_cookie = session_cookie

    def optional_principal(self) -> Principal | None:
        """The caller of a public route: a sent token must be valid; the session cookie is ignored."""
        token = bearer_token(request.headers)
        return self._access_tokens.verify(token) if token is not None else None

    def required_principal(self) -> tuple[Principal, Profile | None]:
        """The caller of a protected route, by bearer token, else by session cookie with the CSRF header;
        with the caller's profile when the session read it along with the token (else None)."""
        token = bearer_token(request.headers)
        if token is not None:
            return self._access_tokens.verify(token), None
        cookie = request.cookies.get(self._session_cookie)
        if not cookie:
            raise Unauthorized("authentication required")
        require_csrf_header(request.headers)
        credential = self._session_tokens.credential_for_cookie(cookie)
        return self._access_tokens.verify(credential.access_token), credential.profile

    def authorize(self, scope: str) -> Caller:
        """The caller, checked in the contract's order: 401 (no or bad credentials), then 403
        insufficient_scope (no `scope`), then 403 forbidden (an application token); the account itself
        is checked by whoever reads it (`enabled_profile`, or the poke script)."""
        principal, profile = self.required_principal()
        if not principal.has_scope(scope):
            raise InsufficientScope(scope)
        if not principal.is_user:
            raise Forbidden("a user-delegated token is required")
        try:
            username = self._profiles.find_or_link_username(principal.subject, principal.username, principal.name)
        except SubjectClash as clash:
            log.warning("refused subject link: %s", clash.log_line())
            raise Forbidden(clash.message) from None
        except UnusableUsername as error:
            raise Forbidden(str(error)) from None
        except NoProfile:
            raise Forbidden("this account has no profile") from None
        g.user = username  # for the access log
        return Caller(username, profile if profile is not None and profile.username == username else None)

    def enabled_profile(self, caller: Caller) -> Profile:
        """The caller's profile, read unless it came with the credential; 403 forbidden when disabled."""
        return require_enabled(caller.profile or self._profiles.get(caller.username))
