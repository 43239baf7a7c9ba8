"""User profiles (one hash per username) and the links from identity-provider subjects to them."""

import json
import re
import string
import time
from dataclasses import dataclass, field

USERNAME_PATTERN = re.compile(r"[a-z0-9_.-]{1,64}", re.ASCII)
# Only A-Z are lowered: Unicode case folding would make "\u212aate" (Kelvin sign) into "kate".
ASCII_LOWER = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)
# How long a process trusts a subject link it read: an operator's relink reaches every process within it.
LINK_MEMORY_SECONDS = 30
PUBLIC_FIELDS = ("username", "handle", "display_name", "aggregate_scores", "disabled")

# Link a subject to a profile: create it, claim an unowned one only when ARGV[4] is '1', or refuse.
# Returns 1 when linked, else the current owner ('' for a profile nobody owns yet).
_CLAIM = """
local owner = redis.call('HGET', KEYS[1], 'sub')
if owner == ARGV[1] then return 1 end
if owner and owner ~= '' then return owner end
if redis.call('EXISTS', KEYS[1]) == 1 then
  if ARGV[4] ~= '1' then return '' end
  redis.call('HSET', KEYS[1], 'sub', ARGV[1])
  return 1
end
redis.call('HSET', KEYS[1], 'username', ARGV[2], 'handle', ARGV[2], 'display_name', ARGV[3],
  'sub', ARGV[1], 'stats', '{}', 'aggregate_scores', '{}', 'disabled', '0')
return 1
"""


def normalize_username(raw: str) -> str | None:
    """The stored form of `raw`, or None when no user could have that name."""
    if not isinstance(raw, str):
        return None
    username = raw.translate(ASCII_LOWER)
    return username if USERNAME_PATTERN.fullmatch(username) else None


@dataclass
class Profile:
    username: str
    handle: str
    display_name: str
    sub: str | None = None
    stats: dict = field(default_factory=dict)
    aggregate_scores: dict = field(default_factory=dict)
    disabled: bool = False

    def to_hash(self) -> dict[str, str]:
        fields = {
            "username": self.username,
            "handle": self.handle,
            "display_name": self.display_name,
            "stats": json.dumps(self.stats),
            "aggregate_scores": json.dumps(self.aggregate_scores),
            "disabled": "1" if self.disabled else "0",
        }
        if self.sub:
            fields["sub"] = self.sub
        return fields

    @classmethod
    def from_hash(cls, raw: dict[bytes, bytes]) -> "Profile":
        fields = {key.decode(): value.decode() for key, value in raw.items()}
        return cls(
            username=fields["username"],
            handle=fields.get("handle") or fields["username"],
            display_name=fields.get("display_name") or fields["username"],
            sub=fields.get("sub") or None,
            stats=json.loads(fields.get("stats") or "{}"),
            aggregate_scores=json.loads(fields.get("aggregate_scores") or "{}"),
            disabled=fields.get("disabled") == "1",
        )


class SubjectClash(Exception):
    """The profile a subject would take belongs to another subject, or to nobody yet while linking
    unclaimed profiles is off: the username is taken."""

    def __init__(self, username: str, subject: str, owner: str | None):
        super().__init__(username)
        self.username, self.subject, self.owner = username, subject, owner
        self.message = (
            "this account's username belongs to another account"
            if owner
            else f"the username {username} is taken by a profile not yet linked to an account; an operator must link it"
        )

    def log_line(self) -> str:
        """Both subjects, for the operator who has to sort it out."""
        owner = self.owner or "none (unclaimed profile; LINK_UNCLAIMED_PROFILES is off)"
        return f"username {self.username} is taken: subject {self.subject}, owner {owner}"


class UnusableUsername(Exception):
    """The username claim (an email, a UPN) is not a valid username, so no profile can be made from it."""

    def __init__(self):
        super().__init__(
            "this account's username is not a valid username here; an operator must import its profile "
            "with its subject, or set TOKEN_USERNAME_CLAIM"
        )


class NoProfile(Exception):
    """A subject has no profile and nothing to create one from."""


