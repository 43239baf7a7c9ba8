"""DPoP proofs (RFC 9449) for dev tools and tests: one key, signed proofs, its RFC 7638 thumbprint.

    key = DpopKey.generate("ES256")  # or PS256 / RS256; DpopKey.from_file(path) for a saved one
    tokens = oidc_driver.user_tokens(issuer, client_id, redirect_uri, "alice", "demo", dpop_key=key)
    token = tokens["access_token"]  # token_type "DPoP"; its `cnf.jkt` is key.thumbprint()
    url = "http://127.0.0.1:8000/api/v1/me/profile"
    requests.get(url, headers={"Authorization": f"DPoP {token}", "DPoP": key.proof("GET", url, access_token=token)})

A proof is good for one request: make a new one for each (the server refuses a used `jti`).
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import time
from base64 import urlsafe_b64encode
from urllib.parse import urlsplit

from joserfc import jws
from joserfc.jwk import ECKey, RSAKey, import_key

ALGORITHMS = ("ES256", "PS256", "RS256")


class DpopKey:
    """A private key (P-256 for ES256, RSA 2048 for PS256 / RS256) and the algorithm it signs with."""

    def __init__(self, key: ECKey | RSAKey, alg: str) -> None:
        if alg not in ALGORITHMS:
            raise ValueError(f"unsupported DPoP algorithm {alg!r}; one of {', '.join(ALGORITHMS)}")
        kind = ("EC", "P-256") if alg == "ES256" else ("RSA", None)
        if (key.key_type, key.get("crv")) != kind or not key.is_private:
            raise ValueError(f"{alg} needs a private {' '.join(filter(None, kind))} key")
        self.key, self.alg = key, alg

    @classmethod
    def generate(cls, alg: str) -> DpopKey:
        """A new key for `alg` (ES256, PS256 or RS256)."""
        if alg == "ES256":
            return cls(ECKey.generate_key("P-256", private=True), alg)
        return cls(RSAKey.generate_key(2048, private=True), alg)

    def to_file(self, path: str | os.PathLike) -> None:
        """Writes {"alg", "jwk"} (the private JWK) as JSON, readable by the owner only (0600)."""
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.fchmod(fd, 0o600)  # also when the file existed with a wider mode
        with os.fdopen(fd, "w") as file:
            json.dump({"alg": self.alg, "jwk": self.key.as_dict(private=True)}, file)

    @classmethod
    def from_file(cls, path: str | os.PathLike) -> DpopKey:
        """Reads a key written by to_file."""
        with open(path) as file:
            data = json.load(file)
        return cls(import_key(data["jwk"]), data["alg"])

    def thumbprint(self) -> str:
        """The RFC 7638 SHA-256 thumbprint of the public key, base64url: the `cnf.jkt` of bound tokens."""
        return self.key.thumbprint()

    def proof(self, method: str, url: str, *, access_token: str | None = None, nonce: str | None = None) -> str:
        """A compact `dpop+jwt` for one request: `htu` is `url` without query and fragment, `ath` binds
        `access_token` (for resource requests), `nonce` echoes a server's DPoP-Nonce."""
        header = {"typ": "dpop+jwt", "alg": self.alg, "jwk": self.key.as_dict(private=False)}
        claims = {
            "jti": secrets.token_urlsafe(24),
            "htm": method.upper(),
            "htu": urlsplit(url)._replace(query="", fragment="").geturl(),
            "iat": int(time.time()),
        }
        if access_token is not None:
            digest = hashlib.sha256(access_token.encode("ascii")).digest()
            claims["ath"] = urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")
        if nonce is not None:
            claims["nonce"] = nonce
        payload = json.dumps(claims, separators=(",", ":"))
        return jws.serialize_compact(header, payload, self.key, algorithms=[self.alg])
