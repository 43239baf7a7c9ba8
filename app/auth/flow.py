"""The browser sign-in as a backend-for-frontend: start, callback, SPA code exchange, session, sign-out.

No token leaves the server: the browser only ever holds the session cookie.
"""

import logging
import re
import secrets
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from flask import current_app, request, session

from ..audit import SILENT_DECLINED, audit
from ..errors import LoginFailed
from ..provider.authorization import AuthorizationRequests
from ..provider.login_client import LoginClient
from ..sessions.check import session_info
from ..sessions.credentials import SessionTokens, proven_authentication
from ..sessions.records import audit_fields
from ..sessions.user_agents import user_agent_label
from ..store.logins import UsedStates
from ..store.profiles import NoProfile, Profiles, SubjectClash, UnusableUsername
from ..tokens import signed_in_identity
from .pending import OTHER_BROWSER, NotPending, Pending, PendingSignIns, Started, nonce_of

OIDC_SCOPES = {"openid", "profile", "email", "address", "phone", "offline_access"}
SAFE_PATH = re.compile(r"/(?![/\\])[^\\\x00-\x20\x7f]*")
MAX_RETURN_TO = 512
# The answers to a prompt=none sign-in that mean "the user would have to interact": the browser goes
# back to return_to with ?signin_error=<code> instead of an error page (OpenID Connect Core 3.1.2.6).
SILENT_ERRORS = {"login_required", "consent_required", "interaction_required", "account_selection_required"}
MAX_DESCRIPTION = 300
MAX_ERROR_CODE = 64
ERROR_CODE = re.compile(r"[^A-Za-z0-9_.-]")  # RFC 6749 error codes are plain ASCII words
UNKNOWN_SIGN_IN = "this sign-in is unknown, already used or expired; please sign in again"
OTHER_BROWSERS_SIGN_IN = (
    "this sign-in was started in another browser, or newer sign-ins in this one replaced it; please sign in again"
)

log = logging.getLogger(__name__)


def safe_return_to(value) -> str:
    """`value` when it is a path on this origin, else `/`: no open redirects."""
    if not isinstance(value, str) or len(value) > MAX_RETURN_TO or not SAFE_PATH.fullmatch(value):
        return "/"
    parts = urlsplit(value)
    return "/" if parts.scheme or parts.netloc else value


def with_signin_error(return_to: str, code: str) -> str:
    """`return_to` with `signin_error=<code>` in its query (replacing any there), its fragment kept."""
    parts = urlsplit(return_to)
    query = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k != "signin_error"]
    return urlunsplit(parts._replace(query=urlencode([*query, ("signin_error", code)])))


