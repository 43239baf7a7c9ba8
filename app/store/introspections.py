"""Introspection answers and refusals shared by every worker and instance, each under the hash of its
token (never the token itself), so a token costs one provider call per fleet."""


class Introspections:
    """What the provider said about each token, as app.tokens encodes it, for as long as it asks."""

    def __init__(self, redis, keys):
        self._redis = redis
        self._keys = keys

    def get(self, token_digest: str) -> bytes | None:
        """What is kept for the token of `token_digest`, or None."""
        return self._redis.get(self._keys.introspection(token_digest))

    def put(self, token_digest: str, value: bytes, *, ttl: float) -> None:
        """Keep `value` for the token of `token_digest` for `ttl` seconds; forget it when `ttl` is not positive."""
        key = self._keys.introspection(token_digest)
        if ttl > 0:
            self._redis.set(key, value, px=max(1, int(ttl * 1000)))
        else:
            self._redis.delete(key)
