"""Signature checks on their own, against the stub issuer's keys: every asymmetric algorithm a provider
may use, the size limit, and key ids and algorithms that do not fit the key."""

import pytest
from joserfc import jwt
from joserfc.jwk import RSAKey

from app.provider import signatures
from app.provider.discovery import Provider
from app.provider.signatures import MAX_TOKEN_BYTES, BadToken, signed_claims

CLAIMS = {"sub": "user-sub-1"}


@pytest.fixture
def provider(stub):
    return Provider(stub.issuer, timeout=2, discovery_ttl=60, refetch_interval=60)


@pytest.mark.parametrize("algorithm", ["RS384", "RS512", "PS256", "PS384", "PS512"])
def test_every_rsa_algorithm_a_provider_may_sign_with_is_accepted(stub, provider, key, algorithm):
    fields = {name: value for name, value in key.as_dict(private=True).items() if name != "alg"}
    any_rsa = RSAKey.import_key({**fields, "kid": "any-rsa"})  # not bound to RS256 like the stub's key
    stub.published = [any_rsa]
    token = jwt.encode({"alg": algorithm, "kid": "any-rsa"}, CLAIMS, any_rsa, algorithms=[algorithm])
    assert signed_claims(provider, token)[1] == CLAIMS


def test_an_algorithm_that_does_not_fit_the_named_key_is_an_invalid_signature(stub, provider):
    token = stub.unsigned(CLAIMS, {"alg": "ES256", "kid": stub.key.kid})  # the key is RSA
    with pytest.raises(BadToken) as refused:
        signed_claims(provider, token)
    assert str(refused.value) == "the token's signature is invalid"


@pytest.mark.parametrize("kid", [42, ["stub-key-1"], {"kid": "stub-key-1"}, True])
def test_a_kid_that_is_not_a_string_names_no_key_and_fetches_nothing(stub, provider, kid):
    token = stub.sign_raw(CLAIMS, {"alg": "RS256", "kid": kid})
    with pytest.raises(BadToken) as refused:
        signed_claims(provider, token)
    assert str(refused.value) == "the token was not signed by a known key"
    assert stub.fetches["jwks"] == 0


def sized(stub, size: int) -> str:
    """A validly signed token exactly `size` characters long."""
    for extra in range(4):  # base64 skips some lengths: a longer header shifts the payload's
        header = {"alg": "RS256", "kid": stub.key.kid, "cty": "y" * extra}
        for pad in range((size - 600) * 3 // 4, size * 3 // 4):
            token = stub.sign_raw({**CLAIMS, "pad": "p" * pad}, header)
            if len(token) >= size:
                break
        if len(token) == size:
            return token
    raise AssertionError(f"no token of {size} characters")


def test_a_token_of_exactly_the_size_limit_is_checked(stub, provider):
    assert signed_claims(provider, sized(stub, MAX_TOKEN_BYTES))[1]["sub"] == "user-sub-1"


def test_a_token_one_character_over_the_size_limit_is_refused_unread(stub, provider):
    with pytest.raises(BadToken) as refused:
        signed_claims(provider, sized(stub, MAX_TOKEN_BYTES + 1))
    assert str(refused.value) == "the token is too large"
    assert stub.fetches["jwks"] == 0


def test_a_forged_signature_after_the_refetch_allowance_is_spent_is_checked_once(stub, provider, monkeypatch):
    """A forged signature re-reads the keys once per refetch interval and checks the new key; after that
    the key it failed with is not checked again (forged tokens are the cheapest flood there is)."""
    token = stub.sign_raw(CLAIMS, {"alg": "RS256", "kid": stub.key.kid})
    forged = token[: token.rindex(".") + 1] + "A" * (len(token) - token.rindex(".") - 1)
    checks = []
    validate = signatures.jws.validate_compact
    monkeypatch.setattr(signatures.jws, "validate_compact", lambda *a, **kw: checks.append(1) or validate(*a, **kw))
    for expected_checks in (2, 1):  # the key read again, then not
        checks.clear()
        with pytest.raises(BadToken) as refused:
            signed_claims(provider, forged)
        assert str(refused.value) == "the token's signature is invalid"
        assert len(checks) == expected_checks
    assert stub.fetches["jwks"] == 2
