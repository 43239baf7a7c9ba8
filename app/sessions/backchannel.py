"""OpenID Connect Back-Channel Logout 1.0: the provider's `logout_token`, accepted once, ends our
sessions of that provider session (`sid`) or, without one, of that user (`sub`)."""

import time

from ..audit import audit
from ..errors import BadLogoutToken
from ..provider.discovery import Provider
from ..provider.signatures import BadToken, audiences_of, is_number, signed_claims
from ..store.session_index import SessionIndex
from .per_user import BrowserSessions

BACKCHANNEL_EVENT = "http://schemas.openid.net/event/backchannel-logout"
MAX_AGE = 300  # seconds a logout token is accepted after its iat; its jti is kept that long plus the leeway
LOGOUT_TYPES = {"logout+jwt", "application/logout+jwt"}


class BackchannelLogout:
    """What POST /auth/backchannel-logout does: check the token, accept its `jti` once, end the sessions."""

    def __init__(
        self, provider: Provider, index: SessionIndex, browser_sessions: BrowserSessions, *, client_id: str, leeway: int
    ):
        self._provider = provider
        self._index = index
        self._browser_sessions = browser_sessions
        self._client_id = client_id
        self._leeway = leeway

    def accept(self, token) -> None:
        """End the sessions a valid, unused logout token names; BadLogoutToken otherwise."""
        claims = logout_token_claims(self._provider, token, client_id=self._client_id, leeway=self._leeway)
        # Remembered as long as the token can be accepted: an iat up to `leeway` ahead adds to MAX_AGE.
        if not self._index.first_use_of_logout_token(claims["jti"], MAX_AGE + self._leeway):
            raise BadLogoutToken("this logout token was already used", "replayed", sub=claims.get("sub"))
        try:
            ended = self._browser_sessions.end_for_logout_token(claims)
        except Exception:
            # Sessions may still be alive: the provider's retry of this same token must be accepted.
            self._index.forget_logout_token(claims["jti"])
            raise
        audit(
            "session.ended",
            reason="backchannel",
            sub=claims.get("sub"),
            provider_session=claims.get("sid"),
            ended=ended,
        )


def logout_token_claims(provider: Provider, token, *, client_id: str, leeway: int) -> dict:
    """The claims of a valid logout token for `client_id`; BadLogoutToken otherwise."""
    if not isinstance(token, str) or not token:
        raise BadLogoutToken("logout_token is missing", "missing")
    try:
        header, claims = signed_claims(provider, token)
    except BadToken as error:
        raise BadLogoutToken(str(error), "unverified") from None
    typ = header.get("typ")
    if typ is not None and (not isinstance(typ, str) or typ.lower() not in LOGOUT_TYPES):
        raise BadLogoutToken("the token's typ is not logout+jwt", "typ")
    _check_claims(claims, provider.issuer, client_id, leeway)
    return claims


def _check_claims(claims: dict, issuer: str, client_id: str, leeway: int) -> None:
    """BadLogoutToken, with its message and reason code, unless a verified token's claims are a logout's."""
    now = time.time()
    events = claims.get("events")
    if claims.get("iss") != issuer:
        raise BadLogoutToken("wrong issuer", "issuer")
    if client_id not in audiences_of(claims):
        raise BadLogoutToken("not issued to this client", "audience")
    if not is_number(claims.get("iat")) or claims["iat"] > now + leeway:
        raise BadLogoutToken("missing or future iat", "iat")
    if claims["iat"] < now - MAX_AGE:
        raise BadLogoutToken("issued too long ago", "too_old")
    if "exp" in claims and (not is_number(claims["exp"]) or now >= claims["exp"] + leeway):
        raise BadLogoutToken("expired", "expired")
    if not isinstance(events, dict) or not isinstance(events.get(BACKCHANNEL_EVENT), dict):
        raise BadLogoutToken("no back-channel logout event", "events")
    if "nonce" in claims:
        raise BadLogoutToken("a logout token must not carry a nonce", "nonce")
    if not isinstance(claims.get("jti"), str) or not claims["jti"]:
        raise BadLogoutToken("no jti", "jti")
    sid, sub = claims.get("sid"), claims.get("sub")
    if not (isinstance(sid, str) and sid) and not (isinstance(sub, str) and sub):
        raise BadLogoutToken("neither sid nor sub", "no_subject")
    for name in ("sid", "sub"):
        if name in claims and not (isinstance(claims[name], str) and claims[name]):
            raise BadLogoutToken(f"{name} is not a string", "no_subject")
