"""Tokens at rest: AES-GCM under a key from the cookie and SECRET_KEY, with key rotation."""

import pytest

from app.auth.sealing import Sealer, Unsealable

COOKIE = "cookie-value-of-this-browser"
OLD, NEW = "o" * 32, "n" * 32


def test_a_sealed_value_opens_only_with_its_cookie():
    sealer = Sealer(NEW, [])
    sealed = sealer.seal(COOKIE, b"refresh-token-123")
    assert "refresh-token-123" not in sealed and sealed.startswith("v1.")
    assert sealer.open(COOKIE, sealed) == (b"refresh-token-123", False)
    with pytest.raises(Unsealable, match="no key opens it"):
        sealer.open("another-cookie", sealed)


def test_a_value_sealed_under_a_fallback_key_opens_and_asks_to_be_sealed_again():
    sealed = Sealer(OLD, []).seal(COOKIE, b"tokens")
    assert Sealer(NEW, [OLD]).open(COOKIE, sealed) == (b"tokens", True)
    with pytest.raises(Unsealable, match="no key opens it"):
        Sealer(NEW, []).open(COOKIE, sealed)


@pytest.mark.parametrize("value", [None, '{"refresh_token": "plain"}', "v1.not-base64!", "v1." + "A" * 40])
def test_plaintext_and_garbage_are_unsealable(value):
    with pytest.raises(Unsealable):
        Sealer(NEW, []).open(COOKIE, value)
