"""Access-token validation: a proven signature, then every claim an API must check."""

import threading
import time
from collections import OrderedDict

from joserfc.errors import ExpiredTokenError, InvalidClaimError, JoseError
from joserfc.jwt import JWTClaimsRegistry

from ..errors import InvalidToken
from ..provider.discovery import Provider
from ..provider.signatures import BadToken, audiences_of, is_number, signed_claims
from ..provider.vendors import CLIENT_ALLOWLIST, PROFILES, ProviderProfile
from .principal import Principal, build_principal

ACCESS_TOKEN_TYPES = {"at+jwt", "application/at+jwt", "jwt"}
ID_TOKEN_MARKERS = ("at_hash", "c_hash")
TIME_CLAIMS = ("exp", "nbf", "iat")


class AccessTokens:
    """Turns a bearer token into a Principal or raises InvalidToken; remembers verified tokens until
    they expire (never past JWKS_MAX_AGE after the signing keys were last read, when a removed key
    stops being trusted), so a token seen again costs a dictionary lookup."""

    def __init__(
        self,
        provider: Provider,
        *,
        audience: str,
        login_clients,
        leeway: int,
        profile: ProviderProfile = PROFILES["generic"],
        api_clients=(),
        cache_size=10_000,
    ):
        self._provider = provider
        self._audience = audience
        self._login_clients = frozenset(login_clients)
        self._api_clients = frozenset(api_clients)
        self._leeway = leeway
        self._profile = profile
        self._registry = JWTClaimsRegistry(leeway=leeway, iss={"essential": True, "value": provider.issuer})
        self._cache: OrderedDict[str, tuple[Principal, float]] = OrderedDict()
        self._cache_size = cache_size
        self._cache_lock = threading.Lock()

    def verify(self, token: str, *, address: str | None = None) -> Principal:
        """The principal `token` stands for; InvalidToken when it is not a valid access token.
        (`address`, who sent it, matters only to introspection: the JWKS refetch here is bounded on its own.)"""
        cached = self._cache.get(token)
        if cached is not None:
            if time.time() < cached[1]:
                return cached[0]
            self._forget(token)
        claims = self._verified_claims(token)
        principal = build_principal(claims, self._profile, self._login_clients, expires_at=float(claims["exp"]))
        self._remember(token, principal)
        return principal

    def _verified_claims(self, token: str) -> dict:
        try:
            header, claims = signed_claims(self._provider, token)
        except BadToken as error:
            raise InvalidToken(str(error).replace("the token", "the access token")) from None
        if str(header.get("typ", "JWT")).lower() not in ACCESS_TOKEN_TYPES:
            raise InvalidToken("the token is not an access token")
        self._check_registered_claims(claims)
        self._check_audience(claims)
        if _looks_like_id_token(claims):
            raise InvalidToken("an ID token is not an access token")
        return claims

    def _check_registered_claims(self, claims: dict) -> None:
        if any(name in claims and not is_number(claims[name]) for name in TIME_CLAIMS) or "exp" not in claims:
            raise InvalidToken("the access token has malformed time claims")
        try:
            self._registry.validate(claims)
        except ExpiredTokenError:
            raise InvalidToken("the access token has expired") from None
        except InvalidClaimError as error:
            raise InvalidToken(_registered_claim_problem(error.claim)) from None
        except JoseError:
            raise InvalidToken("the access token has the wrong issuer") from None  # the one essential claim
        # Stricter than the registry, which works in whole seconds: a token is dead at exp + leeway.
        if time.time() >= claims["exp"] + self._leeway:
            raise InvalidToken("the access token has expired")

    def _check_audience(self, claims: dict) -> None:
        if self._profile.audience_rule == CLIENT_ALLOWLIST:
            # Cognito access tokens carry no `aud`: the client and the token's use say who it is for.
            if claims.get("token_use") != "access":
                raise InvalidToken("the token is not an access token (token_use)")
            if claims.get("client_id") not in self._api_clients:
                raise InvalidToken("the access token is not meant for this API")
            return
        if self._audience not in audiences_of(claims):
            raise InvalidToken("the access token is not meant for this API")

    def _remember(self, token: str, principal: Principal) -> None:
        with self._cache_lock:
            until = min(principal.expires_at + self._leeway, self._provider.keys_trusted_until())
            self._cache[token] = (principal, until)
            if len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)

    def _forget(self, token: str) -> None:
        with self._cache_lock:
            self._cache.pop(token, None)


def _registered_claim_problem(claim: str) -> str:
    return {
        "iss": "the access token has the wrong issuer",
        "aud": "the access token is not meant for this API",
        "nbf": "the access token is not valid yet",
        "iat": "the access token is not valid yet",
        "sub": "the access token has no subject",
    }.get(claim, f"the access token's {claim} claim is malformed")


def _looks_like_id_token(claims: dict) -> bool:
    # Keycloak marks its tokens (typ ID / Bearer) and, up to version 24, copies the sign-in nonce
    # into access tokens too; elsewhere a nonce or a hash of the code or token means an ID token.
    if claims.get("typ") == "ID" or any(marker in claims for marker in ID_TOKEN_MARKERS):
        return True
    return "nonce" in claims and claims.get("typ") != "Bearer"
