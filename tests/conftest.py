"""Fixtures shared by every suite: configuration builders and the stub issuer for fast tests."""

import secrets

import fakeredis
import pytest

from app import create_app
from config import Config
from tests.stub_issuer import StubIssuer

pytest_plugins = ["tests.report"]


def pytest_addoption(parser):
    parser.addoption("--redis-cluster", action="store_true", help="run against a real three-master Redis Cluster")


def app_env(issuer: str, **overrides) -> dict:
    """The environment of an app instance under test."""
    env = {
        "OIDC_ISSUER_URL": issuer,
        "OIDC_CLIENT_ID": "profile-poke-web",
        "OIDC_REDIRECT_URI": "http://127.0.0.1:8000/auth/callback",
        "SECRET_KEY": secrets.token_urlsafe(32),
        "SESSION_COOKIE_SECURE": "false",
        "REDIS_KEY_PREFIX": f"test-{secrets.token_hex(4)}:",
        "LOG_LEVEL": "WARNING",
        # Many tests sign in from 127.0.0.1 within a minute; the limits have tests of their own.
        "RATE_LIMIT_LOGIN": "10000 per minute",
        "RATE_LIMIT_EXCHANGE": "10000 per minute",
    }
    env.update({name: str(value) for name, value in overrides.items()})
    return env


@pytest.fixture(scope="session")
def stub_issuer():
    issuer = StubIssuer()
    yield issuer
    issuer.stop()


@pytest.fixture
def fake_redis():
    return fakeredis.FakeRedis()


@pytest.fixture
def unit_app(stub_issuer, fake_redis):
    """An app on fakeredis that trusts the stub issuer."""
    stub_issuer.published = [stub_issuer.key]
    return create_app(Config(app_env(stub_issuer.issuer)), redis=fake_redis)


@pytest.fixture
def unit_client(unit_app):
    return unit_app.test_client()
