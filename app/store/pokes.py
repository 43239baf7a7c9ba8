"""Pokes and their cooldowns: one key per (poker, target) pair, set atomically with a 24-hour TTL."""

import math
from dataclasses import dataclass
from enum import Enum

from .profiles import Profile
from .replicas import ConfirmedWrites

COOLDOWN_MS = 24 * 60 * 60 * 1000

# One round trip decides a poke: the target must exist and be enabled, then SET NX PX starts the
# cooldown, or PTTL tells what is left. Both keys share the target's hash tag (one cluster slot).
_POKE = """
local disabled = redis.call('HGET', KEYS[1], 'disabled')
if not disabled or disabled == '1' then return -2 end
if redis.call('SET', KEYS[2], '1', 'NX', 'PX', ARGV[1]) then return -1 end
local left = redis.call('PTTL', KEYS[2])
if left < 0 then return tonumber(ARGV[1]) end  -- a cooldown that lost its TTL still holds
return left
"""


class PokeResult(Enum):
    POKED = "poked"
    UNKNOWN_TARGET = "unknown target"
    ON_COOLDOWN = "on cooldown"


@dataclass(frozen=True)
class PokeOutcome:
    """How a poke was decided; `seconds_left` (at least 1) only when it is on cooldown."""

    result: PokeResult
    seconds_left: int = 0


class Pokes:
    """Decides pokes: starts cooldowns and tells how long one has left."""

    def __init__(self, redis, keys, confirmed: ConfirmedWrites | None = None):
        self._redis = redis
        self._keys = keys
        # A cooldown a failover lost would let the same person be poked twice in a day: it is confirmed on
        # a replica before the poke is answered.
        self._confirmed = confirmed or ConfirmedWrites(redis, timeout_ms=0)
        self._poke = self._confirmed.register_script(_POKE)

    def try_poke(self, poker: str, target: str) -> tuple[Profile | None, PokeOutcome]:
        """In one round trip (two on a cluster with replicas), the poker's profile and the poke decided (an
        unknown target is one that does not exist or is disabled), a started cooldown confirmed on a replica.
        A caller that refuses a POKED poker must withdraw() it."""
        keys = [self._keys.user(target), self._keys.cooldown(poker, target)]
        # EVALSHA by hand: a pipeline holding Script objects first asks SCRIPT EXISTS (a round trip),
        # and cluster pipelines refuse their evalsha() method.
        poke = ("EVALSHA", self._poke.sha, len(keys), *keys, COOLDOWN_MS)
        [left_ms], [raw_poker] = self._confirmed.execute("poke", keys[1], [poke], [("HGETALL", self._keys.user(poker))])
        return (Profile.from_hash(raw_poker) if raw_poker else None), _outcome(left_ms)

    def withdraw(self, poker: str, target: str) -> None:
        """Undo a poke try_poke decided for a poker who may not poke after all: its cooldown goes."""
        self._redis.delete(self._keys.cooldown(poker, target))


def _outcome(left_ms: int) -> PokeOutcome:
    # The script's codes: -2 unknown target, -1 cooldown started, else the milliseconds left.
    if left_ms == -2:
        return PokeOutcome(PokeResult.UNKNOWN_TARGET)
    if left_ms == -1:
        return PokeOutcome(PokeResult.POKED)
    return PokeOutcome(PokeResult.ON_COOLDOWN, max(1, math.ceil(left_ms / 1000)))
