"""Pending browser sign-ins: one key per sign-in, short-lived, taken exactly once; at most MAX_PENDING
per browser (the oldest is dropped first), so a loop of sign-ins cannot fill Redis, and at most
`max_total` in all, so a flood from many addresses cannot either."""

import base64
import hashlib
import json
import math
import time

MAX_PENDING = 5
# A `state` starts with this many characters naming its browser (a hash tag: one cluster slot per browser).
BROWSER_TAG_LENGTH = 16

# Admit a sign-in to the bound on all of them: one sorted set of sign-in ids scored by expiry (ms),
# trimmed of the expired. It has a key of its own (a slot of its own in a Redis Cluster), so
# admitting and saving are two steps: admitted first, released again when the save fails.
# Returns 0 when admitted, else the earliest expiry (when a place frees up at the latest).
_ADMIT = """
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[3])
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[4]) then
  return tonumber(redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')[2])
end
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1])
if redis.call('PTTL', KEYS[1]) < tonumber(ARGV[2]) - tonumber(ARGV[3]) then
  redis.call('PEXPIREAT', KEYS[1], ARGV[2])
end
return 0
"""

# Save a sign-in and drop the browser's oldest beyond the cap, in one step; return the dropped ids.
# Every key shares the browser's hash tag, so one cluster slot holds them all.
_SAVE = """
redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[2])
redis.call('LPUSH', KEYS[2], ARGV[4])
redis.call('EXPIRE', KEYS[2], ARGV[2])
local dropped = {}
while redis.call('LLEN', KEYS[2]) > tonumber(ARGV[3]) do
  local id = redis.call('RPOP', KEYS[2])
  redis.call('DEL', ARGV[5] .. id)
  dropped[#dropped + 1] = id
end
return dropped
"""

_TAKE = """
local record = redis.call('GETDEL', KEYS[1])
redis.call('LREM', KEYS[2], 0, ARGV[1])
return record
"""


class TooManyPendingLogins(Exception):
    """The bound on pending sign-ins in total is reached; a place frees up within `retry_after` seconds."""

    def __init__(self, retry_after: int):
        super().__init__(f"too many pending sign-ins; retry after {retry_after} s")
        self.retry_after = retry_after


def login_id(state: str) -> str:
    """The short name a pending sign-in is kept under: 128 bits of the digest of its `state`."""
    return base64.urlsafe_b64encode(hashlib.sha256(state.encode()).digest()[:16]).rstrip(b"=").decode()


class PendingLogins:
    """Stores what a sign-in needs between the redirect and the callback, within a bound on them all."""

    def __init__(self, redis, keys, *, max_total: int):
        self._redis = redis
        self._keys = keys
        self._max_total = max_total
        self._admit = redis.register_script(_ADMIT)
        self._save = redis.register_script(_SAVE)
        self._take = redis.register_script(_TAKE)

    def save(self, state: str, record, ttl_seconds: int) -> int:
        """Keep `record` (JSON-able) under `state` (which starts with its browser's tag) for at most
        `ttl_seconds`; return how many older sign-ins of that browser were dropped. Beyond the bound
        TooManyPendingLogins, and nothing is written."""
        name, now_ms = login_id(state), int(time.time() * 1000)
        earliest = self._admit(
            keys=[self._keys.pending_logins()], args=[name, now_ms + ttl_seconds * 1000, now_ms, self._max_total]
        )
        if earliest:
            raise TooManyPendingLogins(max(1, math.ceil((int(earliest) - now_ms) / 1000)))
        tag = self._browser_tag(state)
        try:
            dropped = self._save(
                keys=[self._keys.pending_login(tag, name), self._keys.pending_logins_of(tag)],
                args=[
                    json.dumps(record, separators=(",", ":")),
                    ttl_seconds,
                    MAX_PENDING,
                    name,
                    self._keys.pending_login(tag, ""),
                ],
            )
        except BaseException:
            self._release([name])
            raise
        self._release(dropped)
        return len(dropped)

    def take(self, state: str):
        """The record saved under `state`, removed in the same step; None when absent or used."""
        name, tag = login_id(state), self._browser_tag(state)
        raw = self._take(keys=[self._keys.pending_login(tag, name), self._keys.pending_logins_of(tag)], args=[name])
        self._release([name])
        try:
            return json.loads(raw) if raw else None
        except ValueError:
            return None

    def key(self, state: str) -> str:
        """The Redis key a pending sign-in is kept under."""
        return self._keys.pending_login(self._browser_tag(state), login_id(state))

    def count(self) -> int:
        """How many sign-ins count against the bound now (the expired ones are trimmed at the next start)."""
        return self._redis.zcount(self._keys.pending_logins(), int(time.time() * 1000), "+inf")

    def _release(self, names) -> None:
        # A release that fails leaves its id counted until its expiry: the bound errs on the safe side.
        if names:
            self._redis.zrem(self._keys.pending_logins(), *names)

    @staticmethod
    def _browser_tag(state: str) -> str:
        return state[:BROWSER_TAG_LENGTH]
