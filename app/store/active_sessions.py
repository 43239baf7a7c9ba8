"""How many browser sessions are alive: one sorted set of session -> expiry (ms), updated with each write of a
session's tokens, so counting never scans the keyspace."""

import time


class ActiveSessions:
    """The live-session set of one app's sessions."""

    def __init__(self, redis, keys):
        self._redis = redis
        self._keys = keys

    def count(self) -> int:
        """How many sessions are alive now, the expired ones dropped first."""
        pipe = self._redis.pipeline(transaction=False)
        pipe.zremrangebyscore(self._keys.active_sessions(), "-inf", int(time.time() * 1000))
        pipe.zcard(self._keys.active_sessions())
        return pipe.execute()[1]

    def mark(self, pipe, ref: str, ttl_ms: int, *, only_known: bool = False) -> None:
        """Add marks() to `pipe`."""
        for command in self.marks(ref, ttl_ms, only_known=only_known):
            pipe.execute_command(*command)

    def marks(self, ref: str, ttl_ms: int, *, only_known: bool = False) -> list[tuple]:
        """The commands that note session `ref` alive for `ttl_ms` (`only_known`: only if already noted)."""
        # Score = the session's expiry in ms; extending an ended session must not bring it back.
        # Ended members go with each write, so the set stays bounded whether or not /metrics is read.
        now_ms = int(time.time() * 1000)
        active = self._keys.active_sessions()
        return [
            ("ZREMRANGEBYSCORE", active, "-inf", now_ms),
            ("ZADD", active, *(["XX"] if only_known else []), now_ms + ttl_ms, ref),
        ]
