"""A profile as Redis holds it, one hash per username (`Profile`), and the usernames a profile may have."""

import json
import re
import string
from dataclasses import dataclass, field

USERNAME_PATTERN = re.compile(r"[a-z0-9_.-]{1,64}", re.ASCII)
# Only A-Z are lowered: Unicode case folding would make "\u212aate" (Kelvin sign) into "kate".
ASCII_LOWER = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)


def normalize_username(raw: str) -> str | None:
    """The stored form of `raw`, or None when no user could have that name."""
    if not isinstance(raw, str):
        return None
    username = raw.translate(ASCII_LOWER)
    return username if USERNAME_PATTERN.fullmatch(username) else None


@dataclass
class Profile:
    """One user's profile; `sub` is the provider subject linked to it, None while none is."""

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
