"""Integration fixtures over the real Redis and the real dev provider: in-process apps, each under
its own key prefix. The session-scoped services come from tests.helpers.real_services."""

import pytest

from app import create_app
from config import Config
from tests.helpers.real_services import (  # noqa: F401 - fixtures
    delete_prefix,
    idp,
    import_demo_users,
    integration_env,
    live_app,
    redis,
    redis_url,
    workdir,
)


@pytest.fixture
def make_app(idp, redis_url):  # noqa: F811 - the fixtures imported above
    """Builds in-process apps over the real Redis and provider, each under its own key prefix."""
    prefixes = []

    def build(**overrides):
        env = integration_env(idp, redis_url, **overrides)
        prefixes.append(env["REDIS_KEY_PREFIX"])
        app = create_app(Config(env))
        import_demo_users(app)
        return app

    yield build
    for prefix in prefixes:
        delete_prefix(redis_url, prefix)


@pytest.fixture
def app(make_app):
    return make_app()


@pytest.fixture
def client(app):
    return app.test_client()


@pytest.fixture
def keys_of(redis):  # noqa: F811 - the fixture imported above
    """Every key an app instance has in Redis."""

    def keys(app) -> list[str]:
        prefix = app.config["REDIS_KEY_PREFIX"]
        return sorted(key.decode() for key in redis.scan_iter(match=f"{prefix}*"))

    return keys
