"""Bounded by design, against the real Redis and provider: at most five pending sign-ins per browser (in
its cookies, nothing in Redis), rate limits per client address, out-of-memory as 503, and no pickle ever
read from a session key."""

import os
import pickle
import secrets
import time

import pytest
import redis as redis_py
import requests

from app import create_app
from app.auth.pending import MAX_PENDING, USED_UP
from app.extensions import make_redis
from app.sessions.interface import session_ref
from app.store.keys import Keys
from config import Config
from dev import oidc_driver
from dev.services import free_port, start_redis
from tests.helpers.pages import error_page_message
from tests.helpers.real_services import PASSWORD, import_demo_users, integration_env
from tests.helpers.settings import CSRF, SESSION_COOKIE
from tests.helpers.signin import callback_path, login_cookie, signed_in_client, start_login, state_of

pytestmark = pytest.mark.integration


REPLACED = (
    "this sign-in was started in another browser, or newer sign-ins in this one replaced it; please sign in again"
)


def test_a_browser_has_at_most_five_pending_sign_ins_and_the_oldest_goes_first(make_app, keys_of):
    app = make_app(OIDC_PAR="off")  # the states in the redirects, to find their cookies
    client = app.test_client()
    before = keys_of(app)
    starts = [start_login(client) for _ in range(MAX_PENDING + 3)]
    assert [bool(login_cookie(client, state_of(url))) for url in starts] == [False] * 3 + [True] * MAX_PENDING
    http = requests.Session()
    oldest = oidc_driver.login_at_idp(http, starts[0], "alice", PASSWORD)
    refused = client.get(callback_path(oldest))
    assert (refused.status_code, error_page_message(refused)) == (400, REPLACED)
    newest = oidc_driver.login_at_idp(http, starts[-1], "alice", PASSWORD)
    assert client.get(callback_path(newest)).status_code == 302
    assert list(login_cookie(client, state_of(starts[-1])).values()) == [USED_UP]  # a reload reads "used"
    # Eight sign-ins started, one finished: Redis holds its used state, its session and four rate-limit
    # windows (the starts' and the callback's, each for the client and its /24).
    added = sorted(key.split(":")[1] for key in keys_of(app) if key not in before)
    assert added == [*["limits"] * 4, "login-used", "session", "session-end", "sessions", "sessions-of", "tokens"]


def test_a_return_to_over_512_characters_signs_in_to_the_root(app):
    client = app.test_client()
    callback = oidc_driver.login_at_idp(requests.Session(), start_login(client, "/" + "x" * 600), "bob", PASSWORD)
    assert client.get(callback_path(callback)).headers["Location"] == "/"


def test_sign_in_starts_are_limited_per_client_address_behind_the_proxy(make_app, redis):
    app = make_app(RATE_LIMIT_LOGIN="3 per minute", PROXY_HOPS="1")
    client = app.test_client()
    first = {"X-Forwarded-For": "203.0.113.7"}
    assert [client.get("/auth/login", headers=first).status_code for _ in range(3)] == [302, 302, 302]
    refused = client.get("/auth/login", headers=first)
    assert refused.status_code == 429
    assert 0 < int(refused.headers["Retry-After"]) <= 60
    assert "too many requests from this address" in refused.get_data(as_text=True)
    assert client.get("/auth/login", headers={"X-Forwarded-For": "203.0.113.8"}).status_code == 302
    limit_keys = list(redis.scan_iter(match=f"{app.extensions['profile_poke'].store.keys.rate_limits()}:*"))
    assert limit_keys and all(redis.ttl(key) > 0 for key in limit_keys)


def test_junk_exchanges_reach_the_token_endpoint_no_more_often_than_the_limit(make_app, idp):
    app = make_app(RATE_LIMIT_EXCHANGE="2 per minute")
    client = app.test_client()
    junk = {"code": "junk", "code_verifier": "v" * 43, "redirect_uri": app.config["EXCHANGE_REDIRECT_URIS"][0]}
    idp.reset_stats()
    answers = [client.post("/auth/exchange", json=junk, headers=CSRF) for _ in range(6)]
    assert [answer.status_code for answer in answers] == [400, 400, 429, 429, 429, 429]
    assert answers[-1].json["error"] == {
        "code": "too_many_requests",
        "message": "too many requests from this address; try again later",
    }
    assert int(answers[-1].headers["Retry-After"]) > 0
    assert idp.stats()["token"]["authorization_code"] == 2


def test_a_pickle_in_a_session_key_is_never_unpickled(app, redis, tmp_path):
    marker = tmp_path / "pwned"

    class Exploit:
        def __reduce__(self):
            return (os.system, (f"touch {marker}",))

    sid = secrets.token_urlsafe(32)
    key = Keys(app.config["REDIS_KEY_PREFIX"]).session(session_ref(app.config["SECRET_KEY"], sid))
    redis.set(key, pickle.dumps(Exploit()), ex=60)
    client = app.test_client()
    client.set_cookie(SESSION_COOKIE, sid)
    response = client.get("/auth/session")
    assert (response.status_code, response.json) == (200, {"authenticated": False})
    assert not marker.exists()
    assert client.get("/auth/login").status_code == 302  # and the service goes on normally


@pytest.fixture
def full_redis(workdir):
    """A redis-server with a tiny maxmemory and `noeviction`: full, it refuses every write."""
    port = free_port()
    args = ("--maxmemory", "3mb", "--maxmemory-policy", "noeviction")
    server = start_redis(port, workdir=workdir / "oom-redis", extra_args=args)
    yield f"redis://127.0.0.1:{port}/0"
    server.stop()


def fill_up(url: str) -> None:
    """Write ballast until Redis says OOM; then take away the last few bytes of headroom, which
    come and go with client buffers, so that every write is refused."""
    admin = make_redis(url, socket_timeout=5)
    with pytest.raises(redis_py.exceptions.OutOfMemoryError):
        for index in range(100_000):
            admin.set(f"ballast:{index}", b"x" * 8192)
    admin.config_set("maxmemory", admin.info("memory")["used_memory"] - 64 * 1024)
    admin.close()


def test_redis_out_of_memory_is_a_503_on_sign_in_refresh_and_poke(full_redis, idp):
    env = integration_env(idp, full_redis, OIDC_CLIENT_ID="profile-poke-web-short")  # 62 s tokens: always refresh
    app = create_app(Config(env))
    import_demo_users(app)
    client = signed_in_client(app, "alice")
    fill_up(full_redis)
    time.sleep(2.5)  # the 62-second access token is now inside the 60-second refresh margin
    answers = {
        "sign-in": app.test_client().get("/auth/login"),
        "refresh": client.get("/api/v1/me/profile", headers=CSRF),
        "poke": client.post("/api/v1/pokes", json={"username": "bob"}, headers=CSRF),
        "exchange": app.test_client().post("/auth/exchange", json={}, headers=CSRF),
    }
    for name, response in answers.items():
        assert response.status_code == 503, (name, response.get_data(as_text=True))
        assert response.headers["Retry-After"] == "5", name
        assert "storage is full" in response.get_data(as_text=True), name
    assert answers["poke"].json["error"]["code"] == "unavailable"
    admin = make_redis(full_redis, socket_timeout=5)
    admin.config_set("maxmemory", 0)
    assert app.test_client().get("/auth/login").status_code == 302  # it recovers by itself
