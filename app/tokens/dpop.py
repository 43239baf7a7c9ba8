"""DPoP proofs (RFC 9449 section 4.3): the checks a resource server makes of the `DPoP` header that comes
with a DPoP-bound access token, beyond the proof's own form and signature (app.tokens.dpop_jwt): this
request, this token, its key, fresh and used once; and the server nonces of section 9.

The verified-token cache may skip a token's signature, never its proof: `DpopProofs.check` runs on
every DPoP request, after the token itself was validated.
"""

import base64
import hashlib
import hmac
import time
from urllib.parse import quote, unquote, urlsplit

from ..metrics import count_dpop_refusal
from ..store.proofs import SeenProofs
from .dpop_jwt import ALGORITHMS, InvalidDpopProof, refusal, signed_proof
from .dpop_nonces import DpopNonces

PROOF_MAX_AGE = 60  # seconds a proof is accepted after its iat
CLOCK_SKEW = 5  # seconds a proof id is kept past its window, for instances whose clocks differ that much
MAX_JTI = 256
DEFAULT_PORTS = {"http": 80, "https": 443}
PATH_CHARACTERS = "/!$&'()*+,;=:@-._~"  # left as they are in a path (RFC 3986 pchar); the rest percent-encoded
CHALLENGE = f'DPoP algs="{" ".join(ALGORITHMS)}"'


class UseDpopNonce(InvalidDpopProof):
    """A proof without the current server nonce (RFC 9449 9): the client retries with `DPoP-Nonce`."""

    code = "use_dpop_nonce"

    def __init__(self, nonce: str):
        super().__init__("the DPoP proof must carry the server's nonce (DPoP-Nonce)")
        self.nonce = nonce

    def headers(self) -> dict[str, str]:
        return {**super().headers(), "DPoP-Nonce": self.nonce}


def dpop_challenge(failure: tuple[str, ...] | None) -> str:
    """The `DPoP` WWW-Authenticate field; with the error code and text of a failed DPoP request (or,
    when `failure` has a third member, those auth-params as they are: a step-up challenge's)."""
    if failure is None:
        return CHALLENGE
    code, message, *parameters = failure
    if parameters:
        return f"{CHALLENGE}, {parameters[0]}"
    return f'{CHALLENGE}, error="{code}", error_description="{message}"'


def b64url_sha256(text: str) -> str:
    """base64url, no padding, of the SHA-256 of `text` (a proof's `ath`)."""
    return base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()


def normalized_url(url: str) -> str | None:
    """`url` as RFC 9449 compares `htu`: scheme and host lower-cased, default port dropped, the path's
    percent-encoding made canonical, no query or fragment; None when it is not an absolute http(s) URL."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return None
    scheme, host = parts.scheme.lower(), (parts.hostname or "")
    if scheme not in DEFAULT_PORTS or not host:
        return None
    host = f"[{host}]" if ":" in host else host
    netloc = host if port is None or port == DEFAULT_PORTS[scheme] else f"{host}:{port}"
    return f"{scheme}://{netloc}{quote(unquote(parts.path), safe=PATH_CHARACTERS) or '/'}"


class DpopProofs:
    """Checks the proof of one DPoP request; InvalidDpopProof (or UseDpopNonce) names the failed check.
    `origins` are the API's public origins (PUBLIC_ORIGINS): a proof's `htu` is one of them plus the
    request's path, whatever host the request names."""

    def __init__(self, seen: SeenProofs, *, leeway: int, origins, nonces: DpopNonces | None = None):
        self._seen = seen
        self._leeway = leeway
        self._origins = tuple(origin.rstrip("/") for origin in origins)
        self._nonces = nonces

    def check(self, proofs: list[str], *, method: str, path: str, access_token: str, jkt: str) -> None:
        """Pass when `proofs` is exactly one valid proof, for this request and this token's key;
        TooManyDpopProofs when the key has sent more proofs than its bound allows."""
        if len(proofs) != 1 or "," in proofs[0]:
            raise refusal("count", "exactly one DPoP header is required")
        claims, key = signed_proof(proofs[0])
        now = time.time()
        if claims.get("htm") != method:
            raise refusal("htm", "the DPoP proof is for another method (htm)")
        htu = claims.get("htu")
        if not isinstance(htu, str) or normalized_url(htu) not in self._urls(path):
            raise refusal("htu", "the DPoP proof is for another URL (htu)")
        iat = claims.get("iat")
        if not isinstance(iat, int | float) or isinstance(iat, bool):
            raise refusal("iat", "the DPoP proof has no iat")
        if not now - PROOF_MAX_AGE <= iat <= now + self._leeway:
            raise refusal("iat", "the DPoP proof is too old or from the future (iat)")
        jti = claims.get("jti")
        if not isinstance(jti, str) or not 0 < len(jti) <= MAX_JTI:
            raise refusal("jti", "the DPoP proof has no usable jti")
        if not isinstance(claims.get("ath"), str):
            raise refusal("ath", "the DPoP proof has no ath")
        if not hmac.compare_digest(claims["ath"], b64url_sha256(access_token)):
            raise refusal("ath", "the DPoP proof is for another access token (ath)")
        if not hmac.compare_digest(key.thumbprint().encode(), jkt.encode()):
            raise refusal("jkt", "the DPoP proof is signed with a key the token is not bound to (jkt)")
        if self._nonces is not None and not self._nonces.accepts(claims.get("nonce")):
            count_dpop_refusal("nonce")
            raise UseDpopNonce(self._nonces.current())
        # Last: only a proof that passed everything else may take a place in Redis, under its key, until
        # no instance would take it any more (its iat plus the window).
        if not self._seen.first_use(jkt, jti, now=now, until=iat + PROOF_MAX_AGE + CLOCK_SKEW):
            raise refusal("replay", "this DPoP proof was already used (jti)")

    def _urls(self, path: str) -> set[str | None]:
        """The `htu` values a proof for `path` may name: each public origin with that path."""
        return {normalized_url(origin + path) for origin in self._origins} - {None}
