"""Pending browser sign-ins: one key per `state`, short-lived and taken exactly once."""

import json


class PendingLogins:
    """Stores what a sign-in needs between the redirect and the callback."""

    def __init__(self, redis, keys):
        self._redis = redis
        self._keys = keys

    def save(self, state: str, record: dict, ttl_seconds: int) -> None:
        """Keep `record` under `state` for at most `ttl_seconds`."""
        self._redis.set(self._keys.pending_login(state), json.dumps(record), ex=ttl_seconds, nx=True)

    def take(self, state: str) -> dict | None:
        """The record saved under `state`, removed in the same step; None when absent or used."""
        raw = self._redis.getdel(self._keys.pending_login(state))
        return json.loads(raw) if raw else None
