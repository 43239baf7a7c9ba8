"""Fixtures of the fast tests that need a provider of their own: a key made once per module, a stub
issuer or a stub OpenID provider publishing it, and the clock of the discovery and signing-key caches."""

import pytest

from app.provider import discovery, signing_keys
from tests.helpers.clock import FakeClock
from tests.helpers.stub_issuer import StubIssuer
from tests.helpers.stub_op import StubOP


@pytest.fixture(scope="module")
def key():
    return StubIssuer.new_key("stub-key-1")  # made once: making RSA keys is slow


@pytest.fixture
def stub(key):
    """A stub issuer publishing `key` (modules that need other keys define their own)."""
    issuer = StubIssuer(key)
    yield issuer
    issuer.stop()


@pytest.fixture
def op(key):
    """A stub OpenID provider (authorization, token and revocation endpoints too) publishing `key`."""
    provider = StubOP(key)
    yield provider
    provider.stop()


@pytest.fixture
def clock(monkeypatch):
    """The provider's clock, moved only by the test: a key set is as old as the test says, not as old as
    a busy machine made it between two calls (a 0.2 s max age can pass between any two lines)."""
    fake = FakeClock()
    monkeypatch.setattr(discovery, "time", fake)
    monkeypatch.setattr(signing_keys, "time", fake)
    return fake
