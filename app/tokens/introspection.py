"""Opaque access tokens, validated by asking the provider (RFC 7662 token introspection)."""

import logging
import math
import time
from dataclasses import replace
from functools import partial

import requests

from ..challenges import InvalidToken, SubjectUnknown
from ..errors import ProviderBusy, ProviderUnavailable
from ..metrics import provider_call
from ..provider.discovery import Provider
from ..provider.dropped import sent_again_if_dropped
from ..provider.retry_after import backoff_seconds
from ..provider.signatures import audiences_of
from ..provider.userinfo import UserinfoIdentities
from ..provider.vendors import ProviderProfile
from ..store.token_checks import ProviderBackoff
from .answers import Answers, token_digest
from .principal import Principal, build_principal

MAX_TOKEN_BYTES = 8192
# A 400 carrying one of these is about the token, not an outage (oidc-provider answers
# `unsupported_token_type` for a JWT access token, which it never introspects).
TOKEN_ERRORS = {"unsupported_token_type", "invalid_token"}
# Every refused token gets this one answer, so a prober learns nothing; the reason goes to the log.
REFUSED = "the access token is not valid"
# The provider asks us to slow down (RFC 6585, RFC 9110 15.6.4): no instance calls it until its
# Retry-After has passed (app.provider.retry_after: 5 s without one, never more than 300 s).
BACK_OFF_STATUSES = {429, 503}

log = logging.getLogger(__name__)


