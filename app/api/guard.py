"""Who may call: bearer token or session cookie -> principal -> scope, user and account checks,
in the contract's order (see `Guard.authorize`).
"""

import logging
from collections.abc import Mapping
from dataclasses import replace
from typing import NamedTuple

from flask import g, request

from ..audit import audit
from ..errors import ApiError, Forbidden, InsufficientScope, InsufficientUserAuthentication, InvalidToken, Unauthorized
from ..metrics import count_dpop_refusal
from ..security import require_csrf_header
from ..sessions.credentials import SessionTokens
from ..store.profiles import NoProfile, Profile, Profiles, SubjectClash, UnusableUsername
from ..tokens import AccessTokens, IntrospectedTokens, Principal
from ..tokens.dpop import DpopProofs
from .step_up import StepUpPolicy

BEARER, DPOP = "bearer", "dpop"
STEP_UP_OFF = StepUpPolicy()

log = logging.getLogger(__name__)


class Caller(NamedTuple):
    """A user allowed to call: the username, the profile when it came with the credential, and how
    the user signed in (`acr`, `auth_time`: the token's claims, or a cookie session's)."""

    username: str
    profile: Profile | None = None
    acr: str | None = None
    auth_time: int | None = None


class Credential(NamedTuple):
    """An access token as the Authorization header sent it: scheme `bearer` or `dpop`, and the token."""

    scheme: str
    token: str


def credential(headers: Mapping[str, str], *, dpop: bool) -> Credential | None:
    """The access token of the Authorization header (the DPoP scheme only when `dpop`), None without
    one; InvalidToken if malformed."""
    header = headers.get("Authorization")
    if header is None:
        return None
    scheme, _, token = header.strip().partition(" ")
    scheme, token = scheme.lower(), token.strip()
    if scheme not in ((BEARER, DPOP) if dpop else (BEARER,)) or not token or " " in token:
        raise InvalidToken("the Authorization header is not a bearer token")
    return Credential(scheme, token)


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
        proofs: DpopProofs | None = None,
        step_up: StepUpPolicy = STEP_UP_OFF,
    ):
        self._access_tokens = access_tokens
        self._session_tokens = session_tokens
        self._profiles = profiles
        self._session_cookie = session_cookie
        self._proofs = proofs  # None: DPOP=off, the DPoP scheme is refused
        self._step_up = step_up

    def optional_principal(self) -> Principal | None:
        """The caller of a public route: a sent token must be valid; the session cookie is ignored."""
        sent = credential(request.headers, dpop=self._proofs is not None)
        return self._principal(sent) if sent is not None else None

    def required_principal(self) -> tuple[Principal, Profile | None]:
        """The caller of a protected route, by access token, else by session cookie with the CSRF header
        (a session token refused once is retried with the session's newest, if newer); with the
        caller's profile when the session read it along with the token (else None)."""
        sent = credential(request.headers, dpop=self._proofs is not None)
        if sent is not None:
            return self._principal(sent), None
        cookie = request.cookies.get(self._session_cookie)
        if not cookie:
            raise Unauthorized("authentication required")
        require_csrf_header(request.headers)
        session = self._session_tokens.credential_for_cookie(cookie)
        try:
            principal = self._bearer_principal(session.access_token)
        except InvalidToken:
            # Some providers revoke the old access token when a refresh rotates the refresh token: a
            # request that read the session before another one's refresh finished holds a dead token.
            newer = self._session_tokens.newer_access_token(cookie, session.access_token)
            if newer is None:
                raise
            principal = self._bearer_principal(newer)
        # A cookie call is judged by how its session signed in, whatever its access token says.
        return replace(principal, acr=session.acr, auth_time=session.auth_time), session.profile

    def _principal(self, sent: Credential) -> Principal:
        """The one place an access token is validated: the token, then its sender constraint."""
        address = request.remote_addr or ""  # who pays for a provider call about an unknown token
        if sent.scheme != DPOP:
            return self._bearer_principal(sent.token, address)
        try:
            return self._proven_principal(sent.token, address)
        except ApiError as failure:
            if failure.status == 401:
                g.dpop_failure = (failure.code, failure.message)  # for the DPoP challenge
            raise

    def _bearer_principal(self, token: str, address: str | None = None) -> Principal:
        principal = self._access_tokens.verify(token, address=address)
        if principal.bound_key is not None:  # RFC 9449 7.2: never downgraded to a bearer token
            count_dpop_refusal("downgrade")
            raise InvalidToken("a DPoP-bound access token must be sent with the DPoP scheme and a proof")
        return principal

    def _proven_principal(self, token: str, address: str | None) -> Principal:
        principal = self._access_tokens.verify(token, address=address)
        if principal.bound_key is None:
            count_dpop_refusal("unbound")
            raise InvalidToken("an access token sent with the DPoP scheme must be bound to a key (cnf.jkt)")
        self._proofs.check(
            request.headers.getlist("DPoP"),
            method=request.method,
            path=request.root_path + request.path,  # the host is the configured one, never the request's
            access_token=token,
            jkt=principal.bound_key,
        )
        return principal

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
        profile = profile if profile is not None and profile.username == username else None
        return Caller(username, profile, principal.acr, principal.auth_time)

    def enabled_profile(self, caller: Caller) -> Profile:
        """The caller's profile, read unless it came with the credential; 403 forbidden when disabled."""
        return require_enabled(caller.profile or self._profiles.get(caller.username))

    def stepped_up(self, caller: Caller) -> None:
        """The last checks of a sensitive action: the caller's account enabled (403 forbidden), then
        its sign-in strong and recent enough (401 insufficient_user_authentication, RFC 9470);
        nothing at all while STEP_UP_ACR and STEP_UP_MAX_AGE are unset."""
        if not self._step_up.active:
            return
        try:
            self._step_up.check(acr=caller.acr, auth_time=caller.auth_time)
        except InsufficientUserAuthentication as refused:
            # Only a refusal reads the account here: one that passes is checked by whoever reads it
            # next (the poke script), so a disabled account still hears 403 first, at no extra cost.
            self.enabled_profile(caller)
            audit(
                "stepup.refused",
                reason=refused.reason,
                user=caller.username,
                acr=caller.acr,
                route=request.url_rule.rule if request.url_rule else None,
            )
            if request.headers.get("Authorization", "").lstrip().lower().startswith(f"{DPOP} "):
                g.dpop_failure = (refused.code, refused.message, refused.parameters())  # the DPoP challenge too
            raise
