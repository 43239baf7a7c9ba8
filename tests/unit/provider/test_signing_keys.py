"""The provider's signing keys (decisions: "Tokens the API accepts"): re-read after JWKS_MAX_AGE so a
removed key stops being trusted, unparseable entries skipped, and neither the first load nor a
max-age re-read spending the one unknown-kid refetch per interval, a failed read tried again only after
the backoff; against the stub issuer's JWKS, or on SigningKeys itself with a JWKS read the test controls."""

import pytest

from app.errors import ProviderUnavailable
from app.provider.discovery import Provider, discovery_url
from app.provider.signatures import BadToken, signed_claims
from app.provider.signing_keys import SigningKeys
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


class Jwks:
    """What SigningKeys reads, without HTTP: the entries of `published`, or ProviderUnavailable while
    `down`; `fetches` counts the reads."""

    def __init__(self, published):
        self.published, self.down, self.fetches = published, False, 0

    def __call__(self) -> dict:
        self.fetches += 1
        if self.down:
            raise ProviderUnavailable("jwks_uri: ConnectionError")
        return {"keys": [key.as_dict(private=False) for key in self.published]}


def signing_keys(jwks: Jwks, *, max_age=600.0, backoff=5.0) -> SigningKeys:
    return SigningKeys(jwks, max_age=max_age, refetch_interval=30.0, backoff=backoff)


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
    assert discovery_url("https://idp.example/X/") == "https://idp.example/X/.well-known/openid-configuration"
    stub.issuer += "/"
    idp = provider(stub)
    assert idp.metadata()["issuer"].endswith("/realms/stub/")
    assert signed_claims(idp, stub.sign(stub.access_claims(), key=keys[0]))[1]["iss"] == stub.issuer


def test_the_keys_are_read_again_when_exactly_their_max_age_old(keys, clock):
    jwks = Jwks([keys[0]])
    cache = signing_keys(jwks, max_age=0.5)
    assert cache.key("key-0").kid == "key-0"
    clock.advance(0.5)
    assert cache.key("key-0").kid == "key-0"
    assert jwks.fetches == 2


def test_a_token_without_a_kid_spends_no_refetch_on_keys_that_name_theirs(keys, clock):
    jwks = Jwks([keys[0], keys[1]])
    cache = signing_keys(jwks)
    assert cache.key(None) is None  # two keys: which one is not for the token to leave open
    assert jwks.fetches == 1


def test_a_token_without_a_kid_refetches_a_jwks_that_had_no_keys(keys, clock):
    jwks = Jwks([])
    cache = signing_keys(jwks)
    assert cache.key(None) is None
    assert jwks.fetches == 2  # the first load, and the unknown-kid allowance on finding no key at all
    jwks.published = [keys[0]]
    clock.advance(30.0)  # the allowance is back, the keys are far from their max age
    assert cache.key(None).kid == "key-0"
    assert jwks.fetches == 3


def test_unreadable_keys_are_unavailable_and_read_again_only_after_the_backoff(keys, clock):
    jwks = Jwks([keys[0]])
    jwks.down = True
    cache = signing_keys(jwks, max_age=600.0, backoff=5.0)
    for kid in ("key-0", None):
        with pytest.raises(ProviderUnavailable) as raised:
            cache.key(kid)
        # what the operator's "identity provider unavailable: ..." line says
        assert str(raised.value) == "the provider's signing keys could not be fetched"
    assert jwks.fetches == 2  # the first load and the unknown-kid allowance, then nothing for the backoff
    jwks.down = False
    clock.advance(4.9)
    with pytest.raises(ProviderUnavailable):
        cache.key("key-0")
    clock.advance(0.1)
    assert cache.key("key-0").kid == "key-0"
    assert jwks.fetches == 3
