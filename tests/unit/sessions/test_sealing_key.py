"""The sealing key is the documented HKDF-SHA256 of the cookie: records sealed before the key was
derived by hand still open, and records sealed now open with the library's HKDF."""

import base64
import hashlib
import hmac
import secrets

import pytest
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from app.sessions.sealing import INFO, NONCE_BYTES, SALT_LABEL, VERSION, Sealer

# Fixed inputs, named: the security report lists each case, and must read the same in every run.
COOKIE_KINDS = ["empty", "one character", "a 43-character cookie", "non-ASCII"]


def library_key(cookie: str, secret: str) -> bytes:
    """The key as the docs define it (docs/architecture.md, Session security), by cryptography's HKDF."""
    salt = hmac.new(secret.encode(), SALT_LABEL, hashlib.sha256).digest()
    return HKDF(algorithm=hashes.SHA256(), length=32, salt=salt, info=INFO).derive(cookie.encode())


@pytest.mark.parametrize("cookie", ["", "c", "v6aJn2tp4r2G5uiS5ENqBYqPYUCFuRJiEXSpiZBCAc8", "ä" * 70], ids=COOKIE_KINDS)
def test_a_value_sealed_under_the_library_hkdf_key_opens(cookie):
    secret = secrets.token_urlsafe(48)
    nonce = secrets.token_bytes(NONCE_BYTES)
    sealed = AESGCM(library_key(cookie, secret)).encrypt(nonce, b"tokens", INFO)
    value = f"{VERSION}.{base64.urlsafe_b64encode(nonce + sealed).decode()}"
    assert Sealer(secret, []).open(cookie, value) == (b"tokens", False)


def test_a_value_sealed_now_opens_under_the_library_hkdf_key_and_under_a_fallback_secret():
    cookie, old, new = secrets.token_urlsafe(32), secrets.token_urlsafe(48), secrets.token_urlsafe(48)
    value = Sealer(old, []).seal(cookie, b"tokens")
    raw = base64.urlsafe_b64decode(value.removeprefix(f"{VERSION}."))
    assert AESGCM(library_key(cookie, old)).decrypt(raw[:NONCE_BYTES], raw[NONCE_BYTES:], INFO) == b"tokens"
    assert Sealer(new, [old]).open(cookie, value) == (b"tokens", True)
