"""The provider's signing keys (decisions: "Tokens the API accepts"): re-read after JWKS_MAX_AGE so a
removed key stops being trusted, unparseable entries skipped, and neither the first load nor a
max-age re-read spending the one unknown-kid refetch per interval; against the stub issuer's JWKS."""

import pytest

from app.provider.discovery import Provider, discovery_url
from app.provider.signatures import BadToken, signed_claims
from tests.helpers.stub_issuer import StubIssuer


class RawEntry:
    """A JWKS entry served exactly as given, however malformed."""

    def __init__(self, entry):
        self.entry = entry

    def as_dict(self, private=False):
        return self.entry


@pytest.fixture(scope="module")
def keys():
    return [StubIssuer.new_key(f"key-{n}") for n in range(3)]


@pytest.fixture
def stub(keys):
    issuer = StubIssuer(keys[0])
    yield issuer
    issuer.stop()


def provider(stub, *, max_age=600.0, refetch_interval=30.0) -> Provider:
    return Provider(stub.issuer, timeout=2, discovery_ttl=3600, refetch_interval=refetch_interval, max_age=max_age)


def token(stub, key) -> str:
    return stub.sign(stub.access_claims(), key=key)


def test_a_removed_key_is_refused_once_the_cached_keys_are_older_than_the_max_age(stub, keys, clock):
    idp = provider(stub, max_age=0.3)
    assert signed_claims(idp, token(stub, keys[0]))[1]["sub"] == "user-sub-1"
    stub.key, stub.published = keys[1], [keys[1]]  # the provider drops key-0, say it leaked
    clock.advance(0.29)
    assert signed_claims(idp, token(stub, keys[0]))  # still cached: trusted until the max age
    clock.advance(0.06)
    with pytest.raises(BadToken, match="not signed by a known key"):
        signed_claims(idp, token(stub, keys[0]))
    assert signed_claims(idp, token(stub, keys[1]))
    assert stub.fetches["jwks"] == 3  # first load, max-age re-read, one unknown-kid retry for key-0


def test_unparseable_entries_are_skipped_and_the_good_key_serves(stub, keys):
    stub.published = [
        RawEntry({"kty": "RSA", "kid": "broken", "n": "!!not base64!!", "e": "AQAB"}),
        RawEntry({"kty": "EC", "kid": "no-curve"}),
        RawEntry("not an object"),
        RawEntry({"kty": "oct", "kid": "symmetric", "k": "c2VjcmV0"}),
        keys[0],
    ]
    assert signed_claims(provider(stub), token(stub, keys[0]))[1]["sub"] == "user-sub-1"


def test_the_first_load_spends_no_unknown_kid_refetch(stub, keys):
    idp = provider(stub)
    assert signed_claims(idp, token(stub, keys[0]))
    stub.published = [keys[0], keys[1]]  # a key the provider adds right after our first load
    assert signed_claims(idp, token(stub, keys[1]))
    assert stub.fetches["jwks"] == 2


def test_a_max_age_reread_spends_no_unknown_kid_refetch(stub, keys, clock):
    idp = provider(stub, max_age=0.2)
    assert signed_claims(idp, token(stub, keys[0]))
    clock.advance(0.25)
    assert signed_claims(idp, token(stub, keys[0]))  # re-read by age
    stub.published = [keys[0], keys[2]]
    assert signed_claims(idp, token(stub, keys[2]))  # the unknown-kid refetch is still there to spend
    assert stub.fetches["jwks"] == 3
    stub.published = [keys[0], keys[1], keys[2]]
    with pytest.raises(BadToken, match="not signed by a known key"):
        signed_claims(idp, token(stub, keys[1]))  # spent now: at most one per interval
    assert stub.fetches["jwks"] == 3


def test_discovery_keeps_the_issuer_exact_and_drops_only_its_trailing_slash_from_the_url(stub, keys):
    assert discovery_url("https://tenant.auth0.com/") == "https://tenant.auth0.com/.well-known/openid-configuration"
    stub.issuer += "/"
    idp = provider(stub)
    assert idp.metadata()["issuer"].endswith("/realms/stub/")
    assert signed_claims(idp, stub.sign(stub.access_claims(), key=keys[0]))[1]["iss"] == stub.issuer
