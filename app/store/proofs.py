"""DPoP proofs seen: each proof's `jti`, by its hash, under the key that signed it (its RFC 7638
thumbprint), for as long as the proof could be accepted; and how many proofs each key sent, so one key
cannot fill Redis."""

import hashlib

from limits import parse

from ..errors import TooManyDpopProofs

ID_BYTES = 16  # of a jti's SHA-256: ids are compared within one key's set only, so 128 bits are plenty

# KEYS[1]: the key's proof ids, a sorted set scored by when each stops mattering; KEYS[2]: its proofs in
# this window. ARGV: now, until, the id, the bound, the window (s). Both keys share the thumbprint's hash
# tag, so a Redis Cluster serves them from one slot. Returns {1, 0} for a first use, {0, 0} for a replay
# (which spends nothing), {-1, seconds left} beyond the bound (nothing stored).
_REMEMBER = """
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
if redis.call('ZSCORE', KEYS[1], ARGV[3]) then
  return {0, 0}
end
local count = redis.call('INCR', KEYS[2])
local left = redis.call('TTL', KEYS[2])
if left < 0 then
  redis.call('EXPIRE', KEYS[2], ARGV[5])
  left = tonumber(ARGV[5])
end
if count > tonumber(ARGV[4]) then
  return {-1, left}
end
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[3])
local ttl = math.ceil(tonumber(ARGV[2]) - tonumber(ARGV[1]))
if redis.call('TTL', KEYS[1]) < ttl then
  redis.call('EXPIRE', KEYS[1], ttl)
end
return {1, 0}
"""


class SeenProofs:
    """Remembers DPoP proof ids per key across every instance sharing the Redis (one script each),
    at most `per_key` (such as '600 per minute') new proofs per key."""

    def __init__(self, redis, keys, *, per_key: str = "600 per minute"):
        self._keys = keys
        self._remember = redis.register_script(_REMEMBER)
        limit = parse(per_key)
        self._bound, self._window = limit.amount, limit.get_expiry()

    def first_use(self, jkt: str, jti: str, *, now: float, until: float) -> bool:
        """Remember proof id `jti` of key `jkt` until `until` (epoch seconds); False when it was already
        seen; TooManyDpopProofs (nothing stored) when the key has sent its bound of proofs this window."""
        digest = hashlib.sha256(jti.encode()).digest()[:ID_BYTES]
        keys = [self._keys.dpop_proofs(jkt), self._keys.dpop_proof_count(jkt)]
        outcome, left = self._remember(keys=keys, args=[now, until, digest, self._bound, self._window])
        if outcome < 0:
            raise TooManyDpopProofs(max(1, int(left)))
        return outcome == 1
