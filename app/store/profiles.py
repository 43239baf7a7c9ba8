"""User profiles (one hash per username, app.store.profile_record) and the links from identity-provider
subjects to them: read, written, and a subject linked on first sight, safe against racing sign-ins."""

from .profile_record import Profile, normalize_username
from .subject_links import SubjectLinks

PUBLIC_FIELDS = ("username", "handle", "display_name", "aggregate_scores", "disabled")

# Give a profile to a subject: already its own (1), an unowned one claimed when ARGV[2] is '1' (2), or a new
# one made of the fields ARGV[3..] (3). Else the current owner ('' for a profile nobody owns yet).
_CLAIM = """
local owner = redis.call('HGET', KEYS[1], 'sub')
if owner == ARGV[1] then return 1 end
if owner and owner ~= '' then return owner end
if redis.call('EXISTS', KEYS[1]) == 1 then
  if ARGV[2] ~= '1' then return '' end
  redis.call('HSET', KEYS[1], 'sub', ARGV[1])
  return 2
end
redis.call('HSET', KEYS[1], unpack(ARGV, 3))
return 3
"""

# Undo a claim (ARGV[2]: what _CLAIM returned; ARGV[3..]: the fields it made) while the profile still
# names the subject ARGV[1]: a profile it made goes if nobody wrote to it since, else it loses the link.
_UNCLAIM = """
if redis.call('HGET', KEYS[1], 'sub') ~= ARGV[1] then return 0 end
if ARGV[2] == '3' then
  local made, stored = {}, redis.call('HGETALL', KEYS[1])
  for i = 3, #ARGV, 2 do made[ARGV[i]] = ARGV[i + 1] end
  local untouched = #stored == #ARGV - 2
  for i = 1, #stored, 2 do untouched = untouched and made[stored[i]] == stored[i + 1] end
  if untouched then return redis.call('DEL', KEYS[1]) end
end
return redis.call('HDEL', KEYS[1], 'sub')
"""


class SubjectClash(Exception):
    """The profile a subject would take belongs to another subject, or to nobody yet while linking
    unclaimed profiles is off (the username is taken); or the subject was linked to another profile
    while it signed in (`linked_to`)."""

    def __init__(self, username: str, subject: str, owner: str | None, *, linked_to: str | None = None):
        super().__init__(username)
        self.username, self.subject, self.owner, self.linked_to = username, subject, owner, linked_to
        if linked_to:
            self.message = "this account was linked to another profile while it signed in; sign in again"
        elif owner:
            self.message = "this account's username belongs to another account"
        else:
            self.message = (
                f"the username {username} is taken by a profile not yet linked to an account; an operator must link it"
            )

    def log_line(self) -> str:
        """Both subjects, or both profiles, for the operator who has to sort it out."""
        if self.linked_to:
            return (
                f"subject {self.subject} was linked to profile {self.linked_to} while it signed in as "
                f"{self.username}; the sign-in changed nothing"
            )
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
    """Reads and writes profiles and, through `links`, the subject links to them."""

    def __init__(self, redis, keys, link_cache_size: int = 100_000, *, link_unclaimed: bool = False):
        self._redis = redis
        self._link_unclaimed = link_unclaimed
        self._keys = keys
        self._claim = redis.register_script(_CLAIM)
        self._unclaim = redis.register_script(_UNCLAIM)
        self.links = SubjectLinks(redis, keys, link_cache_size)

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

    def put(self, profile: Profile) -> None:
        """Write every field of `profile` and its subject link, unconditionally (fixtures and benches;
        operators go through ProfileImport)."""
        self._redis.hset(self._keys.user(profile.username), mapping=profile.to_hash())
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
        return self.links.username(sub)

    def link_subject(self, sub: str, username_claim: str, display_name: str | None) -> str:
        """Link `sub` to a new profile made from `username_claim` (or, when the operator allows it, to an
        unclaimed profile of that name); SubjectClash, with nothing changed, when the username is taken
        or the subject was linked to another profile meanwhile."""
        username = normalize_username(username_claim)
        if username is None:
            raise UnusableUsername()
        key = self._keys.user(username)
        made = [
            item
            for pair in Profile(username, username, display_name or username, sub).to_hash().items()
            for item in pair
        ]
        claimed = self._claim(keys=[key], args=[sub, "1" if self._link_unclaimed else "0", *made])
        if claimed not in (1, 2, 3):
            raise SubjectClash(username, sub, claimed.decode() or None)
        # The profile is written first, so a link found always names a profile that names the subject back.
        other = self.links.link(sub, username)
        if other is not None:
            if claimed != 1:
                self._unclaim(keys=[key], args=[sub, claimed, *made])
            raise SubjectClash(username, sub, None, linked_to=other)
        owner = self._redis.hget(key, "sub")
        if owner != sub.encode():  # an operator's relink took the profile between the claim and the link
            self.links.unlink(sub, username)
            raise SubjectClash(username, sub, owner.decode() if owner else None)
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
