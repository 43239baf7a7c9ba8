"""Tokens at rest: AES-GCM under a key from the cookie and SECRET_KEY, with key rotation."""

import base64

import pytest
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDFExpand

from app.sessions.interface import session_ref
from app.sessions.sealing import INFO, NONCE_BYTES, VERSION, Sealer, Unsealable

COOKIE = "cookie-value-of-this-browser"
OLD, NEW = "o" * 32, "n" * 32


def test_a_sealed_value_opens_only_with_its_cookie():
    sealer = Sealer(NEW, [])
    sealed = sealer.seal(COOKIE, b"refresh-token-123")
    assert "refresh-token-123" not in sealed and sealed.startswith(f"{VERSION}.")
    assert sealer.open(COOKIE, sealed) == (b"refresh-token-123", False)
    with pytest.raises(Unsealable, match="no key opens it"):
        sealer.open("another-cookie", sealed)


def test_a_value_sealed_under_a_fallback_key_opens_and_asks_to_be_sealed_again():
    sealed = Sealer(OLD, []).seal(COOKIE, b"tokens")
    assert Sealer(NEW, [OLD]).open(COOKIE, sealed) == (b"tokens", True)
    with pytest.raises(Unsealable, match="no key opens it"):
        Sealer(NEW, []).open(COOKIE, sealed)


@pytest.mark.parametrize(
    "value", [None, '{"refresh_token": "plain"}', f"{VERSION}.not-base64!", f"{VERSION}." + "A" * 40]
)
def test_plaintext_and_garbage_are_unsealable(value):
    with pytest.raises(Unsealable):
        Sealer(NEW, []).open(COOKIE, value)


def test_the_sessions_name_in_redis_does_not_yield_its_key():
    """Redis holds the session's name, HMAC-SHA256(SECRET_KEY, cookie): no key derived from it alone
    (as HKDF would, had SECRET_KEY been the salt) may open the session's tokens."""
    sealed = Sealer(NEW, []).seal(COOKIE, b"refresh-token-123")
    raw = base64.urlsafe_b64decode(sealed.removeprefix(f"{VERSION}."))
    name_in_redis = bytes.fromhex(session_ref(NEW, COOKIE))
    guessed_key = HKDFExpand(algorithm=hashes.SHA256(), length=32, info=INFO).derive(name_in_redis)
    with pytest.raises(InvalidTag):
        AESGCM(guessed_key).decrypt(raw[:NONCE_BYTES], raw[NONCE_BYTES:], INFO)


def test_the_shortest_sealed_value_opens_and_one_byte_less_is_truncated():
    sealer = Sealer(NEW, [])
    sealed = sealer.seal(COOKIE, b"")  # nonce and tag only
    assert sealer.open(COOKIE, sealed) == (b"", False)
    raw = base64.urlsafe_b64decode(sealed.removeprefix(f"{VERSION}."))
    with pytest.raises(Unsealable, match="truncated"):
        sealer.open(COOKIE, f"{VERSION}." + base64.urlsafe_b64encode(raw[:-1]).decode())
