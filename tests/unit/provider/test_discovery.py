"""The provider's discovery document and signing keys, against the stub issuer: what is cached, for how
long, what is fetched again, and which published keys may verify a signature."""

import socket

import pytest
from joserfc.jwk import RSAKey
from prometheus_client import REGISTRY

from app import metrics
from app.errors import ProviderUnavailable
from app.provider.discovery import FAILURE_BACKOFF, Provider
from tests.helpers.clock import finishes_within
from tests.helpers.stub_issuer import StubIssuer


def provider_of(issuer: str, *, discovery_ttl: float = 60, refetch_interval: float = 60, timeout: float = 2):
    return Provider(issuer, timeout=timeout, discovery_ttl=discovery_ttl, refetch_interval=refetch_interval)


@pytest.fixture(scope="module")
def other_key():
    """A second RSA key (its JWK's kid and use are set per test)."""
    return RSAKey.generate_key(2048)


def jwk_of(key: RSAKey, **parameters) -> RSAKey:
    """`key` published with these JWK parameters (kid, use) instead of its own."""
    return RSAKey.import_key({**key.as_dict(private=False), **parameters})


def test_discovery_is_fetched_once_while_it_is_fresh(stub):
    provider = provider_of(stub.issuer)
    assert provider.metadata()["jwks_uri"] == f"{stub.issuer}/certs"
    assert provider.endpoint("token_endpoint") == f"{stub.issuer}/token"
    assert stub.fetches["discovery"] == 1


def test_discovery_is_fetched_again_once_it_is_as_old_as_its_ttl(stub, clock):
    provider = provider_of(stub.issuer, discovery_ttl=0.5)
    provider.metadata()
    clock.advance(0.25)
    provider.metadata()
    assert stub.fetches["discovery"] == 1
    clock.advance(0.25)
    provider.metadata()
    assert stub.fetches["discovery"] == 2


def test_a_stale_discovery_document_serves_while_the_provider_is_down(key, clock):
    stub = StubIssuer(key)
    provider = provider_of(stub.issuer, discovery_ttl=0.05)
    document = provider.metadata()
    stub.stop()
    clock.advance(0.1)
    assert provider.metadata() == document


def test_a_failed_discovery_is_tried_again_only_after_the_backoff(stub, clock):
    provider = provider_of(f"{stub.issuer}/other")  # the stub's document names its own issuer: refused
    for _ in range(2):
        with pytest.raises(ProviderUnavailable) as raised:
            provider.metadata()
        # what the operator's "identity provider unavailable: ..." line says
        assert str(raised.value) == "no discovery document"
        clock.advance(FAILURE_BACKOFF / 2)
    assert stub.fetches["discovery"] == 1
    with pytest.raises(ProviderUnavailable):
        provider.metadata()  # FAILURE_BACKOFF seconds after the failure: asked again
    assert stub.fetches["discovery"] == 2


def test_a_discovery_document_naming_another_issuer_is_not_used(stub, monkeypatch):
    monkeypatch.setattr(stub, "discovery", lambda: {"issuer": "https://evil.example", "jwks_uri": "x"})
    with pytest.raises(ProviderUnavailable):
        provider_of(stub.issuer).metadata()


def test_a_provider_that_never_answers_is_unavailable_after_the_timeout():
    with socket.socket() as silent:  # accepts connections (the kernel's backlog) and never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        provider = provider_of(f"http://127.0.0.1:{silent.getsockname()[1]}", timeout=0.2)
        # Bounded here: a call without the timeout would hang until mutmut's own limit, a kill by timeout.
        with pytest.raises(ProviderUnavailable):
            finishes_within(2, provider.metadata)


def test_without_a_max_age_the_keys_are_trusted_for_jwks_max_ages_default():
    assert provider_of("https://idp.example").signing_keys.max_age == 600  # JWKS_MAX_AGE's default


def test_a_known_key_is_used_without_fetching_the_keys_again(stub):
    provider = provider_of(stub.issuer, refetch_interval=0)
    for _ in range(3):
        assert provider.signing_keys.key(stub.key.kid).kid == stub.key.kid
    assert stub.fetches["jwks"] == 1


def test_an_encryption_key_never_verifies_signatures_and_the_signing_key_after_it_does(stub, other_key):
    stub.published = [jwk_of(other_key, kid="enc-1", use="enc"), stub.key]
    provider = provider_of(stub.issuer)
    assert provider.signing_keys.key("enc-1") is None
    assert provider.signing_keys.key(stub.key.kid).kid == stub.key.kid


def test_a_key_without_use_is_a_signing_key(stub, other_key):
    stub.published = [jwk_of(other_key, kid="no-use")]
    assert provider_of(stub.issuer).signing_keys.key("no-use").kid == "no-use"


def test_a_token_without_kid_gets_the_one_key_without_a_kid(stub, other_key):
    keyless = jwk_of(other_key, use="sig")
    stub.published = [keyless]
    found = provider_of(stub.issuer).signing_keys.key(None)
    assert found is not None and found.as_dict(private=False)["n"] == keyless.as_dict(private=False)["n"]


def test_a_token_without_kid_gets_no_key_when_the_provider_has_several(stub, other_key):
    stub.published = [stub.key, jwk_of(other_key, use="sig")]
    assert provider_of(stub.issuer).signing_keys.key(None) is None


def test_each_fetch_is_counted_under_the_endpoint_name_operations_documents(stub, monkeypatch):
    monkeypatch.setattr(metrics, "_enabled", True)  # what a METRICS_TOKEN turns on, for this test only

    def fetched(endpoint: str) -> float:
        labels = {"endpoint": endpoint, "outcome": "ok"}
        return REGISTRY.get_sample_value("pp_idp_requests_total", labels) or 0.0

    before = {endpoint: fetched(endpoint) for endpoint in ("discovery", "jwks")}
    provider_of(stub.issuer).signing_keys.key(stub.key.kid)
    assert {endpoint: fetched(endpoint) - before[endpoint] for endpoint in before} == {"discovery": 1, "jwks": 1}
