"""Integration fixtures over the real Redis and the real dev provider: in-process apps, each under
its own key prefix. The session-scoped services come from tests.helpers.real_services."""

import pytest

from app import create_app
from config import Config
from tests.helpers.real_services import (  # noqa: F401 - fixtures
    Idp,
    delete_prefix,
    idp,
    import_demo_users,
    integration_env,
    live_app,
    otlp_receiver,
    redis,
    redis_url,
    start_own_idp,
    workdir,
)


@pytest.fixture(scope="session")
def shaped_idp(workdir, idp):  # noqa: F811 - the fixtures imported above
    """Dev providers issuing another vendor's token shape (IDP_TOKEN_SHAPE okta or auth0), each started
    on first use and kept for the session; they accept the same app ports as `idp`."""
    started = {}

    def get(shape: str) -> Idp:
        if shape not in started:
            server, provider = start_own_idp(workdir, idp.app_ports, IDP_TOKEN_SHAPE=shape)
            if shape == "auth0":
                provider.issuer += "/"  # Auth0's issuer ends in a slash, and so does this one's
            started[shape] = (server, provider)
        return started[shape][1]

    yield get
    for server, _ in started.values():
        server.stop()


@pytest.fixture(scope="module")
def rotating_idp(workdir, idp):  # noqa: F811 - the fixtures imported above
    """A dev provider of the module's own, whose signing keys its tests may rotate."""
    server, provider = start_own_idp(workdir, idp.app_ports)
    yield provider
    server.stop()


@pytest.fixture
def make_app(idp, redis_url):  # noqa: F811 - the fixtures imported above
    """Builds in-process apps over the real Redis and provider (`provider=` another one), each under its
    own key prefix."""
    prefixes = []

    def build(provider: Idp | None = None, **overrides):
        env = integration_env(provider or idp, redis_url, **overrides)
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