class IntrospectedTokens:
    """Turns a bearer token into a Principal by introspection, or raises InvalidToken (one message for
    every refusal but SubjectUnknown), ProviderUnavailable (the endpoint cannot answer) or ProviderBusy
    (it asked us to back off). An answer is reused no longer than the token lives and never longer
    than `cache_ttl`, so a revoked token stops working within `cache_ttl` seconds; a refusal for
    `refusal_ttl` seconds; both are shared with every instance through `answers`. A provider call about
    a token never seen valid is admitted by `admit(address)` first."""

    def __init__(
        self,
        provider: Provider,
        *,
        client_id: str,
        client_secret: str,
        audience: str,
        login_clients,
        profile: ProviderProfile,
        cache_ttl: float,
        timeout: float,
        answers: Answers,
        backoff: ProviderBackoff,
        refusal_ttl: float = 0,
        admit=None,
    ):
        self._provider = provider
        self._credentials = (client_id, client_secret)
        self._audience = audience
        self._login_clients = frozenset(login_clients)
        # RFC 7662 answers name the client `client_id` even where access tokens say `cid` (Okta).
        self._profile = replace(profile, client_claims=(*profile.client_claims, "client_id"))
        self._cache_ttl = cache_ttl
        self._refusal_ttl = refusal_ttl
        self._admit = admit
        self._timeout = timeout
        self._http = requests.Session()
        self._userinfo = UserinfoIdentities(provider, self._http, profile=profile, timeout=timeout)
        self._answers = answers
        self._backoff = backoff
        self._backoff_until = 0.0  # as this process last heard it

    def verify(self, token: str, *, address: str | None = None) -> Principal:
        """The principal `token` stands for, from what any instance knows or from the provider; a call
        about a token never seen valid, sent from `address`, is admitted by `admit(address)` first
        (None: a session's own token, never bounded)."""
        if len(token) > MAX_TOKEN_BYTES:
            raise _refused("the access token is too large")
        digest, now = token_digest(token), time.time()
        known = self._answers.known(digest, now)
        if known is not None and known.fresh(now):
            if known.principal is None:
                raise InvalidToken(known.refusal)
            return known.principal
        self._wait_for_provider(now)
        if known is None and address is not None and self._admit is not None:
            self._admit(address)
        try:
            principal = self._principal(self._introspect(token), token)
        except InvalidToken as error:
            public = _refused(getattr(error, "reason", None) or error.message, error)
            self._answers.refuse(digest, public.message, until=now + self._refusal_ttl, now=now)
            raise public from None
        self._answers.answer(digest, principal, until=min(principal.expires_at, now + self._cache_ttl), now=now)
        return principal

    def _wait_for_provider(self, now: float) -> None:
        """ProviderBusy while the provider's Retry-After runs, as this process or any instance heard it."""
        if self._backoff_until <= now:
            self._backoff_until = self._backoff.until()
        if self._backoff_until > now:
            raise ProviderBusy(math.ceil(self._backoff_until - now))

    def _back_off(self, retry_after: str | None) -> ProviderBusy:
        """Stop every instance calling the provider for as long as its `Retry-After` asks."""
        now = time.time()
        self._backoff_until = now + backoff_seconds(retry_after, now)
        self._backoff.start(self._backoff_until, now=now)
        log.warning("identity provider asked to back off for %.0f s", self._backoff_until - now)
        return ProviderBusy(math.ceil(self._backoff_until - now))

    def _introspect(self, token: str) -> dict:
        url = self._provider.endpoint("introspection_endpoint")  # required: never None (EndpointNotConfigured)
        form = {"token": token, "token_type_hint": "access_token"}
        methods = self._provider.endpoint("introspection_endpoint_auth_methods_supported") or []
        if methods == ["client_secret_post"]:
            form["client_id"], form["client_secret"] = self._credentials
            auth = None
        else:
            auth = self._credentials
        try:
            with provider_call("introspection"):
                post = partial(self._http.post, url, data=form, auth=auth, timeout=self._timeout)
                response = sent_again_if_dropped(post)
            if response.status_code in BACK_OFF_STATUSES:
                raise self._back_off(response.headers.get("Retry-After"))
            if response.status_code == 400 and _error_of(response) in TOKEN_ERRORS:
                raise InvalidToken("the access token is not one the provider can introspect")
            response.raise_for_status()
            answer = response.json()
        except (requests.RequestException, ValueError) as error:
            raise ProviderUnavailable(f"introspection endpoint: {type(error).__name__}") from None
        if not isinstance(answer, dict) or not isinstance(answer.get("active"), bool):
            raise ProviderUnavailable("introspection endpoint: not an RFC 7662 answer")
        return answer

    def _principal(self, answer: dict, token: str) -> Principal:
        if not answer["active"]:
            raise InvalidToken("the access token is not active")
        if "iss" in answer and answer["iss"] != self._provider.issuer:
            raise InvalidToken("the access token has the wrong issuer")
        if answer.get("aud") is not None and self._audience not in audiences_of(answer):
            raise InvalidToken("the access token is not meant for this API")
        # A DPoP-bound token is an access token too: its binding is read from `cnf` (RFC 9449 6.2).
        token_type = answer.get("token_type")
        if token_type is not None and str(token_type).lower() not in ("bearer", "dpop", "access_token"):
            raise InvalidToken("the token is not an access token")
        if str(token_type).lower() == "dpop" and "cnf" not in answer:  # RFC 9449 6.2: never a bearer token
            raise InvalidToken("the access token is a DPoP token bound to no key (cnf.jkt)")
        exp = answer.get("exp")
        expires_at = float(exp) if isinstance(exp, (int, float)) and not isinstance(exp, bool) else float("inf")
        # ... and the scopes `scope` where access tokens say `scp` (Okta, Entra).
        scope_claim = self._profile.scope_claim if self._profile.scope_claim in answer else "scope"
        profile = replace(self._profile, scope_claim=scope_claim)
        answer = self._with_subject(answer, token)
        return build_principal(answer, profile, self._login_clients, expires_at=expires_at)

    def _with_subject(self, answer: dict, token: str) -> dict:
        """`answer`, with the subject (and the username, when missing) from userinfo when a login
        client's token names none; nothing else is taken from userinfo (never scopes or audience)."""
        subject_claim, username_claim = self._profile.subject_claim, self._profile.username_claim
        client = next((answer[name] for name in self._profile.client_claims if answer.get(name)), None)
        if answer.get(subject_claim) or client is None:
            return answer
        if client not in self._login_clients:  # an app token: never a userinfo call, never a user
            return {**answer, subject_claim: client}
        subject, username = self._userinfo.identity(token)
        named = answer.get(username_claim) if username_claim else None
        if named and username and named != username:
            raise SubjectUnknown(f"userinfo names {username_claim} other than the introspection answer")
        extra = {username_claim: username} if username_claim and username and not named else {}
        return {**answer, subject_claim: subject, **extra}


def _refused(reason: str, error: InvalidToken | None = None) -> InvalidToken:
    """The one refusal a client sees (SubjectUnknown keeps its own message), with `reason` logged."""
    log.info("access token refused: %s", reason)
    return error if isinstance(error, SubjectUnknown) else InvalidToken(REFUSED)


def _error_of(response) -> str | None:
    try:
        body = response.json()
    except ValueError:
        return None
    return body.get("error") if isinstance(body, dict) else None
