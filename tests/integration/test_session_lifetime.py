"""Session lifetimes: idle timeout, absolute maximum, never beyond the refresh token's life, and
everything a session leaves in Redis expiring with it."""

import time

import pytest

from tests.helpers.real_services import start_own_idp
from tests.helpers.settings import CSRF
from tests.helpers.signin import signed_in_client

pytestmark = pytest.mark.integration


def session_keys(redis, app) -> list[bytes]:
    prefix = app.config["REDIS_KEY_PREFIX"]
    return [key for key in redis.scan_iter(match=f"{prefix}*") if b":tokens:" in key or b":session:" in key]


def assert_session_ended(response) -> None:
    assert response.status_code == 401
    assert response.json["error"] == {"code": "unauthorized", "message": "the session has ended; sign in again"}


def test_every_session_key_expires_within_the_idle_timeout(make_app, redis):
    app = make_app(SESSION_IDLE_TIMEOUT="120")
    signed_in_client(app, "alice")
    keys = session_keys(redis, app)
    assert len(keys) == 2
    assert all(0 < redis.pttl(key) <= 120_000 for key in keys)


def test_an_idle_session_ends(make_app, redis):
    app = make_app(SESSION_IDLE_TIMEOUT="2")
    client = signed_in_client(app, "alice")
    assert client.get("/api/v1/me/profile", headers=CSRF).status_code == 200
    time.sleep(2.5)
    assert_session_ended(client.get("/api/v1/me/profile", headers=CSRF))
    assert session_keys(redis, app) == []


def test_activity_keeps_a_session_alive_until_its_absolute_end(make_app, redis):
    app = make_app(SESSION_IDLE_TIMEOUT="2", SESSION_MAX_AGE="5")
    client = signed_in_client(app, "alice")
    deadline = time.time() + 4
    while time.time() < deadline:
        assert client.get("/api/v1/me/profile", headers=CSRF).status_code == 200
        time.sleep(0.8)
    time.sleep(1.5)
    assert_session_ended(client.get("/api/v1/me/profile", headers=CSRF))


def test_a_session_never_outlives_the_refresh_token(workdir, make_app, redis):
    server, provider = start_own_idp(workdir, [1], IDP_REFRESH_TOKEN_TTL="2")
    try:
        app = make_app(OIDC_ISSUER_URL=provider.issuer, OIDC_REDIRECT_URI=provider.redirect_uri())
        client = signed_in_client(app, "alice")
        assert client.get("/auth/session").json["expires_at"] <= time.time() + 2
        assert all(redis.pttl(key) <= 2000 for key in session_keys(redis, app))
        time.sleep(2.5)
        assert_session_ended(client.get("/api/v1/me/profile", headers=CSRF))
    finally:
        server.stop()