class SignIn:
    """One app's browser sign-in: its login client, pending sign-ins, profiles, session tokens and settings."""

    def __init__(
        self,
        login_client: LoginClient,
        authorization: AuthorizationRequests,
        pending: PendingSignIns,
        used_states: UsedStates,
        profiles: Profiles,
        session_tokens: SessionTokens,
        *,
        redirect_uri: str,
        scopes: str,
        exchange_redirect_uris: list[str],
        post_logout_redirect_uri: str,
        session_cookie: str,
        idle_timeout: int,
    ):
        self._client = login_client
        self._authorization = authorization
        self._pending = pending
        self._used_states = used_states
        self._profiles = profiles
        self._session_tokens = session_tokens
        self._redirect_uri = redirect_uri
        self._scopes = scopes
        # Every scope the app asked for beyond OpenID Connect's own must have been granted.
        self._required_scopes = set(scopes.split()) - OIDC_SCOPES
        self._exchange_redirect_uris = exchange_redirect_uris
        self._post_logout_redirect_uri = post_logout_redirect_uri
        self._session_cookie = session_cookie
        self._idle_timeout = idle_timeout

    def begin(self, *, return_to: str, cookies, params: dict | None = None) -> Started:
        """A new pending sign-in, kept in a cookie for the browser whose `cookies` these are, and the
        provider URL that starts it with the per-request `params` (prompt, login_hint, ...). Nothing is
        kept anywhere when the provider URL cannot be made."""
        verifier = secrets.token_urlsafe(32)  # 43 characters, RFC 7636's recommended 32 octets
        sent = self._authorization.requested(params)
        # Only what the callback cannot rebuild: the nonce follows from the verifier, the redirect URI
        # from the settings.
        state, name, value = self._pending.start(
            Pending(verifier, return_to, sent.get("prompt", ""), sent.get("max_age", ""))
        )
        url = self._authorization.url(
            redirect_uri=self._redirect_uri, state=state, nonce=nonce_of(verifier), verifier=verifier, params=params
        )
        return Started(url, (name, value), self._pending.crowded(cookies, len(name) + 1 + len(value)))

    def login_cookie(self, state: str) -> str:
        """The name of the cookie that keeps the sign-in of `state` in its browser."""
        return self._pending.cookie_name(state)

    def finish(self, args, cookies) -> str:
        """Complete a sign-in from the provider's redirect; return where the browser goes next."""
        state = args.get("state")
        try:
            pending = self._pending.opened(state, cookies)
        except NotPending as refused:
            if "error" in args:
                # Anyone can send a browser here with an error: its text is shown only for our own sign-in.
                raise LoginFailed(
                    "the sign-in did not complete; please sign in again", reason="unsolicited_error"
                ) from None
            if refused.reason == OTHER_BROWSER:
                raise LoginFailed(OTHER_BROWSERS_SIGN_IN, reason="other_browser") from None
            raise LoginFailed(UNKNOWN_SIGN_IN, reason="unknown_state") from None
        self._check_response_issuer(args.get("iss"))
        if "error" in args:
            error = ERROR_CODE.sub("", args["error"])[:MAX_ERROR_CODE] or "unknown_error"
            if pending.prompt == "none" and error in SILENT_ERRORS:
                audit("signin.failed", reason=SILENT_DECLINED)
                return with_signin_error(pending.return_to, error)
            description = (args.get("error_description") or "")[:MAX_DESCRIPTION]
            raise LoginFailed(
                f"the identity provider refused the sign-in: {error}: {description}".rstrip(": "),
                reason="provider_refused",
            )
        if not args.get("code"):
            raise LoginFailed("the sign-in response has no code", reason="no_code")
        # Claimed before the exchange, so a state leads to one exchange at most; given back when the
        # exchange fails, so a flood's junk codes leave nothing in Redis (the callback is rate-limited).
        if not self._used_states.claim(state, pending.expires_at):
            raise LoginFailed(UNKNOWN_SIGN_IN, reason="unknown_state")
        try:
            response = self._client.exchange(
                code=args["code"], verifier=pending.verifier, redirect_uri=self._redirect_uri
            )
        except BaseException:
            self._used_states.release(state)
            raise
        max_age = int(pending.max_age) if pending.max_age.isascii() and pending.max_age.isdigit() else None
        self._establish_session(response, nonce=nonce_of(pending.verifier), max_age=max_age)
        return pending.return_to

    def _check_response_issuer(self, iss) -> None:
        """RFC 9207: `iss` must name our issuer when sent, and must be sent when discovery promises it."""
        provider = self._client.provider
        promised = provider.metadata().get("authorization_response_iss_parameter_supported") is True
        if iss is None and promised:
            raise LoginFailed("the sign-in response has no iss, which the identity provider promises", reason="no_iss")
        if iss is not None and iss != provider.issuer:
            raise LoginFailed("the sign-in response came from another issuer", reason="wrong_issuer")

    def exchange(self, *, code: str, code_verifier: str, redirect_uri: str, nonce: str | None) -> None:
        """Sign in with a code obtained by a same-origin page that ran the authorization request itself."""
        if redirect_uri not in self._exchange_redirect_uris:
            raise LoginFailed("redirect_uri is not one this app accepts", code="invalid_request", reason="bad_request")
        response = self._client.exchange(code=code, verifier=code_verifier, redirect_uri=redirect_uri)
        self._establish_session(response, nonce=nonce)

    def _establish_session(self, response: dict, *, nonce: str | None, max_age: int | None = None) -> None:
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
        replaced = self._end_current_session()
        if replaced:
            audit("session.ended", reason="replaced", ended=[replaced["id"]], **audit_fields(replaced))
        current_app.session_interface.regenerate(session)
        session.clear()
        record = self._session_tokens.start(
            session.sid,
            username=profile.username,
            sub=sub,
            response=response,
            provider_sid=claims.get("sid") if isinstance(claims.get("sid"), str) else None,
            user_agent=user_agent_label(request.headers.get("User-Agent")),
            **proven_authentication(claims),
        )
        session.update(user=profile.username, signed_in_at=int(record["started"]), ends=record["ends"])
        audit("signin.succeeded", **audit_fields(record))

    def session_info(self) -> dict:
        """Who is signed in, with which scopes, and until when; never a token, never an extension."""
        # An expired session comes back empty under a made-up sid: its cookie names the one that ended.
        sid = session.sid if session else request.cookies.get(self._session_cookie)
        return session_info(self._session_tokens, sid, idle_timeout=self._idle_timeout)

    def sign_out(self) -> str:
        """End the session here, revoke its refresh token, and return the provider's logout URL."""
        record = self._end_current_session()
        audit("signout", **audit_fields(record))
        session.clear()
        if record and record.get("refresh_token"):
            self._client.revoke(record["refresh_token"])
        return self._client.end_session_url(
            id_token=record.get("id_token") if record else None,
            post_logout_redirect_uri=self._post_logout_redirect_uri,
        )

    def _end_current_session(self) -> dict | None:
        cookie = request.cookies.get(self._session_cookie)
        return self._session_tokens.end(cookie) if cookie else None
