"""DPoP server nonces (RFC 9449 section 9), derived from SECRET_KEY and a time bucket: nothing stored."""

import base64
import hashlib
import hmac
import time

NONCE_PERIOD = 300  # seconds one server nonce is current; the previous one is accepted too


class DpopNonces:
    """Stateless server nonces: an HMAC of SECRET_KEY and the time bucket, so every instance that
    shares the key issues and accepts the same ones."""

    def __init__(self, secret: str, period: int = NONCE_PERIOD):
        self._secret = secret.encode()
        self._period = period

    def current(self) -> str:
        return self._of(int(time.time() // self._period))

    def accepts(self, nonce) -> bool:
        bucket = int(time.time() // self._period)
        return isinstance(nonce, str) and any(
            hmac.compare_digest(nonce.encode(), self._of(number).encode()) for number in (bucket, bucket - 1)
        )

    def _of(self, bucket: int) -> str:
        digest = hmac.new(self._secret, f"dpop-nonce:{bucket}".encode(), hashlib.sha256).digest()
        return base64.urlsafe_b64encode(digest[:18]).decode()
