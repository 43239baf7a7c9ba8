"""What a sign-in's token response becomes: its ID token and granted scopes checked, the subject's
profile found or linked, and a fresh session in place of the browser's current one, whose refresh token
is revoked unless the two may share a provider session."""

import logging

from flask import current_app, request, session

from ..audit import audit
from ..errors import LoginFailed
from ..provider.login_client import LoginClient
from ..sessions.credentials import SessionTokens
from ..sessions.records import audit_fields, proven_authentication
from ..sessions.user_agents import user_agent_label
from ..store.profile_record import Profile
from ..store.profiles import NoProfile, Profiles, SubjectClash, UnusableUsername
from ..tokens import signed_in_identity

OIDC_SCOPES = {"openid", "profile", "email", "address", "phone", "offline_access"}

log = logging.getLogger(__name__)


class SessionOpener:
    """Opens the browser's session from a token response, and ends the one its cookie names."""

    def __init__(
        self,
        login_client: LoginClient,
        profiles: Profiles,
        session_tokens: SessionTokens,
        *,
        scopes: str,
        session_cookie: str,
    ):
        self._client = login_client
        self._profiles = profiles
        self._session_tokens = session_tokens
        self._scopes = scopes
        # Every scope the app asked for beyond OpenID Connect's own must have been granted.
        self._required_scopes = set(scopes.split()) - OIDC_SCOPES
        self._session_cookie = session_cookie

    def open(self, response: dict, *, nonce: str | None, max_age: int | None = None) -> None:
        """Check a token response, link the profile and start a fresh session holding the tokens."""
        claims = self._client.verify_id_token(response.get("id_token"), nonce=nonce, max_age=max_age)
        sub = claims["sub"]
        if response.get("scope") is None:  # RFC 6749 5.1: left out when it is what was asked for
            response = {**response, "scope": self._scopes}
        missing = sorted(self._required_scopes - set(str(response["scope"]).split()))
        if missing:
            raise LoginFailed(
                f"the identity provider did not grant {' '.join(missing)}, which this app needs",
                403,
                reason="scope_not_granted",
                sub=sub,
            )
        profile = self._linked_profile(claims)
        provider_sid = claims.get("sid") if isinstance(claims.get("sid"), str) else None
        self._end_replaced(sub, provider_sid)
        current_app.session_interface.regenerate(session)
        session.clear()
        record = self._session_tokens.start(
            session.sid,
            username=profile.username,
            sub=sub,
            response=response,
            provider_sid=provider_sid,
            user_agent=user_agent_label(request.headers.get("User-Agent")),
            **proven_authentication(claims),
        )
        session.update(user=profile.username, signed_in_at=int(record["started"]), ends=record["ends"])
        audit("signin.succeeded", **audit_fields(record))

    def end_current(self) -> dict | None:
        """End the session the request's cookie names; the record it held (its tokens too), or None."""
        cookie = request.cookies.get(self._session_cookie)
        return self._session_tokens.end(cookie) if cookie else None

    def _end_replaced(self, sub: str, provider_sid: str | None) -> None:
        """End the session this sign-in replaces in its browser, if any, and revoke its refresh token
        unless it may share the new session's provider session (a failure is only logged, as at sign-out)."""
        replaced = self.end_current()
        if not replaced:
            return
        audit("session.ended", reason="replaced", ended=[replaced["id"]], **audit_fields(replaced))
        if replaced.get("refresh_token") and not may_share_provider_session(replaced, sub, provider_sid):
            self._client.revoke(replaced["refresh_token"])

    def _linked_profile(self, claims: dict) -> Profile:
        """The enabled profile linked to the ID token's subject, linked or made on first sight."""
        sub = claims["sub"]
        identity = signed_in_identity(claims, self._client.profile)
        if not identity.subject:
            raise LoginFailed("the ID token names no subject this app can link", 502, reason="no_subject", sub=sub)
        try:
            profile = self._profiles.find_or_link_profile(identity.subject, identity.username, identity.name)
        except SubjectClash as clash:
            log.warning("refused subject link at sign-in: %s", clash.log_line())
            raise LoginFailed(clash.message, 403, reason="subject_clash", sub=sub) from None
        except UnusableUsername as error:
            raise LoginFailed(str(error), 403, reason="unusable_username", sub=sub) from None
        except NoProfile:
            raise LoginFailed(
                "this account has no username to make a profile from", 403, reason="no_username", sub=sub
            ) from None
        if profile.disabled:
            raise LoginFailed(
                "this account is disabled", 403, reason="account_disabled", sub=sub, user=profile.username
            )
        return profile


def may_share_provider_session(replaced: dict, sub: str, provider_sid: str | None) -> bool:
    """Whether the session `replaced` may hold tokens of the provider session a new sign-in of `sub` came
    through (`provider_sid`, its ID token's `sid`): the same user, with the same or an unknown `sid`.
    Revoking its refresh token would then end the new session's too (oidc-provider revokes the grant
    both belong to, Keycloak the client's session)."""
    if replaced.get("sub") != sub:
        return False
    theirs = replaced.get("provider_sid")
    return theirs is None or provider_sid is None or theirs == provider_sid
