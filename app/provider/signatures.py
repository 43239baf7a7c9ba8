"""Checks a compact JWS against the provider's keys: asymmetric algorithms only, never `none`."""

import json

from joserfc import jws
from joserfc.errors import JoseError

from .discovery import Provider

MAX_TOKEN_BYTES = 8192
ASYMMETRIC_ALGORITHMS = (
    "RS256",
    "RS384",
    "RS512",
    "PS256",
    "PS384",
    "PS512",
    "ES256",
    "ES384",
    "ES512",
    "EdDSA",
)
_REGISTRY = jws.JWSRegistry(algorithms=list(ASYMMETRIC_ALGORITHMS))


class BadToken(Exception):
    """The token is not a well-formed JWS signed by one of the provider's keys."""


def signed_claims(provider: Provider, token: str) -> tuple[dict, dict]:
    """The header and claims of `token` once its signature is proven; BadToken otherwise."""
    if len(token) > MAX_TOKEN_BYTES:
        raise BadToken("the token is too large")
    try:
        compact = jws.extract_compact(token.encode("ascii"))
        header = compact.headers()
    except (JoseError, ValueError, TypeError, UnicodeError):
        raise BadToken("the token is malformed") from None
    if header.get("alg") not in ASYMMETRIC_ALGORITHMS:
        raise BadToken("the token's algorithm is not accepted")
    if "crit" in header:  # no JWS extension is understood here, so every critical one is refused (RFC 7515 4.1.11)
        raise BadToken("the token has an unsupported critical header")
    kid = header.get("kid")
    key = provider.signing_keys.key(kid) if kid is None or isinstance(kid, str) else None
    if key is None:
        raise BadToken("the token was not signed by a known key")
    if not _verifies(compact, key):
        # A provider may rotate a key and keep its kid: re-read the keys (rate-limited) and try once more.
        renewed = provider.signing_keys.key_again(kid, key)
        if renewed is None or not _verifies(compact, renewed):
            raise BadToken("the token's signature is invalid")
    try:
        claims = json.loads(compact.payload)
    except (ValueError, RecursionError):
        claims = None
    if not isinstance(claims, dict):
        raise BadToken("the token's claims are not a JSON object")
    return header, claims


def _verifies(compact, key) -> bool:
    try:
        return bool(jws.validate_compact(compact, key, registry=_REGISTRY))
    except (JoseError, ValueError, TypeError):
        return False


def audiences_of(claims: dict) -> list:
    """The `aud` claim as a list: a single audience may be sent as a bare string (RFC 7519 4.1.3)."""
    audience = claims.get("aud")
    return audience if isinstance(audience, list) else [audience]


def is_number(value) -> bool:
    """True for JSON numbers (bool excluded), as time claims must be."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)
