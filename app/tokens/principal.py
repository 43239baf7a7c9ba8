"""Who is calling: what a verified access token says about its subject, client and scopes."""

from dataclasses import dataclass


@dataclass(frozen=True)
class Principal:
    subject: str
    scopes: frozenset[str]
    is_user: bool
    preferred_username: str | None
    name: str | None
    expires_at: float

    def has_scope(self, scope: str) -> bool:
        return scope in self.scopes
