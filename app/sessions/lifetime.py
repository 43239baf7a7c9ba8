"""How long a browser session lasts: SESSION_IDLE_TIMEOUT after its last use, SESSION_MAX_AGE at most
(never beyond its refresh token: app.sessions.records.with_response); each use pushes its idle expiry
back, and a session found gone or past its end is audited as ended."""

import time

from ..challenges import SessionEnded
from ..store.tokensets import TokenSets
from .records import SessionRecords

IDLE_TOUCH_SLACK_MS = 60_000


class Lifetime:
    """The idle timeout and the absolute maximum every session lives by."""

    def __init__(self, token_sets: TokenSets, records: SessionRecords, *, idle_timeout: float, max_age: float):
        self._token_sets = token_sets
        self._records = records
        self._idle_timeout = idle_timeout
        self._max_age = max_age

    def end_of(self, started: float) -> float:
        """When a session started at `started` ends, at the latest."""
        return started + self._max_age

    def ttl_ms(self, record: dict, now: float) -> int:
        """How long from `now` the session of `record` is kept unused: its idle timeout, within its end."""
        return max(1, int(min(self._idle_timeout, record["ends"] - now) * 1000))

    def lasting(self, ref: str, record: dict | None) -> dict:
        """`record` while its session lasts; SessionEnded, its end audited, when it is gone or past its end."""
        if record is None:
            self._records.found_ended(ref)
            raise SessionEnded()
        if time.time() >= record["ends"]:
            self._records.end_at_limit(ref, record)
            raise SessionEnded()
        return record

    def used(self, ref: str, record: dict, ttl_ms: int) -> None:
        """The session `ref`, with `ttl_ms` left, was used: its idle expiry goes back to the full timeout."""
        wanted_ms = self.ttl_ms(record, time.time())
        # Extend at most about once a minute (sooner for short timeouts): a write on every read costs.
        if ttl_ms < wanted_ms - min(IDLE_TOUCH_SLACK_MS, wanted_ms // 4):
            self._token_sets.extend(ref, wanted_ms)
