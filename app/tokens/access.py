"""Access-token validation: a proven signature, then every claim an API must check."""

import threading
import time
from collections import OrderedDict

from ..errors import InvalidToken
from .principal import Principal
from .provider import Provider
from .signatures import BadToken, is_number, signed_claims

ACCESS_TOKEN_TYPES = {"at+jwt", "application/at+jwt", "jwt"}
ID_TOKEN_MARKERS = ("at_hash", "c_hash")


class AccessTokens:
    """Turns a bearer token into a Principal or raises InvalidToken; remembers verified tokens
    until they expire, so a token seen again costs a dictionary lookup."""

    def __init__(self, provider: Provider, *, audience: str, login_clients, leeway: int, cache_size=10_000):
        self._provider = provider
        self._audience = audience
        self._login_clients = frozenset(login_clients)
        self._leeway = leeway
        self._cache: OrderedDict[str, Principal] = OrderedDict()
        self._cache_size = cache_size
        self._cache_lock = threading.Lock()

    def verify(self, token: str) -> Principal:
        """The principal `token` stands for; InvalidToken when it is not a valid access token."""
        cached = self._cache.get(token)
        if cached is not None:
            if time.time() < cached.expires_at + self._leeway:
                return cached
            self._forget(token)
        principal = self._principal(self._verified_claims(token))
        self._remember(token, principal)
        return principal

    def _verified_claims(self, token: str) -> dict:
        try:
            header, claims = signed_claims(self._provider, token)
        except BadToken as error:
            raise InvalidToken(str(error).replace("the token", "the access token")) from None
        if str(header.get("typ", "JWT")).lower() not in ACCESS_TOKEN_TYPES:
            raise InvalidToken("the token is not an access token")
        self._check_claims(claims)
        return claims

    def _check_claims(self, claims: dict) -> None:
        now = time.time()
        if claims.get("iss") != self._provider.issuer:
            raise InvalidToken("the access token has the wrong issuer")
        audience = claims.get("aud")
        audiences = audience if isinstance(audience, list) else [audience]
        if self._audience not in audiences:
            raise InvalidToken("the access token is not meant for this API")
        exp, nbf, iat = claims.get("exp"), claims.get("nbf", 0), claims.get("iat", 0)
        if not all(is_number(value) for value in (exp, nbf, iat)):
            raise InvalidToken("the access token has malformed time claims")
        if now >= exp + self._leeway:
            raise InvalidToken("the access token has expired")
        if nbf > now + self._leeway or iat > now + self._leeway:
            raise InvalidToken("the access token is not valid yet")
        if _looks_like_id_token(claims):
            raise InvalidToken("an ID token is not an access token")
        if not isinstance(claims.get("sub"), str) or not claims["sub"]:
            raise InvalidToken("the access token has no subject")
        if not isinstance(claims.get("scope", ""), str):
            raise InvalidToken("the access token's scope is malformed")

    def _principal(self, claims: dict) -> Principal:
        client_id = claims.get("client_id") or claims.get("azp")
        client_id = client_id if isinstance(client_id, str) else None
        preferred = claims.get("preferred_username")
        preferred = preferred if isinstance(preferred, str) else None
        name = claims.get("name") if isinstance(claims.get("name"), str) else None
        is_user = (
            client_id in self._login_clients
            and claims["sub"] != client_id
            and not (preferred or "").startswith("service-account-")
        )
        return Principal(
            subject=claims["sub"],
            scopes=frozenset(claims.get("scope", "").split()),
            is_user=is_user,
            preferred_username=preferred,
            name=name,
            expires_at=float(claims["exp"]),
        )

    def _remember(self, token: str, principal: Principal) -> None:
        with self._cache_lock:
            self._cache[token] = principal
            if len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)

    def _forget(self, token: str) -> None:
        with self._cache_lock:
            self._cache.pop(token, None)


def _looks_like_id_token(claims: dict) -> bool:
    # Keycloak marks its tokens (typ ID / Bearer) and, up to version 24, copies the sign-in nonce
    # into access tokens too; elsewhere a nonce or a hash of the code or token means an ID token.
    if claims.get("typ") == "ID" or any(marker in claims for marker in ID_TOKEN_MARKERS):
        return True
    return "nonce" in claims and claims.get("typ") != "Bearer"
