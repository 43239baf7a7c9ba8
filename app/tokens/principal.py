"""Who is calling: the one place where a provider profile turns validated claims into a Principal."""

import math
from dataclasses import dataclass

from ..challenges import InvalidToken
from ..provider.vendors import ProviderProfile


@dataclass(frozen=True)
class Principal:
    subject: str
    scopes: frozenset[str]
    is_user: bool
    username: str | None  # the raw username claim; the profile store decides whether it is usable
    name: str | None
    expires_at: float
    bound_key: str | None = None  # the RFC 7638 thumbprint a DPoP-bound token names in cnf.jkt
    acr: str | None = None  # how the user authenticated (RFC 9068 2.2.1), for step-up
    auth_time: int | None = None  # when the user authenticated, epoch seconds

    def has_scope(self, scope: str) -> bool:
        return scope in self.scopes


@dataclass(frozen=True)
class SignedInIdentity:
    subject: str
    username: str | None
    name: str | None


def build_principal(claims: dict, profile: ProviderProfile, login_clients, *, expires_at: float) -> Principal:
    """The principal of an access token's validated `claims`; InvalidToken when no subject can be named."""
    client = next((claims[name] for name in profile.client_claims if _text(claims.get(name))), None)
    is_app = any(_marks(claims, marker, client) for marker in profile.app_markers)
    subject = claims.get(profile.subject_claim)
    if is_app and not _text(subject):
        subject = claims.get("sub")  # app tokens lack the user-id claim some profiles read (Okta `uid`)
    if not _text(subject):
        raise InvalidToken("the access token has no subject")
    return Principal(
        subject=subject,
        scopes=scopes_of(claims.get(profile.scope_claim)),
        is_user=client in login_clients and not is_app,
        username=_text(claims.get(profile.username_claim)) if profile.username_claim else None,
        name=_text(claims.get("name")),
        expires_at=expires_at,
        bound_key=bound_key(claims),
        acr=_text(claims.get("acr")),
        auth_time=epoch_seconds(claims.get("auth_time")),
    )


def bound_key(claims: dict) -> str | None:
    """The key thumbprint a sender-constrained token is bound to (`cnf.jkt`, RFC 9449 6), or None;
    InvalidToken for a binding this API cannot check (another `cnf` method, such as mTLS)."""
    if "cnf" not in claims:
        return None
    confirmation = claims["cnf"]
    if not isinstance(confirmation, dict) or not _text(confirmation.get("jkt")):
        raise InvalidToken("the access token is bound to a key in a way this API cannot check")
    return confirmation["jkt"]


def signed_in_identity(id_claims: dict, profile: ProviderProfile) -> SignedInIdentity:
    """The subject, username claim and name an ID token gives for linking a profile."""
    subject = _text(id_claims.get(profile.id_subject_claim))
    username = _text(id_claims.get(profile.id_username_claim)) if profile.id_username_claim else None
    return SignedInIdentity(subject=subject or "", username=username, name=_text(id_claims.get("name")))


def scopes_of(value) -> frozenset[str]:
    """The scopes of a scope claim: a space-delimited string or a JSON array of strings."""
    if value is None:
        return frozenset()
    if isinstance(value, str):
        return frozenset(value.split())
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return frozenset(value)
    raise InvalidToken("the access token's scope is malformed")


def _marks(claims: dict, marker: tuple, client: str | None) -> bool:
    test, claim, value = marker
    present = claims.get(claim)
    if test == "missing":
        return present is None
    if test == "without":
        return present is not None and claims.get(value) is None
    if not isinstance(present, str):
        return False
    return {
        "is_client": lambda: client is not None and present == client,
        "prefix": lambda: present.startswith(value),
        "suffix": lambda: present.endswith(value),
        "equals": lambda: present == value,
    }[test]()


def epoch_seconds(value) -> int | None:
    """A time claim as whole epoch seconds; None when it is missing or not a finite number."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return int(value)


def _text(value) -> str | None:
    return value if isinstance(value, str) and value else None
