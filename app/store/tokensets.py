"""The tokens of one browser session, in a key of their own, changed only by compare-and-set."""

import json
import time

from .replicas import ConfirmedWrites
from .rotations import PendingRotations, Rotation, unavailable

# Replace the record only if it still has the version the caller read; keep its TTL.
_REPLACE = """
local current = redis.call('GET', KEYS[1])
if not current then return 0 end
if cjson.decode(current)['v'] ~= tonumber(ARGV[1]) then return 0 end
redis.call('SET', KEYS[1], ARGV[2], 'KEEPTTL')
return 1
"""

# Remove the record only if it still has the version the caller read.
_DELETE_IF = """
local current = redis.call('GET', KEYS[1])
if not current or cjson.decode(current)['v'] ~= tonumber(ARGV[1]) then return 0 end
return redis.call('DEL', KEYS[1])
"""

# Release a lock only if we still hold it.
_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""


def _parsed(raw: bytes | None) -> dict | None:
    """A stored token set as a dict: None when there is none, {} (which opens to nothing, so its
    session ends) when it is not a JSON object."""
    if not raw:
        return None
    try:
        stored = json.loads(raw)
    except ValueError:
        return {}
    return stored if isinstance(stored, dict) else {}


class TokenSets:
    """Reads and writes session token sets and their refresh locks."""

    def __init__(self, redis, keys, confirmed: ConfirmedWrites | None = None):
        self._redis = redis
        self._keys = keys
        # A new session and each refresh's tokens are confirmed on a replica: a failover losing them signs
        # the user out (or, where reusing a rotated refresh token counts as theft, revokes the whole grant).
        self._confirmed = confirmed or ConfirmedWrites(redis, timeout_ms=0)
        self._replace = self._confirmed.register_script(_REPLACE)
        self._release = redis.register_script(_RELEASE)
        self._delete_if = redis.register_script(_DELETE_IF)
        self._held: dict[tuple[str, str], float] = {}  # (ref, owner) -> when this process's refresh lock expires
        self._rotations = PendingRotations(self._replace_confirmed, self._release_lock)

    def create(self, ref: str, record: dict, ttl_ms: int, *, end: dict, end_ttl_ms: int) -> None:
        """Store a new token set (version 1) for the session `ref`, confirmed on a replica, and `end` (who and
        until when, no token) for `end_ttl_ms`: what take_end tells once the token set expired."""
        key = self._keys.token_set(ref)
        also = [
            *self._active_marks(ref, ttl_ms),
            ("SET", self._keys.session_end(ref), json.dumps(end), "PX", end_ttl_ms),
        ]
        self._confirmed.execute("session", key, [("SET", key, json.dumps({**record, "v": 1}), "PX", ttl_ms)], also)

    def load(self, ref: str) -> tuple[dict | None, int]:
        """The session's token set and its time to live in ms, in one round trip."""
        pipe = self._redis.pipeline(transaction=False)
        pipe.get(self._keys.token_set(ref))
        pipe.pttl(self._keys.token_set(ref))
        raw, ttl_ms = pipe.execute()
        return _parsed(raw), ttl_ms

    def load_with_profile(self, ref: str, username: str) -> tuple[dict | None, int, dict]:
        """load(), plus the raw profile hash of `username`, in the same round trip."""
        pipe = self._redis.pipeline(transaction=False)
        pipe.get(self._keys.token_set(ref))
        pipe.pttl(self._keys.token_set(ref))
        pipe.hgetall(self._keys.user(username))
        raw, ttl_ms, profile = pipe.execute()
        return _parsed(raw), ttl_ms, profile

    def replace(self, ref: str, expected_version: int, record: dict, *, lock_owner: str | None = None) -> bool:
        """Store `record` as the next version unless another writer got there first; confirmed on a replica.
        A refresh holding the session's lock as `lock_owner` hands a record Redis cannot take now (a failover)
        to a retry in the background, which keeps the lock until it is stored, and still raises."""
        try:
            return self._replace_confirmed(ref, expected_version, record)
        except Exception as error:
            until = self._held.get((ref, lock_owner))
            if until is not None and unavailable(error):
                self._rotations.keep(Rotation(ref, expected_version, record, lock_owner, until))
            raise

    def _replace_confirmed(self, ref: str, expected_version: int, record: dict) -> bool:
        record = {**record, "v": expected_version + 1}
        key = self._keys.token_set(ref)
        command = ("EVALSHA", self._replace.sha, 1, key, expected_version, json.dumps(record))
        [replaced], _ = self._confirmed.execute("refresh", key, [command])
        return bool(replaced)

    def end_if_version(self, ref: str, version: int) -> bool:
        """End the session unless its tokens moved past `version` (a newer refresh won)."""
        if not self._delete_if(keys=[self._keys.token_set(ref)], args=[version]):
            return False
        self.delete(ref)
        return True

    def extend(self, ref: str, ttl_ms: int) -> None:
        """Push back the idle expiry of the session and its tokens."""
        pipe = self._redis.pipeline(transaction=False)
        pipe.pexpire(self._keys.token_set(ref), ttl_ms)
        pipe.pexpire(self._keys.session(ref), ttl_ms)
        self._mark_active(pipe, ref, ttl_ms, only_known=True)
        pipe.execute()

    def delete(self, ref: str) -> int:
        """Remove everything the session keeps in Redis; 1 if it had a token set, else 0."""
        pipe = self._redis.pipeline(transaction=False)
        for key in (self._keys.token_set(ref), self._keys.session(ref), self._keys.refresh_lock(ref)):
            pipe.delete(key)
        pipe.delete(self._keys.session_end(ref))
        pipe.zrem(self._keys.active_sessions(), ref)
        return pipe.execute()[0]

    def take_end(self, ref: str) -> dict | None:
        """What create() noted about the session `ref`, once: None when it was deleted (the session was
        ended, not left to expire) or has been taken already."""
        return _parsed(self._redis.getdel(self._keys.session_end(ref))) or None

    def exists(self, ref: str) -> bool:
        """Whether the session `ref` has a token set."""
        return bool(self._redis.exists(self._keys.token_set(ref)))

    def ttls(self, refs: list[str]) -> list[int]:
        """The time to live in ms of each session's token set (negative when it is gone)."""
        pipe = self._redis.pipeline(transaction=False)
        for ref in refs:
            pipe.pttl(self._keys.token_set(ref))
        return pipe.execute() if refs else []

    def move(self, old: str, new: str) -> dict | None:
        """Rename a session's keys from `old` to `new` with their expiries (after a SECRET_KEY
        rotation); the token set it moved, or None when `old` had none. Not atomic: a rotation
        happens once, and a concurrent mover writes only where the first has not, so it cannot
        bring back what the first mover's request has since changed."""
        pipe = self._redis.pipeline(transaction=False)
        for key in (self._keys.token_set(old), self._keys.session(old), self._keys.session_end(old)):
            pipe.get(key)
            pipe.pttl(key)
        raw_tokens, tokens_ttl, raw_session, session_ttl, raw_end, end_ttl = pipe.execute()
        if not raw_tokens or tokens_ttl <= 0:
            return None
        pipe = self._redis.pipeline(transaction=False)
        pipe.set(self._keys.token_set(new), raw_tokens, px=tokens_ttl, nx=True)
        for key, raw, ttl in (
            (self._keys.session(new), raw_session, session_ttl),
            (self._keys.session_end(new), raw_end, end_ttl),
        ):
            if raw and ttl > 0:
                pipe.set(key, raw, px=ttl, nx=True)
        self._mark_active(pipe, new, tokens_ttl)
        pipe.execute()
        self.delete(old)
        return _parsed(raw_tokens) or None

    def count_active(self) -> int:
        """How many sessions are alive now: one sorted set of session -> expiry, its expired
        members dropped first, so counting never scans the keyspace."""
        pipe = self._redis.pipeline(transaction=False)
        pipe.zremrangebyscore(self._keys.active_sessions(), "-inf", int(time.time() * 1000))
        pipe.zcard(self._keys.active_sessions())
        return pipe.execute()[1]

    def _mark_active(self, pipe, ref: str, ttl_ms: int, *, only_known: bool = False) -> None:
        for command in self._active_marks(ref, ttl_ms, only_known=only_known):
            pipe.execute_command(*command)

    def _active_marks(self, ref: str, ttl_ms: int, *, only_known: bool = False) -> list[tuple]:
        # Score = the session's expiry in ms; extending an ended session must not bring it back.
        # Ended members go with each write, so the set stays bounded whether or not /metrics is read.
        now_ms = int(time.time() * 1000)
        active = self._keys.active_sessions()
        return [
            ("ZREMRANGEBYSCORE", active, "-inf", now_ms),
            ("ZADD", active, *(["XX"] if only_known else []), now_ms + ttl_ms, ref),
        ]

    def lock(self, ref: str, owner: str, ttl_ms: int) -> bool:
        """Take the session's refresh lock for `ttl_ms`, confirmed on a replica (a failover that lost it would
        let a second refresh spend the refresh token the first is replacing); False when someone holds it."""
        key = self._keys.refresh_lock(ref)
        [taken], _ = self._confirmed.execute("refresh", key, [("SET", key, owner, "NX", "PX", ttl_ms)])
        taken = bool(taken)
        if taken:
            self._held[ref, owner] = time.monotonic() + ttl_ms / 1000
        return taken

    def refreshing(self, ref: str) -> bool:
        """Whether someone holds the session's refresh lock now (a refresh is in flight)."""
        return bool(self._redis.exists(self._keys.refresh_lock(ref)))

    def unlock(self, ref: str, owner: str) -> None:
        """Release the refresh lock if `owner` still holds it, unless a kept rotation now holds it."""
        if not self._rotations.holds(ref, owner):
            self._release_lock(ref, owner)

    def _release_lock(self, ref: str, owner: str) -> None:
        self._held.pop((ref, owner), None)
        self._release(keys=[self._keys.refresh_lock(ref)], args=[owner])
