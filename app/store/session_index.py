"""Which browser sessions a user (`sub`) and a provider session (`sid`) have: for back-channel
logout and for "your sessions". One hash per user and one per provider session, each field a
session; a field is dropped once its session's absolute end has passed, and the key itself
expires with the last of its sessions."""

import json
import math
import time

from .replicas import ConfirmedWrites

# An entry's end beyond this (about the year 5138) is junk: Redis could not even expire the key then.
LATEST_END = 1e11
LONGEST_USER_AGENT = 256

# Add one field, drop fields whose session has ended or that are not entries at all (so junk written
# into the index can never fail a sign-in), and keep the key until the last session ends.
_ADD = """
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
local now, latest = tonumber(ARGV[3]), 0
local fields = redis.call('HGETALL', KEYS[1])
for i = 1, #fields, 2 do
  local parsed, entry = pcall(cjson.decode, fields[i + 1])
  local ends = parsed and type(entry) == 'table' and type(entry['ref']) == 'string' and entry['ends']
  if type(ends) ~= 'number' or ends ~= ends or ends <= now or ends >= tonumber(ARGV[4]) then
    redis.call('HDEL', KEYS[1], fields[i])
  elseif ends > latest then
    latest = ends
  end
end
if latest > 0 then redis.call('EXPIREAT', KEYS[1], math.ceil(latest)) end
return 1
"""


def _entry(field: bytes, raw: bytes) -> dict | None:
    """A session's entry in its user's index as written by `add`, or None for anything else."""
    try:
        field.decode()
        entry = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    if not isinstance(entry, dict) or not isinstance(entry.get("ref"), str):
        return None
    times = [entry.get(name) for name in ("started", "ends")]
    if not all(isinstance(value, int | float) and not isinstance(value, bool) for value in times):
        return None
    started, ends = times
    if not (math.isfinite(started) and math.isfinite(ends) and 0 <= started <= ends < LATEST_END):
        return None
    user_agent = entry.get("user_agent")
    return entry if isinstance(user_agent, str) and len(user_agent) <= LONGEST_USER_AGENT else None


class SessionIndex:
    """Reads and writes the per-user and per-provider-session indexes of browser sessions."""

    def __init__(self, redis, keys, confirmed: ConfirmedWrites | None = None):
        self._redis = redis
        self._keys = keys
        # A new session's entries are confirmed on a replica: a back-channel logout must find the session.
        self._confirmed = confirmed or ConfirmedWrites(redis, timeout_ms=0)
        self._add = self._confirmed.register_script(_ADD)

    def add(self, *, sub: str, session_id: str, entry: dict, provider_sid: str | None) -> None:
        """Index a new session under its user and, when the provider named one, its provider session.
        `entry` must hold `ref` (the session's Redis name) and `ends` (its absolute end, Unix time)."""
        now = time.time()
        self._add_entry(self._keys.sessions_of_subject(sub), session_id, json.dumps(entry), now)
        if provider_sid:
            mark = json.dumps({"ref": entry["ref"], "ends": entry["ends"]})
            self._add_entry(self._keys.sessions_of_provider_session(provider_sid), entry["ref"], mark, now)

    def _add_entry(self, key: str, field: str, value: str, now: float) -> None:
        self._confirmed.execute("session", key, [("EVALSHA", self._add.sha, 1, key, field, value, now, LATEST_END)])

    def of_subject(self, sub: str) -> dict[str, dict]:
        """Every session of `sub` whose absolute end has not passed, by session id; a field that is not
        an entry (junk written into the index) is dropped from it."""
        key = self._keys.sessions_of_subject(sub)
        entries = {field: _entry(field, value) for field, value in self._redis.hgetall(key).items()}
        junk = [field for field, entry in entries.items() if entry is None]
        if junk:
            self._redis.hdel(key, *junk)
        now = time.time()
        return {field.decode(): entry for field, entry in entries.items() if entry and entry["ends"] > now}

    def refs_of_provider_session(self, provider_sid: str) -> list[str]:
        """The Redis names of the sessions begun in provider session `provider_sid` (they are hex: a
        field that is not ASCII is junk, and left out)."""
        fields = self._redis.hkeys(self._keys.sessions_of_provider_session(provider_sid))
        return [field.decode() for field in fields if field.isascii()]

    def forget(self, *, sub: str, session_ids: list[str]) -> None:
        """Drop sessions from their user's index (their provider-session entries simply expire)."""
        if session_ids:
            self._redis.hdel(self._keys.sessions_of_subject(sub), *session_ids)

    def first_use_of_logout_token(self, jti: str, ttl_seconds: int) -> bool:
        """Remember a logout token's `jti` for `ttl_seconds`; False when it was already seen."""
        return bool(self._redis.set(self._keys.logout_token(jti), "1", nx=True, ex=ttl_seconds))

    def forget_logout_token(self, jti: str) -> None:
        """Forget a logout token's `jti`, so the token is accepted again."""
        self._redis.delete(self._keys.logout_token(jti))

    def forget_provider_session(self, provider_sid: str) -> None:
        self._redis.delete(self._keys.sessions_of_provider_session(provider_sid))
