"""A DPoP proof as a JWT (RFC 9449 section 4.3): one compact JWS of type dpop+jwt, with an accepted
algorithm, signed by the public key of its `jwk` header; and the refusal each failed check of a proof
raises, counted by the check's reason."""

import json

from joserfc import jws
from joserfc.errors import JoseError
from joserfc.jwk import JWKRegistry

from ..challenges import Unauthorized
from ..metrics import count_dpop_refusal

ALGORITHMS = ("ES256", "PS256", "RS256")
KEY_TYPES = {"ES256": "EC", "PS256": "RSA", "RS256": "RSA"}
PRIVATE_MEMBERS = {"d", "p", "q", "dp", "dq", "qi", "oth", "k"}
MAX_PROOF_BYTES = 8192
# The members a refusal may name (a proof's own member names never reach a message or a header).
ASCII_MEMBERS = frozenset({"typ", "alg", "kid", "jti", "htm", "htu", "ath", "nonce"})


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


def signed_proof(proof: str):
    """The claims and public key of a proof whose form and signature are right."""
    if len(proof) > MAX_PROOF_BYTES:
        raise refusal("malformed", "the DPoP proof is too large")
    try:
        compact = jws.extract_compact(proof.encode("ascii"), registry=_PARSER)
        header = compact.headers()
    except (JoseError, ValueError, TypeError, UnicodeError):
        raise refusal("malformed", "the DPoP proof is not a JWT") from None
    _require_ascii(header)
    if not isinstance(header.get("typ"), str) or header["typ"].lower() != "dpop+jwt":
        raise refusal("typ", "the DPoP proof's typ is not dpop+jwt")
    alg = header.get("alg")
    if alg not in ALGORITHMS:
        raise refusal("alg", f"the DPoP proof's algorithm is not one of {' '.join(ALGORITHMS)}")
    if "crit" in header:
        raise refusal("malformed", "the DPoP proof has an unsupported critical header")
    key = _public_key(header.get("jwk"), alg)
    try:
        valid = jws.validate_compact(compact, key, registry=_VERIFIERS[alg])
    except (JoseError, ValueError, TypeError):
        valid = False
    if not valid:
        raise refusal("signature", "the DPoP proof's signature does not verify with its jwk")
    try:
        claims = json.loads(compact.payload)
    except (ValueError, RecursionError):
        claims = None
    if not isinstance(claims, dict):
        raise refusal("malformed", "the DPoP proof's claims are not a JSON object")
    _require_ascii(claims)
    return claims, key


def _require_ascii(members: dict) -> None:
    """Refuse a proof whose header or claims hold a text member that is not ASCII: every value this
    module reads is ASCII by its definition, and comparing others would fail (hmac.compare_digest)."""
    for name, value in members.items():
        if isinstance(value, str) and not value.isascii():
            named = f"{name} is" if name in ASCII_MEMBERS else "members are"
            raise refusal("malformed", f"the DPoP proof's {named} not ASCII")


def _public_key(jwk, alg: str):
    if not isinstance(jwk, dict):
        raise refusal("jwk", "the DPoP proof has no jwk header")
    if PRIVATE_MEMBERS & set(jwk):
        raise refusal("jwk", "the DPoP proof's jwk holds a private key")
    if jwk.get("kty") != KEY_TYPES[alg]:
        raise refusal("jwk", "the DPoP proof's jwk does not fit its algorithm")
    try:
        return JWKRegistry.import_key(jwk)
    except (JoseError, ValueError, TypeError, KeyError):
        raise refusal("jwk", "the DPoP proof's jwk is not a usable public key") from None


def refusal(reason: str, message: str) -> InvalidDpopProof:
    """The refusal saying `message`, counted in /metrics under `reason` (a fixed set of check names)."""
    count_dpop_refusal(reason)
    return InvalidDpopProof(message)
