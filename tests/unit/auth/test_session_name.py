"""A session's name in Redis is HMAC-SHA256(SECRET_KEY, cookie) in hex: sessions stored under it stay found."""

import hashlib
import hmac
import secrets

import pytest

from app.auth.sessions import session_ref


@pytest.mark.parametrize("cookie", ["", "c", secrets.token_urlsafe(32), "é" * 40])
def test_the_session_name_is_the_hex_hmac_sha256_of_the_cookie_under_the_secret_key(cookie):
    secret = secrets.token_urlsafe(48)
    assert session_ref(secret, cookie) == hmac.new(secret.encode(), cookie.encode(), hashlib.sha256).hexdigest()
