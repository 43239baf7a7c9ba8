"""Fixtures shared by every suite: the stub issuer and an app on fakeredis for fast tests."""

import fakeredis
import pytest

from app import create_app
from config import Config
from tests.helpers.settings import app_env
from tests.helpers.stub_issuer import StubIssuer

pytest_plugins = ["tests.report"]


def pytest_addoption(parser):
    parser.addoption("--redis-cluster", action="store_true", help="run against a real three-master Redis Cluster")


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
