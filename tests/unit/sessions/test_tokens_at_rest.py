"""Tokens at rest, through the whole app on fakeredis and the stub provider: sealed in Redis, a
record no key opens ends its session cleanly, and SECRET_KEY_FALLBACKS rotates without a sign-out."""

import json
import secrets
from urllib.parse import urlsplit

import pytest
import requests

from app import create_app
from app.extensions import services
from app.sessions.interface import session_ref
from app.sessions.sealing import VERSION
from app.store.keys import Keys
from app.store.profile_record import Profile
from config import Config
from tests.helpers.sealed import opened_token_set
from tests.helpers.settings import CSRF, SESSION_COOKIE, app_env
from tests.helpers.stub_op import StubOP

OLD_KEY, NEW_KEY = secrets.token_urlsafe(32), secrets.token_urlsafe(32)


@pytest.fixture(scope="module")
def op():
    stub = StubOP()
    yield stub
    stub.stop()


def make_app(op, redis, **overrides):
    env = app_env(op.issuer, REDIS_KEY_PREFIX="rest:", **overrides)
    app = create_app(Config(env), redis=redis)
    with app.app_context():
        services().store.profiles.put(Profile("alice", "@alice", "Alice Liddell", sub="user-sub-1"))
    return app


def signed_in(app, client=None):
    client = client or app.test_client()
    authorize = requests.get(client.get("/auth/login").headers["Location"], allow_redirects=False, timeout=5)
    url = urlsplit(authorize.headers["Location"])
    assert client.get(f"{url.path}?{url.query}").status_code == 302
    return client


def token_key(app, client) -> str:
    cookie = client.get_cookie(SESSION_COOKIE).value
    return Keys("rest:").token_set(session_ref(app.config["SECRET_KEY"], cookie))


def test_the_tokens_are_sealed_in_redis_and_open_only_with_the_cookie(op, fake_redis):
    app = make_app(op, fake_redis)
    client = signed_in(app)
    raw = fake_redis.get(token_key(app, client))
    stored = json.loads(raw)
    assert stored["sealed"].startswith(f"{VERSION}.") and not {"access_token", "refresh_token", "id_token"} & set(
        stored
    )
    cookie = client.get_cookie(SESSION_COOKIE).value
    tokens = opened_token_set(raw, app.config["SECRET_KEY"], cookie)
    everything = b"".join(fake_redis.dump(key) or b"" for key in fake_redis.keys("*"))
    for secret in (tokens["access_token"], tokens["refresh_token"], tokens["id_token"], cookie):
        assert secret.encode() not in everything


@pytest.mark.parametrize("tamper", ["plaintext from before sealing", "sealed for another cookie"])
def test_a_record_that_cannot_be_unsealed_ends_the_session_cleanly(op, fake_redis, tamper):
    app = make_app(op, fake_redis)
    client = signed_in(app)
    key = token_key(app, client)
    stored = json.loads(fake_redis.get(key))
    if tamper == "plaintext from before sealing":
        stored = {**stored, "access_token": "at", "refresh_token": "rt", "id_token": "it"}
        del stored["sealed"]
    else:
        stored["sealed"] = json.loads(fake_redis.get(token_key(app, signed_in(app))))["sealed"]
    fake_redis.set(key, json.dumps(stored), px=60_000)
    response = client.get("/api/v1/me/profile", headers=CSRF)
    assert (response.status_code, response.json["error"]["message"]) == (401, "the session has ended; sign in again")
    assert client.get("/auth/session").json == {"authenticated": False}
    assert fake_redis.get(key) is None


def test_a_new_secret_key_with_the_old_one_as_fallback_keeps_sessions_and_reseals_them(op, fake_redis):
    before = make_app(op, fake_redis, SECRET_KEY=OLD_KEY)
    client = signed_in(before)
    cookie = client.get_cookie(SESSION_COOKIE).value
    after = make_app(op, fake_redis, SECRET_KEY=NEW_KEY, SECRET_KEY_FALLBACKS=f"unused-{OLD_KEY},{OLD_KEY}")
    moved = after.test_client()
    moved.set_cookie(SESSION_COOKIE, cookie)
    assert moved.get("/api/v1/me/profile", headers=CSRF).json["data"]["handle"] == "@alice"
    assert moved.get("/auth/session").json["user"] == "alice"
    assert fake_redis.get(Keys("rest:").token_set(session_ref(OLD_KEY, cookie))) is None
    raw = fake_redis.get(Keys("rest:").token_set(session_ref(NEW_KEY, cookie)))
    assert opened_token_set(raw, NEW_KEY, cookie)["access_token"]  # sealed again under the new key alone


def test_without_the_fallback_a_rotated_secret_key_signs_the_session_out(op, fake_redis):
    client = signed_in(make_app(op, fake_redis, SECRET_KEY=OLD_KEY))
    cookie = client.get_cookie(SESSION_COOKIE).value
    rotated = make_app(op, fake_redis, SECRET_KEY=NEW_KEY).test_client()
    rotated.set_cookie(SESSION_COOKIE, cookie)
    assert rotated.get("/api/v1/me/profile", headers=CSRF).status_code == 401
