"""A key rotated under the same `kid` (issue 19, point 9): a signature failure on a known kid re-reads
the JWKS with the unknown-kid allowance (at most one fetch per JWKS_REFETCH_INTERVAL) and retries
once, in the one place signatures are checked, so access, ID and logout tokens all benefit. Against
the stub issuer's JWKS, on a clock the test moves."""

import time

import pytest
from joserfc.jwk import RSAKey

from app.provider import LoginClient, PublicClient
from app.provider.discovery import Provider
from app.provider.signatures import BadToken, signed_claims
from tests.helpers.stub_issuer import StubIssuer

INTERVAL = 30.0


@pytest.fixture(scope="module")
def keys():
    """Two keys with the same kid (what a same-kid rotation publishes) and one with another kid."""
    return [StubIssuer.new_key("kid-1"), StubIssuer.new_key("kid-1"), StubIssuer.new_key("kid-2")]


@pytest.fixture
def stub(keys):
    issuer = StubIssuer(keys[0])
    yield issuer
    issuer.stop()


def provider(stub) -> Provider:
    return Provider(stub.issuer, timeout=2, discovery_ttl=3600, refetch_interval=INTERVAL, max_age=600)


def token(stub, key) -> str:
    return stub.sign(stub.access_claims(), key=key)


def forged(stub, key) -> str:
    """A token naming `key`'s kid, its signature made by another key."""
    return token(stub, RSAKey.import_key({**StubIssuer.new_key(None).as_dict(private=True), "kid": key.kid}))


def test_a_key_rotated_under_the_same_kid_is_accepted_at_once(stub, keys, clock):
    idp = provider(stub)
    assert signed_claims(idp, token(stub, keys[0]))[1]["sub"] == "user-sub-1"
    stub.key, stub.published = keys[1], [keys[1]]  # new key material, the same kid
    assert signed_claims(idp, token(stub, keys[1]))[1]["sub"] == "user-sub-1"
    assert stub.fetches["jwks"] == 2  # the first load and one re-read for the failed signature
    assert signed_claims(idp, token(stub, keys[1]))
    assert stub.fetches["jwks"] == 2  # the new key is cached now


def test_a_key_rotated_under_the_same_kid_is_found_by_its_kid_among_other_keys(stub, keys, clock):
    idp = provider(stub)
    stub.published = [keys[0], keys[2]]
    assert signed_claims(idp, token(stub, keys[0]))[1]["sub"] == "user-sub-1"
    stub.published = [keys[1], keys[2]]  # kid-1's new key material beside kid-2
    assert signed_claims(idp, token(stub, keys[1]))[1]["sub"] == "user-sub-1"
    assert stub.fetches["jwks"] == 2


def test_forged_signatures_on_a_known_kid_cost_at_most_one_fetch_per_interval(stub, keys, clock):
    idp = provider(stub)
    assert signed_claims(idp, token(stub, keys[0]))
    junk = forged(stub, keys[0])
    for _ in range(50):
        with pytest.raises(BadToken, match="the token's signature is invalid"):
            signed_claims(idp, junk)
    assert stub.fetches["jwks"] == 2
    clock.advance(INTERVAL - 0.1)
    with pytest.raises(BadToken, match="the token's signature is invalid"):
        signed_claims(idp, junk)
    assert stub.fetches["jwks"] == 2
    clock.advance(0.1)
    with pytest.raises(BadToken, match="the token's signature is invalid"):
        signed_claims(idp, junk)
    assert stub.fetches["jwks"] == 3


def test_a_signature_refetch_spends_the_same_allowance_as_an_unknown_kid(stub, keys, clock):
    idp = provider(stub)
    assert signed_claims(idp, token(stub, keys[0]))
    with pytest.raises(BadToken, match="the token's signature is invalid"):
        signed_claims(idp, forged(stub, keys[0]))
    stub.published = [keys[0], keys[2]]
    with pytest.raises(BadToken, match="not signed by a known key"):
        signed_claims(idp, token(stub, keys[2]))  # spent by the forged signature: no second fetch
    assert stub.fetches["jwks"] == 2
    clock.advance(INTERVAL)
    assert signed_claims(idp, token(stub, keys[2]))


def test_within_the_interval_a_same_kid_rotation_waits_for_the_next_allowance(stub, keys, clock):
    idp = provider(stub)
    assert signed_claims(idp, token(stub, keys[0]))
    with pytest.raises(BadToken):
        signed_claims(idp, forged(stub, keys[0]))  # someone's junk spends the allowance first
    stub.key, stub.published = keys[1], [keys[1]]
    with pytest.raises(BadToken, match="the token's signature is invalid"):
        signed_claims(idp, token(stub, keys[1]))
    clock.advance(INTERVAL)
    assert signed_claims(idp, token(stub, keys[1]))


def test_an_id_token_signed_with_a_key_rotated_under_the_same_kid_is_accepted(stub, keys, clock):
    idp = provider(stub)
    client = LoginClient(idp, PublicClient("profile-poke-web", "openid", timeout=2), leeway=60)
    now = int(time.time())
    claims = {"iss": stub.issuer, "aud": "profile-poke-web", "sub": "user-sub-1", "iat": now, "exp": now + 300}
    assert client.verify_id_token(stub.sign(claims, key=keys[0], header={"typ": "JWT"}), nonce=None)["sub"]
    stub.key, stub.published = keys[1], [keys[1]]
    assert client.verify_id_token(stub.sign(claims, key=keys[1], header={"typ": "JWT"}), nonce=None)["sub"]
    assert stub.fetches["jwks"] == 2
