"""Poke cooldowns: one key per (poker, target) pair, set atomically with a 24-hour TTL."""

import math

COOLDOWN_MS = 24 * 60 * 60 * 1000

# SET NX PX decides; on refusal the same round trip reports the time left.
_CLAIM = """
if redis.call('SET', KEYS[1], '1', 'NX', 'PX', ARGV[1]) then return -1 end
return redis.call('PTTL', KEYS[1])
"""


class Cooldowns:
    """Starts cooldowns and tells how long one has left."""

    def __init__(self, redis, keys):
        self._keys = keys
        self._claim = redis.register_script(_CLAIM)

    def try_start(self, poker: str, target: str) -> int:
        """Start the pair's cooldown; return 0 on success, else the whole seconds left (at least 1)."""
        left_ms = self._claim(keys=[self._keys.cooldown(poker, target)], args=[COOLDOWN_MS])
        if left_ms == -1:
            return 0
        # PTTL is -1 only for a key that lost its TTL; treat it as a full cooldown, never as free.
        if left_ms < 0:
            left_ms = COOLDOWN_MS
        return max(1, math.ceil(left_ms / 1000))
