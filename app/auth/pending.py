"""A pending browser sign-in as the callback finds it, its `state` (base64url, led by a tag of its
browser) and the nonce that follows from its PKCE verifier."""

import base64
import hashlib
import re
import secrets
from typing import NamedTuple

from ..store.logins import BROWSER_TAG_LENGTH

# "<browser tag><random>", base64url without padding (the contract's alphabet): the first
# BROWSER_TAG_LENGTH characters put a browser's pending sign-ins in one Redis Cluster slot.
STATE = re.compile(r"[A-Za-z0-9_-]{59}")


class Pending(NamedTuple):
    verifier: str
    binding: str
    return_to: str
    prompt: str  # "" when none was sent
    max_age: str  # decimal seconds, "" when none was sent


def new_state(binding: str) -> str:
    """A fresh `state` for a sign-in of the browser whose login binding is `binding`."""
    tag = short_digest("browser:" + binding)[:BROWSER_TAG_LENGTH]  # 96 bits of the binding's digest
    return tag + secrets.token_urlsafe(32)


def new_login_binding() -> str:
    """A random value tying pending sign-ins to the browser that started them."""
    return secrets.token_urlsafe(32)


def pending_record(pending: Pending) -> list[str]:
    """What Redis keeps of a pending sign-in."""
    return list(pending)


def pending_sign_in(record) -> Pending | None:
    """A stored pending sign-in, or None when it is not one this version wrote."""
    if isinstance(record, list) and len(record) == len(Pending._fields) and all(isinstance(f, str) for f in record):
        return Pending(*record)
    return None


def nonce_of(verifier: str) -> str:
    """The nonce of a sign-in: one-way from its verifier, which must stay secret until the exchange."""
    return short_digest("nonce:" + verifier)


def short_digest(value: str) -> str:
    """The SHA-256 of `value`, base64url without padding."""
    return base64.urlsafe_b64encode(hashlib.sha256(value.encode()).digest()).rstrip(b"=").decode()
