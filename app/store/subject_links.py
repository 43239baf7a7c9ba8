"""The links from identity-provider subjects to usernames: one key per subject, which names the subject's
profile. A link is set only while the subject has none (or has this one) and removed only while it
still names the profile that set it, so of a sign-in and an import racing for one subject exactly one
links it, and the other undoes what it wrote and says why."""

import time

# How long a process trusts a subject link it read: an operator's relink reaches every process within it.
LINK_MEMORY_SECONDS = 30

# Point a subject at a profile unless it points at another one; returns 1, or the other profile.
_LINK_IF_FREE = """
local current = redis.call('GET', KEYS[1])
if current and current ~= ARGV[1] then return current end
redis.call('SET', KEYS[1], ARGV[1])
return 1
"""

# Remove a subject's link only if it still points at this profile.
_UNLINK_IF = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""


class SubjectLinks:
    """Reads, sets and removes subject links, remembering those it read for LINK_MEMORY_SECONDS."""

    def __init__(self, redis, keys, cache_size: int = 100_000):
        self._redis = redis
        self._keys = keys
        self._link = redis.register_script(_LINK_IF_FREE)
        self._unlink = redis.register_script(_UNLINK_IF)
        # A link changes only by an operator's relink, so a process may remember it for a while.
        self._remembered: dict[str, tuple[str, float]] = {}
        self._cache_size = cache_size

    def username(self, sub: str) -> str | None:
        """The username linked to `sub`, if any."""
        username, remembered_until = self._remembered.get(sub, (None, 0.0))
        if username is None or time.monotonic() >= remembered_until:
            raw = self._redis.get(self._keys.subject(sub))
            if raw is None:
                self._remembered.pop(sub, None)
                return None
            username = raw.decode()
            self.remember(sub, username)
        return username

    def link(self, sub: str, username: str) -> str | None:
        """Link `sub` to `username` unless it is linked to another profile; None when linked, else that
        other profile's username."""
        other = self._link(keys=[self._keys.subject(sub)], args=[username])
        if other != 1:
            return other.decode()
        self.remember(sub, username)
        return None

    def unlink(self, sub: str, username: str) -> None:
        """Remove the link of `sub` if it still names `username`."""
        self._unlink(keys=[self._keys.subject(sub)], args=[username])
        self.forget(sub)

    def forget(self, sub: str) -> None:
        """Stop remembering the link of `sub` in this process (it was just changed here)."""
        self._remembered.pop(sub, None)

    def remember(self, sub: str, username: str) -> None:
        if len(self._remembered) >= self._cache_size:
            self._remembered.clear()
        self._remembered[sub] = (username, time.monotonic() + LINK_MEMORY_SECONDS)
