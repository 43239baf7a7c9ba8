"""Back-channel logout end to end, and tokens at rest, against the real provider, Redis and the app
under gunicorn: the provider ends the user's session and the app's sessions end with it; no key in
Redis holds a token or the cookie."""

import time

import pytest

from app.sessions.interface import session_ref
from app.store.keys import Keys
from dev import oidc_driver
from dev.services import free_port
from tests.helpers.real_services import integration_env, start_live_app, start_own_idp
from tests.helpers.sealed import opened_token_set
from tests.helpers.settings import CSRF, SESSION_COOKIE
from tests.helpers.signin import sign_in

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def app_with_backchannel(workdir, redis_url):
    """The app under gunicorn, and a provider of its own that sends back-channel logouts to it."""
    port = free_port()
    uri = f"http://127.0.0.1:{port}/auth/backchannel-logout"
    idp_server, idp = start_own_idp(workdir, [port], IDP_BACKCHANNEL_LOGOUT_URI=uri)
    app_server, live = start_live_app(integration_env(idp, redis_url), port, workdir)
    yield live, idp
    app_server.stop()
    idp_server.stop()


def stored_tokens(redis, live, http) -> dict:
    cookie = http.cookies[SESSION_COOKIE]
    key = Keys(live.env["REDIS_KEY_PREFIX"]).token_set(session_ref(live.env["SECRET_KEY"], cookie))
    return opened_token_set(redis.get(key), live.env["SECRET_KEY"], cookie)


def every_value(redis) -> list[bytes]:
    """The contents of every key in Redis, whatever its type."""
    values = []
    for key in redis.scan_iter(count=1000):
        kind = redis.type(key).decode()
        if kind == "string":
            values.append(redis.get(key) or b"")
        elif kind == "hash":
            values += [part for pair in redis.hgetall(key).items() for part in pair]
        elif kind == "list":
            values += redis.lrange(key, 0, -1)
        elif kind == "zset":
            values += redis.zrange(key, 0, -1)
        elif kind == "set":
            values += list(redis.smembers(key))
        values.append(key)
    return values


def test_no_redis_key_holds_a_token_or_the_cookie_after_a_real_sign_in(app_with_backchannel, redis):
    live, _ = app_with_backchannel
    http = sign_in(live.url, "alice")
    assert http.get(f"{live.url}/api/v1/me/profile", headers=CSRF, timeout=10).status_code == 200
    tokens = stored_tokens(redis, live, http)
    secrets_held = {name: tokens[name] for name in ("access_token", "refresh_token", "id_token")}
    secrets_held["cookie"] = http.cookies[SESSION_COOKIE]
    assert all(len(value) >= 32 for value in secrets_held.values())
    values = every_value(redis)
    assert len(values) > 10
    found = {name for name, secret in secrets_held.items() for value in values if secret.encode() in value}
    assert found == set()


def test_the_provider_ending_the_users_session_ends_the_bff_session_within_a_second(app_with_backchannel):
    live, idp = app_with_backchannel
    http = sign_in(live.url, "bob")
    assert http.get(f"{live.url}/api/v1/me/profile", headers=CSRF, timeout=10).status_code == 200
    end_session = oidc_driver.discover(idp.issuer)["end_session_endpoint"]
    started = time.monotonic()
    # The user signs out at the provider itself (its end-session page), not through this app.
    oidc_driver.confirm_logout(http, f"{end_session}?client_id=profile-poke-web&post_logout_redirect_uri={live.url}/")
    deadline = started + 1.0
    while True:
        answer = http.get(f"{live.url}/api/v1/me/profile", headers=CSRF, timeout=10)
        if answer.status_code == 401 or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert answer.status_code == 401, answer.text
    assert time.monotonic() - started <= 1.0
    assert http.get(f"{live.url}/auth/session", timeout=10).json() == {"authenticated": False}
    assert "dev-idp backchannel logout sent to profile-poke-web" in idp_log(live)


def idp_log(live) -> str:
    return "".join(path.read_text() for path in live.log_path.parent.glob("idp-*.log"))