class Profiles:
    """Reads and writes profiles and subject links."""

    def __init__(self, redis, keys, link_cache_size: int = 100_000, *, link_unclaimed: bool = False):
        self._redis = redis
        self._link_unclaimed = link_unclaimed
        self._keys = keys
        self._claim = redis.register_script(_CLAIM)
        # A link changes only by an operator's relink, so a process may remember it for a while.
        self._links: dict[str, tuple[str, float]] = {}
        self._link_cache_size = link_cache_size

    def get(self, username: str) -> Profile | None:
        """The profile stored under `username` (already normalized), or None."""
        raw = self._redis.hgetall(self._keys.user(username))
        return Profile.from_hash(raw) if raw else None

    def get_public(self, username: str) -> Profile | None:
        """The profile under `username` without its private stats (they can be large), or None."""
        values = self._redis.hmget(self._keys.user(username), PUBLIC_FIELDS)
        if values[0] is None:
            return None
        return Profile.from_hash(
            {name.encode(): value for name, value in zip(PUBLIC_FIELDS, values, strict=True) if value}
        )

    def put(self, profile: Profile, *, replaced_sub: str | None = None) -> None:
        """Write the fields of `profile`; a stored subject link is kept when `profile` names none.
        `replaced_sub` is the subject an operator's relink takes the profile away from."""
        self._redis.hset(self._keys.user(profile.username), mapping=profile.to_hash())
        if replaced_sub:
            self._redis.delete(self._keys.subject(replaced_sub))
            self._links.pop(replaced_sub, None)
        if profile.sub:
            self._redis.set(self._keys.subject(profile.sub), profile.username)

    def set_disabled(self, username: str, disabled: bool) -> bool:
        """Disable or enable a stored profile; False when there is none."""
        key = self._keys.user(username)
        if not self._redis.exists(key):
            return False
        self._redis.hset(key, "disabled", "1" if disabled else "0")
        return True

    def linked_username(self, sub: str) -> str | None:
        """The username linked to `sub`, if any; never links anything."""
        username, remembered_until = self._links.get(sub, (None, 0.0))
        if username is None or time.monotonic() >= remembered_until:
            raw = self._redis.get(self._keys.subject(sub))
            if raw is None:
                self._links.pop(sub, None)
                return None
            username = raw.decode()
            self._remember(sub, username)
        return username

    def link_subject(self, sub: str, username_claim: str, display_name: str | None) -> str:
        """Link `sub` to a new profile made from `username_claim` (or, when the operator allows it, to an
        unclaimed profile of that name); SubjectClash when the username is taken."""
        username = normalize_username(username_claim)
        if username is None:
            raise UnusableUsername()
        flag = "1" if self._link_unclaimed else "0"
        result = self._claim(keys=[self._keys.user(username)], args=[sub, username, display_name or username, flag])
        if result != 1:
            raise SubjectClash(username, sub, result.decode() if isinstance(result, bytes) else result)
        self._redis.set(self._keys.subject(sub), username)
        self._remember(sub, username)
        return username

    def find_or_link_username(self, sub: str, username_claim: str | None, name: str | None) -> str:
        """The username linked to `sub`; on first sight of the subject, links it (see link_subject)."""
        username = self.linked_username(sub)
        if username is None:
            if not username_claim:
                raise NoProfile(f"subject {sub} has no profile and no username claim")
            username = self.link_subject(sub, username_claim, name)
        return username

    def find_or_link_profile(self, sub: str, username_claim: str | None, name: str | None) -> Profile:
        """The profile linked to `sub`, linking or creating it on first sight of the subject."""
        username = self.find_or_link_username(sub, username_claim, name)
        profile = self.get(username)
        if profile is None:
            raise NoProfile(f"profile {username} of subject {sub} is gone")
        return profile

    def forget_link(self, sub: str) -> None:
        """Stop remembering the link of `sub` in this process (it was just changed here)."""
        self._links.pop(sub, None)

    def _remember(self, sub: str, username: str) -> None:
        if len(self._links) >= self._link_cache_size:
            self._links.clear()
        self._links[sub] = (username, time.monotonic() + LINK_MEMORY_SECONDS)
