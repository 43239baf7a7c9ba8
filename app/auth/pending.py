"""Pending browser sign-ins, kept by the browser itself: one short-lived HttpOnly cookie per sign-in,
sealed (AES-GCM, app.sessions.sealing) under a key derived from SECRET_KEY and the sign-in's `state`,
so only this service reads it and only that state opens it. Nothing of a started sign-in is kept in
Redis, so sign-ins started from anywhere cost the service nothing shared.

A `state` is base64url without padding, 60 characters for 45 bytes: when it expires (7 bytes,
microseconds since the epoch), 26 random bytes, and the first 12 bytes of an HMAC-SHA256 under
SECRET_KEY of those 33, so a callback tells a state this service issued, and whether it expired,
without a look-up."""

import base64
import hashlib
import hmac
import json
import re
import secrets
import time
from typing import NamedTuple

from ..sessions.sealing import Sealer, Unsealable

MAX_PENDING = 5  # sign-ins one browser may have pending; the oldest is dropped first
# Their cookies together (names and values), so that a browser's Cookie header stays far below the
# 8 KB a header line may have in gunicorn and common proxies; a return_to of 512 four-byte characters
# makes one cookie of about 2.9 KB.
MAX_PENDING_BYTES = 4096
MAX_COOKIE = 4096  # what a browser keeps of one cookie: anything longer was never set by this service
STATE = re.compile(r"[A-Za-z0-9_-]{60}")
EXPIRY_BYTES, RANDOM_BYTES, MAC_BYTES = 7, 26, 12
COOKIE_ID_LENGTH = 16
SEALING_INFO = b"profile-poke pending sign-in v1"
STATE_KEY_LABEL = b"profile-poke sign-in state v1"
UNKNOWN_STATE, OTHER_BROWSER = "unknown_state", "other_browser"
USED_UP = "used"  # what a login cookie holds once its callback came: it opens for no state


class Pending(NamedTuple):
    verifier: str
    return_to: str
    prompt: str  # "" when none was sent
    max_age: str  # decimal seconds, "" when none was sent
    expires_at: float = 0.0  # from its state, not sealed: when the sign-in can no longer finish


class Started(NamedTuple):
    url: str  # where the browser goes to sign in
    cookie: tuple[str, str]  # name and value of the cookie that keeps the new sign-in
    dropped: list[str]  # names of this browser's older sign-ins' cookies to remove


class NotPending(Exception):
    """A callback whose `state` is no pending sign-in of this browser; `reason` says why (for the audit)."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


class PendingSignIns:
    """Issues states and the sealed cookies that keep their sign-ins, under SECRET_KEY and its fallbacks."""

    def __init__(self, secret: str, fallbacks: list[str], *, cookie_prefix: str, ttl_seconds: int):
        self._state_keys = [hmac.digest(key.encode(), STATE_KEY_LABEL, hashlib.sha256) for key in (secret, *fallbacks)]
        self._sealer = Sealer(secret, fallbacks, info=SEALING_INFO)
        self._prefix = cookie_prefix
        self._names = re.compile(re.escape(cookie_prefix) + rf"-[A-Za-z0-9_-]{{{COOKIE_ID_LENGTH}}}")
        self._ttl_us = ttl_seconds * 1_000_000

    def start(self, pending: Pending) -> tuple[str, str, str]:
        """A new `state`, and the name and value of the cookie that keeps `pending` until it expires."""
        expires_us = int(time.time() * 1_000_000) + self._ttl_us
        head = expires_us.to_bytes(EXPIRY_BYTES, "big") + secrets.token_bytes(RANDOM_BYTES)
        state = base64.urlsafe_b64encode(head + _mac(self._state_keys[0], head)).decode()
        record = json.dumps(list(pending[:4]), ensure_ascii=False, separators=(",", ":")).encode()
        return state, self.cookie_name(state), f"{expires_us}.{self._sealer.seal(state, record)}"

    def opened(self, state, cookies) -> Pending:
        """The pending sign-in this browser's cookie keeps for `state`. NotPending: `unknown_state` when
        this service did not issue `state`, it expired, or its cookie does not open (altered, cut short,
        too long, or sealed under a key no longer configured); `other_browser` when there is no cookie."""
        expires_at = self._expiry(state)
        value = cookies.get(self.cookie_name(state))
        if value is None:
            raise NotPending(OTHER_BROWSER)
        if len(value) > MAX_COOKIE:
            raise NotPending(UNKNOWN_STATE)
        try:
            record = json.loads(self._sealer.open(state, value.partition(".")[2])[0])
        except (Unsealable, ValueError):  # ValueError: not JSON, or bytes that are not UTF-8
            raise NotPending(UNKNOWN_STATE) from None
        if not isinstance(record, list) or len(record) != 4 or not all(isinstance(field, str) for field in record):
            raise NotPending(UNKNOWN_STATE)
        return Pending(*record, expires_at=expires_at)

    def cookie_name(self, state: str) -> str:
        """The name of the cookie that keeps the sign-in of `state`."""
        return f"{self._prefix}-{short_digest('login cookie:' + state)[:COOKIE_ID_LENGTH]}"

    def crowded(self, cookies, new_cookie_bytes: int) -> list[str]:
        """The names of this browser's pending sign-in cookies to drop so that a new one of
        `new_cookie_bytes` fits: the oldest first, beyond MAX_PENDING or MAX_PENDING_BYTES with the
        new one, and any expired or unreadable."""
        now_us, ours = int(time.time() * 1_000_000), []
        for name, value in cookies.items():
            if self._names.fullmatch(name):
                expires = value.partition(".")[0]  # clear, and only for this order: a browser reorders its own
                valid = expires.isascii() and expires.isdigit() and len(expires) <= 17
                ours.append((int(expires) if valid else 0, name, len(name) + 1 + len(value)))
        room, kept, dropped = MAX_PENDING_BYTES - new_cookie_bytes, 0, []
        for expires, name, size in sorted(ours, reverse=True):
            if not dropped and expires > now_us and kept < MAX_PENDING - 1 and size <= room:
                room, kept = room - size, kept + 1
            else:
                dropped.append(name)
        return dropped

    def _expiry(self, state) -> float:
        """When `state` expires (s since the epoch), if this service issued it; else NotPending."""
        if not isinstance(state, str) or not STATE.fullmatch(state):
            raise NotPending(UNKNOWN_STATE)
        raw = base64.urlsafe_b64decode(state)
        head, mac = raw[:-MAC_BYTES], raw[-MAC_BYTES:]
        if not any(hmac.compare_digest(_mac(key, head), mac) for key in self._state_keys):
            raise NotPending(UNKNOWN_STATE)
        expires_at = int.from_bytes(head[:EXPIRY_BYTES], "big") / 1_000_000
        if expires_at <= time.time():
            raise NotPending(UNKNOWN_STATE)
        return expires_at


def _mac(key: bytes, head: bytes) -> bytes:
    return hmac.digest(key, head, hashlib.sha256)[:MAC_BYTES]


def nonce_of(verifier: str) -> str:
    """The nonce of a sign-in: one-way from its verifier, which must stay secret until the exchange."""
    return short_digest("nonce:" + verifier)


def short_digest(value: str) -> str:
    """The SHA-256 of `value`, base64url without padding."""
    return base64.urlsafe_b64encode(hashlib.sha256(value.encode()).digest()).rstrip(b"=").decode()
