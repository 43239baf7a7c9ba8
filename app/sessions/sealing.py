"""Tokens at rest: AES-GCM under a key derived (HKDF-SHA256) from the session cookie value and
SECRET_KEY, so the contents of Redis alone (a dump, a replica) yield no token and no session.

Each cookie has its own key, so a sealed value copied to another session's record does not open
there. Older keys from SECRET_KEY_FALLBACKS still open records; the caller re-seals those under the
current key.
"""

import base64
import hashlib
import hmac
import json
import secrets

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

VERSION = "v2"
NONCE_BYTES = 12
TAG_BYTES = 16
INFO = b"profile-poke session tokens v2"
SALT_LABEL = b"profile-poke token sealing salt"
SEALED_FIELDS = ("access_token", "refresh_token", "id_token")
# The refresh token is also sealed under SECRET_KEY alone, so that your other session can revoke it.
REVOCATION = "refresh-token revocation"


class Unsealable(Exception):
    """A sealed value that no current or fallback key opens (or that is not a sealed value at all)."""


def _salt(secret: str) -> bytes:
    # Not salt=secret: HKDF's extract step would then be HMAC(secret, cookie), which is the session's
    # name in Redis (app.sessions.interface.session_ref), and the key would follow from Redis alone.
    return hmac.digest(secret.encode(), SALT_LABEL, hashlib.sha256)


def _key(cookie: str, salt: bytes, info: bytes) -> bytes:
    """HKDF-SHA256 (RFC 5869) of the cookie under `salt` and `info`, 32 bytes."""
    # One extract and one expand block by the C one-shot HMAC: the key cryptography's HKDF gives,
    # without building its objects and the salt on every cookie-authenticated call.
    pseudorandom_key = hmac.digest(salt, cookie.encode(), hashlib.sha256)
    return hmac.digest(pseudorandom_key, info + b"\x01", hashlib.sha256)


class Sealer:
    """Seals and opens values for one session cookie, under SECRET_KEY and its fallbacks; another
    `info` keys another purpose (a value sealed for one never opens for the other)."""

    def __init__(self, secret: str, fallbacks: list[str], *, info: bytes = INFO):
        self._salts = [_salt(secret) for secret in (secret, *fallbacks)]
        self._info = info

    def seal(self, cookie: str, plaintext: bytes) -> str:
        """`plaintext` encrypted for the session `cookie`."""
        nonce = secrets.token_bytes(NONCE_BYTES)
        sealed = AESGCM(_key(cookie, self._salts[0], self._info)).encrypt(nonce, plaintext, self._info)
        return f"{VERSION}.{base64.urlsafe_b64encode(nonce + sealed).decode()}"

    def open(self, cookie: str, value) -> tuple[bytes, bool]:
        """The plaintext, and whether it was sealed under an older key (seal it again); Unsealable
        when no key opens it."""
        if not isinstance(value, str) or not value.startswith(f"{VERSION}."):
            raise Unsealable("not a sealed value")
        try:
            raw = base64.urlsafe_b64decode(value[len(VERSION) + 1 :])
        except ValueError:
            raise Unsealable("not base64") from None
        if len(raw) < NONCE_BYTES + TAG_BYTES:
            raise Unsealable("truncated")
        nonce, sealed = raw[:NONCE_BYTES], raw[NONCE_BYTES:]
        for index, salt in enumerate(self._salts):
            try:
                return AESGCM(_key(cookie, salt, self._info)).decrypt(nonce, sealed, self._info), index > 0
            except InvalidTag:
                continue
        raise Unsealable("no key opens it")

    def seal_record(self, cookie: str, record: dict) -> dict:
        """A token set as stored: its tokens sealed for `cookie`, everything else in clear."""
        stored = {name: value for name, value in record.items() if name not in SEALED_FIELDS}
        stored["sealed"] = self.seal(cookie, json.dumps({name: record.get(name) for name in SEALED_FIELDS}).encode())
        if record.get("refresh_token"):
            stored["revocable"] = self.seal(REVOCATION, record["refresh_token"].encode())
        return stored

    def open_record(self, cookie: str, stored: dict) -> tuple[dict, bool]:
        """The token set with its tokens unsealed, and whether to seal it again; Unsealable otherwise,
        also when what it opens to is not the three tokens."""
        if not isinstance(stored, dict):
            raise Unsealable("not a token record")
        plaintext, stale = self.open(cookie, stored.get("sealed"))
        try:
            tokens = json.loads(plaintext)
        except ValueError:  # also bytes that are not UTF-8
            raise Unsealable("it opens to something that is not JSON") from None
        if (
            not isinstance(tokens, dict)
            or not all(isinstance(tokens.get(name), str | None) for name in SEALED_FIELDS)
            or not isinstance(tokens.get("access_token"), str)
        ):
            raise Unsealable("it opens to something that is not a token set")
        public = {name: value for name, value in stored.items() if name not in {"sealed", "revocable"}}
        return {**public, **{name: tokens.get(name) for name in SEALED_FIELDS}}, stale

    def revocable_refresh_token(self, stored: dict) -> str | None:
        """The refresh token of any session's stored token set, for revoking it; None if unreadable."""
        if not isinstance(stored, dict):
            return None
        try:
            return self.open(REVOCATION, stored.get("revocable"))[0].decode()
        except (Unsealable, UnicodeDecodeError):
            return None
