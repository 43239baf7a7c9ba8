"""The states whose callback reached the provider: all Redis keeps of a browser sign-in. The pending
sign-in itself lives in its browser's sealed cookie (app.auth.pending); a callback claims its state
before the code exchange, so a state leads to at most one exchange and a replayed callback to none.

Only a callback that opened its browser's cookie can claim, and a claim whose exchange failed is given
back, so what a flood of sign-ins leaves here is nothing: a claim is kept only for a code the
provider accepted, until its state expires."""

import base64
import hashlib
import math
import time


def login_id(state: str) -> str:
    """The short name a state is remembered under: 128 bits of its digest (the state stays out of Redis)."""
    return base64.urlsafe_b64encode(hashlib.sha256(state.encode()).digest()[:16]).rstrip(b"=").decode()


class UsedStates:
    """Claims sign-in states, each once, for as long as the state could be used."""

    def __init__(self, redis, keys):
        self._redis = redis
        self._keys = keys

    def claim(self, state: str, expires_at: float) -> bool:
        """Claim `state` until `expires_at` (s since the epoch); False when it is already claimed."""
        ttl = max(1, math.ceil(expires_at - time.time()))
        return bool(self._redis.set(self.key(state), b"1", nx=True, ex=ttl))

    def release(self, state: str) -> None:
        """Give `state` back (its exchange failed: the provider issued nothing for it)."""
        self._redis.delete(self.key(state))

    def key(self, state: str) -> str:
        """The Redis key a claimed state is kept under."""
        return self._keys.used_state(login_id(state))
