"""Pending browser sign-ins: one key per `state`, short-lived, taken exactly once, and at most
MAX_PENDING per browser (the oldest is dropped first), so a loop of sign-ins cannot fill Redis."""

import json

MAX_PENDING = 5

# Save a sign-in and drop the browser's oldest beyond the cap, in one step. Every key shares the
# browser's hash tag, so one cluster slot holds them all.
_SAVE = """
redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[2])
redis.call('LPUSH', KEYS[2], KEYS[1])
redis.call('EXPIRE', KEYS[2], ARGV[2])
local dropped = 0
while redis.call('LLEN', KEYS[2]) > tonumber(ARGV[3]) do
  redis.call('DEL', redis.call('RPOP', KEYS[2]))
  dropped = dropped + 1
end
return dropped
"""

_TAKE = """
local record = redis.call('GETDEL', KEYS[1])
redis.call('LREM', KEYS[2], 0, KEYS[1])
return record
"""


class PendingLogins:
    """Stores what a sign-in needs between the redirect and the callback."""

    def __init__(self, redis, keys):
        self._keys = keys
        self._save = redis.register_script(_SAVE)
        self._take = redis.register_script(_TAKE)

    def save(self, state: str, record: dict, ttl_seconds: int) -> int:
        """Keep `record` under `state` (which starts with its browser's tag) for at most
        `ttl_seconds`; return how many older sign-ins of that browser were dropped."""
        return self._save(keys=self._key_pair(state), args=[json.dumps(record), ttl_seconds, MAX_PENDING])

    def take(self, state: str) -> dict | None:
        """The record saved under `state`, removed in the same step; None when absent or used."""
        raw = self._take(keys=self._key_pair(state))
        return json.loads(raw) if raw else None

    def _key_pair(self, state: str) -> list[str]:
        return [self._keys.pending_login(state), self._keys.pending_logins_of(state.partition(".")[0])]
