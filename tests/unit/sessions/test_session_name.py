"""A session's name in Redis is HMAC-SHA256(SECRET_KEY, cookie) in hex: sessions stored under it stay found."""

import hashlib
import hmac
import secrets

import pytest

from app.sessions.interface import session_ref

# Fixed inputs, named: the security report lists each case, and must read the same in every run.
COOKIE_KINDS = ["empty", "one character", "a 43-character cookie", "non-ASCII"]


@pytest.mark.parametrize("cookie", ["", "c", "VX69leb6g85vzD_15HYq180RIHTEkhruuzFtUOCSZ3E", "é" * 40], ids=COOKIE_KINDS)
def test_the_session_name_is_the_hex_hmac_sha256_of_the_cookie_under_the_secret_key(cookie):
    secret = secrets.token_urlsafe(48)
    assert session_ref(secret, cookie) == hmac.new(secret.encode(), cookie.encode(), hashlib.sha256).hexdigest()
