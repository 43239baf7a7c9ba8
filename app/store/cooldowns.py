"""Poke cooldowns: one key per (poker, target) pair, set atomically with a 24-hour TTL."""

import math

COOLDOWN_MS = 24 * 60 * 60 * 1000
UNKNOWN_TARGET = -1

# One round trip decides a poke: the target must exist and be enabled, then SET NX PX starts the
# cooldown, or PTTL tells what is left. Both keys share the target's hash tag (one cluster slot).
_POKE = """
local disabled = redis.call('HGET', KEYS[1], 'disabled')
if not disabled or disabled == '1' then return -2 end
if redis.call('SET', KEYS[2], '1', 'NX', 'PX', ARGV[1]) then return -1 end
return redis.call('PTTL', KEYS[2])
"""


class Cooldowns:
    """Starts cooldowns and tells how long one has left."""

    def __init__(self, redis, keys):
        self._keys = keys
        self._poke = redis.register_script(_POKE)

    def try_poke(self, poker: str, target: str) -> int:
        """Start the pair's cooldown: 0 on success, UNKNOWN_TARGET when the target does not exist or
        is disabled, else the whole seconds left (at least 1)."""
        keys = [self._keys.user(target), self._keys.cooldown(poker, target)]
        left_ms = self._poke(keys=keys, args=[COOLDOWN_MS])
        if left_ms == -2:
            return UNKNOWN_TARGET
        if left_ms == -1:
            return 0
        # PTTL is -1 only for a key that lost its TTL; treat it as a full cooldown, never as free.
        if left_ms < 0:
            left_ms = COOLDOWN_MS
        return max(1, math.ceil(left_ms / 1000))
