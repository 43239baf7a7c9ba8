"""Opaque access tokens, validated by asking the provider (RFC 7662 token introspection)."""

import hashlib
import threading
import time
from collections import OrderedDict
from dataclasses import replace

import requests

from ..errors import InvalidToken, ProviderUnavailable
from ..metrics import provider_call
from .principal import Principal, build_principal
from .provider import Provider
from .provider_profiles import ProviderProfile
from .signatures import audiences_of

MAX_TOKEN_BYTES = 8192
# A 400 carrying one of these is about the token, not an outage (oidc-provider answers
# `unsupported_token_type` for a JWT access token, which it never introspects).
TOKEN_ERRORS = {"unsupported_token_type", "invalid_token"}


class IntrospectedTokens:
    """Turns a bearer token into a Principal by introspection, or raises InvalidToken (inactive or
    not for this API) or ProviderUnavailable (the endpoint cannot answer: 503, never a 200).
    An answer is remembered no longer than the token lives and never longer than `cache_ttl`,
    so a revoked token stops working within `cache_ttl` seconds."""

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
        cache_size: int = 10_000,
    ):
        self._provider = provider
        self._credentials = (client_id, client_secret)
        self._audience = audience
        self._login_clients = frozenset(login_clients)
        # RFC 7662 answers name the client `client_id` even where access tokens say `cid` (Okta).
        self._profile = replace(profile, client_claims=(*profile.client_claims, "client_id"))
        self._cache_ttl = cache_ttl
        self._timeout = timeout
        self._http = requests.Session()
        self._cache: OrderedDict[bytes, tuple[Principal, float]] = OrderedDict()
        self._cache_size = cache_size
        self._lock = threading.Lock()

    def verify(self, token: str) -> Principal:
        """The principal `token` stands for, from the cache or the introspection endpoint."""
        if len(token) > MAX_TOKEN_BYTES:
            raise InvalidToken("the access token is too large")
        digest = hashlib.sha256(token.encode()).digest()  # the cache never holds a token itself
        cached = self._cache.get(digest)
        if cached is not None and time.time() < cached[1]:
            return cached[0]
        answer = self._introspect(token)
        principal = self._principal(answer)
        until = min(principal.expires_at, time.time() + self._cache_ttl)
        with self._lock:
            self._cache[digest] = (principal, until)
            self._cache.move_to_end(digest)
            if len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)
        return principal

    def _introspect(self, token: str) -> dict:
        url = self._provider.endpoint("introspection_endpoint")
        if not url:
            raise ProviderUnavailable("discovery lists no introspection_endpoint")
        form = {"token": token, "token_type_hint": "access_token"}
        methods = self._provider.endpoint("introspection_endpoint_auth_methods_supported") or []
        if methods == ["client_secret_post"]:
            form["client_id"], form["client_secret"] = self._credentials
            auth = None
        else:
            auth = self._credentials
        try:
            with provider_call("introspection"):
                response = self._http.post(url, data=form, auth=auth, timeout=self._timeout)
            if response.status_code == 400 and _error_of(response) in TOKEN_ERRORS:
                raise InvalidToken("the access token is not one the provider can introspect")
            response.raise_for_status()
            answer = response.json()
        except (requests.RequestException, ValueError) as error:
            raise ProviderUnavailable(f"introspection endpoint: {type(error).__name__}") from None
        if not isinstance(answer, dict) or not isinstance(answer.get("active"), bool):
            raise ProviderUnavailable("introspection endpoint: not an RFC 7662 answer")
        return answer

    def _principal(self, answer: dict) -> Principal:
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
        exp = answer.get("exp")
        expires_at = float(exp) if isinstance(exp, (int, float)) and not isinstance(exp, bool) else float("inf")
        # ... and the scopes `scope` where access tokens say `scp` (Okta, Entra).
        scope_claim = self._profile.scope_claim if self._profile.scope_claim in answer else "scope"
        profile = replace(self._profile, scope_claim=scope_claim)
        return build_principal(answer, profile, self._login_clients, expires_at=expires_at)


def _error_of(response) -> str | None:
    try:
        body = response.json()
    except ValueError:
        return None
    return body.get("error") if isinstance(body, dict) else None
