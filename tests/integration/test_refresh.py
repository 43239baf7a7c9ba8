"""Session token refresh under gunicorn (2 workers x 4 threads) with 62-second access tokens:
rotation, one refresh per session under concurrency, invalid_grant, and a provider outage."""

import time
from concurrent.futures import ThreadPoolExecutor

import pytest
import requests

from app import create_app
from app.sessions.interface import session_ref
from config import Config
from dev import oidc_driver
from tests.helpers.real_services import PASSWORD, import_demo_users, integration_env, start_own_idp
from tests.helpers.settings import CSRF, SESSION_COOKIE
from tests.helpers.signin import (
    callback_path,
    sign_in,
    start_login,
    stored_tokens,
    token_key,
    wait_until_refresh_is_due,
)

pytestmark = pytest.mark.integration


def own_profile(live_app, http_or_cookies) -> requests.Response:
    cookies = http_or_cookies.cookies if isinstance(http_or_cookies, requests.Session) else http_or_cookies
    return requests.get(f"{live_app.url}/api/v1/me/profile", cookies=cookies, headers=CSRF, timeout=15)


def test_the_access_token_is_refreshed_and_the_refresh_token_rotates(live_app, idp, redis):
    http = sign_in(live_app.url, "alice")
    before = stored_tokens(redis, live_app.env, http)
    wait_until_refresh_is_due(before)
    idp.reset_stats()
    assert own_profile(live_app, http).status_code == 200
    after = stored_tokens(redis, live_app.env, http)
    assert idp.stats()["token"]["refresh_token"] == 1
    assert after["v"] == before["v"] + 1
    assert after["access_token"] != before["access_token"]
    assert after["refresh_token"] != before["refresh_token"]
    assert after["expires_at"] > before["expires_at"]


def test_twenty_concurrent_requests_near_expiry_cause_exactly_one_refresh(live_app, idp, redis):
    http = sign_in(live_app.url, "bob")
    wait_until_refresh_is_due(stored_tokens(redis, live_app.env, http))
    idp.reset_stats()
    cookies = http.cookies.get_dict()
    with ThreadPoolExecutor(max_workers=20) as pool:
        responses = list(pool.map(lambda _: own_profile(live_app, cookies), range(20)))
    assert [response.status_code for response in responses] == [200] * 20
    assert idp.stats()["token"]["refresh_token"] == 1
    # The refresh token stored by that one refresh is the newest: the next refresh works with it.
    wait_until_refresh_is_due(stored_tokens(redis, live_app.env, http))
    assert own_profile(live_app, cookies).status_code == 200
    assert idp.stats()["token"]["refresh_token"] == 2


def test_invalid_grant_ends_the_session_and_leaves_nothing_in_redis(live_app, idp, redis):
    http = sign_in(live_app.url, "carol")
    record = stored_tokens(redis, live_app.env, http)
    # Someone else redeems the refresh token: the session's copy is now stale (rotation) and
    # presenting it again revokes the grant.
    assert oidc_driver.refresh(idp.issuer, "profile-poke-web-short", record["refresh_token"]).status_code == 200
    wait_until_refresh_is_due(record)
    response = own_profile(live_app, http)
    assert response.status_code == 401
    assert response.json()["error"] == {"code": "unauthorized", "message": "the session has ended; sign in again"}
    ref = session_ref(live_app.env["SECRET_KEY"], http.cookies[SESSION_COOKIE])
    assert list(redis.scan_iter(match=f"{live_app.env['REDIS_KEY_PREFIX']}*{ref}*")) == []


def test_a_provider_outage_keeps_the_session_and_answers_503(workdir, redis_url, redis):
    app_port = 1  # the in-process app never listens; only its redirect URI must be registered
    server, provider = start_own_idp(workdir, [app_port], IDP_SHORT_ACCESS_TOKEN_TTL="3")
    try:
        env = integration_env(provider, redis_url, OIDC_CLIENT_ID="profile-poke-web-short", IDP_TIMEOUT="1")
        app = create_app(Config(env))
        import_demo_users(app)
        client = app.test_client()
        callback = oidc_driver.login_at_idp(requests.Session(), start_login(client), "alice", PASSWORD)
        assert client.get(callback_path(callback)).status_code == 302
    finally:
        server.stop()
    time.sleep(3.5)  # the access token has expired and the provider is gone
    response = client.get("/api/v1/me/profile", headers=CSRF)
    assert response.status_code == 503
    assert response.json["error"] == {"code": "unavailable", "message": "the identity provider is unavailable"}
    assert response.headers["Retry-After"]
    cookie = client.get_cookie(SESSION_COOKIE).value
    assert redis.exists(token_key(env, cookie)) == 1
    assert client.get("/auth/session").json["authenticated"] is True
