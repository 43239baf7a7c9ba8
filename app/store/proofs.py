"""DPoP proofs seen: each proof's `jti`, by its hash, for as long as the proof could be accepted."""

import hashlib


class SeenProofs:
    """Remembers DPoP proof ids across every instance sharing the Redis (one SET NX EX each)."""

    def __init__(self, redis, keys):
        self._redis = redis
        self._keys = keys

    def first_use(self, jti: str, ttl_seconds: int) -> bool:
        """Remember proof id `jti` for `ttl_seconds`; False when it was already seen."""
        digest = hashlib.sha256(jti.encode()).hexdigest()
        return bool(self._redis.set(self._keys.dpop_proof(digest), "1", nx=True, ex=ttl_seconds))
