"""DPoP proofs (RFC 9449 section 4.3): every check a resource server makes of the `DPoP` header that
comes with a DPoP-bound access token, and the server nonces of section 9.

The verified-token cache may skip a token's signature, never its proof: `DpopProofs.check` runs on
every DPoP request, after the token itself was validated.
"""

import base64
import hashlib
import hmac
import json
import time
from urllib.parse import quote, unquote, urlsplit

from joserfc import jws
from joserfc.errors import JoseError
from joserfc.jwk import JWKRegistry

from ..errors import Unauthorized
from ..metrics import count_dpop_refusal
from ..store.proofs import SeenProofs
from .dpop_nonces import DpopNonces

ALGORITHMS = ("ES256", "PS256", "RS256")
KEY_TYPES = {"ES256": "EC", "PS256": "RSA", "RS256": "RSA"}
PRIVATE_MEMBERS = {"d", "p", "q", "dp", "dq", "qi", "oth", "k"}
PROOF_MAX_AGE = 60  # seconds a proof is accepted after its iat
CLOCK_SKEW = 5  # seconds a proof id is kept past its window, for instances whose clocks differ that much
MAX_PROOF_BYTES = 8192
MAX_JTI = 256
DEFAULT_PORTS = {"http": 80, "https": 443}
PATH_CHARACTERS = "/!$&'()*+,;=:@-._~"  # left as they are in a path (RFC 3986 pchar); the rest percent-encoded
# The members a refusal may name (a proof's own member names never reach a message or a header).
ASCII_MEMBERS = frozenset({"typ", "alg", "kid", "jti", "htm", "htu", "ath", "nonce"})
CHALLENGE = f'DPoP algs="{" ".join(ALGORITHMS)}"'


class _ProofRegistry(jws.JWSRegistry):
    # joserfc's default caps a header at 512 bytes, less than an RSA-2048 public jwk takes.
    max_header_length = 2048
    max_signature_length = 2048


# Header members this module does not know are ignored, as JOSE says, unless a proof marks them `crit`.
_PARSER = _ProofRegistry(algorithms=list(ALGORITHMS), strict_check_header=False)
_VERIFIERS = {alg: _ProofRegistry(algorithms=[alg], strict_check_header=False) for alg in ALGORITHMS}


class InvalidDpopProof(Unauthorized):
    """A DPoP request whose proof fails a check of RFC 9449 4.3."""

    code = "invalid_dpop_proof"


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
            raise _refused("count", "exactly one DPoP header is required")
        claims, key = _signed_proof(proofs[0])
        now = time.time()
        if claims.get("htm") != method:
            raise _refused("htm", "the DPoP proof is for another method (htm)")
        htu = claims.get("htu")
        if not isinstance(htu, str) or normalized_url(htu) not in self._urls(path):
            raise _refused("htu", "the DPoP proof is for another URL (htu)")
        iat = claims.get("iat")
        if not isinstance(iat, int | float) or isinstance(iat, bool):
            raise _refused("iat", "the DPoP proof has no iat")
        if not now - PROOF_MAX_AGE <= iat <= now + self._leeway:
            raise _refused("iat", "the DPoP proof is too old or from the future (iat)")
        jti = claims.get("jti")
        if not isinstance(jti, str) or not 0 < len(jti) <= MAX_JTI:
            raise _refused("jti", "the DPoP proof has no usable jti")
        if not isinstance(claims.get("ath"), str):
            raise _refused("ath", "the DPoP proof has no ath")
        if not hmac.compare_digest(claims["ath"], b64url_sha256(access_token)):
            raise _refused("ath", "the DPoP proof is for another access token (ath)")
        if not hmac.compare_digest(key.thumbprint().encode(), jkt.encode()):
            raise _refused("jkt", "the DPoP proof is signed with a key the token is not bound to (jkt)")
        if self._nonces is not None and not self._nonces.accepts(claims.get("nonce")):
            count_dpop_refusal("nonce")
            raise UseDpopNonce(self._nonces.current())
        # Last: only a proof that passed everything else may take a place in Redis, under its key, until
        # no instance would take it any more (its iat plus the window).
        if not self._seen.first_use(jkt, jti, now=now, until=iat + PROOF_MAX_AGE + CLOCK_SKEW):
            raise _refused("replay", "this DPoP proof was already used (jti)")

    def _urls(self, path: str) -> set[str | None]:
        """The `htu` values a proof for `path` may name: each public origin with that path."""
        return {normalized_url(origin + path) for origin in self._origins} - {None}


def _signed_proof(proof: str):
    """The claims and public key of a proof whose form and signature are right."""
    if len(proof) > MAX_PROOF_BYTES:
        raise _refused("malformed", "the DPoP proof is too large")
    try:
        compact = jws.extract_compact(proof.encode("ascii"), registry=_PARSER)
        header = compact.headers()
    except (JoseError, ValueError, TypeError, UnicodeError):
        raise _refused("malformed", "the DPoP proof is not a JWT") from None
    _require_ascii(header)
    if not isinstance(header.get("typ"), str) or header["typ"].lower() != "dpop+jwt":
        raise _refused("typ", "the DPoP proof's typ is not dpop+jwt")
    alg = header.get("alg")
    if alg not in ALGORITHMS:
        raise _refused("alg", f"the DPoP proof's algorithm is not one of {' '.join(ALGORITHMS)}")
    if "crit" in header:
        raise _refused("malformed", "the DPoP proof has an unsupported critical header")
    key = _public_key(header.get("jwk"), alg)
    try:
        valid = jws.validate_compact(compact, key, registry=_VERIFIERS[alg])
    except (JoseError, ValueError, TypeError):
        valid = False
    if not valid:
        raise _refused("signature", "the DPoP proof's signature does not verify with its jwk")
    try:
        claims = json.loads(compact.payload)
    except (ValueError, RecursionError):
        claims = None
    if not isinstance(claims, dict):
        raise _refused("malformed", "the DPoP proof's claims are not a JSON object")
    _require_ascii(claims)
    return claims, key


def _require_ascii(members: dict) -> None:
    """Refuse a proof whose header or claims hold a text member that is not ASCII: every value this
    module reads is ASCII by its definition, and comparing others would fail (hmac.compare_digest)."""
    for name, value in members.items():
        if isinstance(value, str) and not value.isascii():
            named = f"{name} is" if name in ASCII_MEMBERS else "members are"
            raise _refused("malformed", f"the DPoP proof's {named} not ASCII")


def _public_key(jwk, alg: str):
    if not isinstance(jwk, dict):
        raise _refused("jwk", "the DPoP proof has no jwk header")
    if PRIVATE_MEMBERS & set(jwk):
        raise _refused("jwk", "the DPoP proof's jwk holds a private key")
    if jwk.get("kty") != KEY_TYPES[alg]:
        raise _refused("jwk", "the DPoP proof's jwk does not fit its algorithm")
    try:
        return JWKRegistry.import_key(jwk)
    except (JoseError, ValueError, TypeError, KeyError):
        raise _refused("jwk", "the DPoP proof's jwk is not a usable public key") from None


def _refused(reason: str, message: str) -> InvalidDpopProof:
    """The refusal saying `message`, counted in /metrics under `reason` (a fixed set of check names)."""
    count_dpop_refusal(reason)
    return InvalidDpopProof(message)
