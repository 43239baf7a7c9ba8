"""A malformed token record in Redis (bad base64, truncated, wrong JSON shape or types, an AES-GCM
failure, tokens that decrypt to junk) ends its session: 401 / signed out on every session call, the
record removed, never a 500. Through the whole app on fakeredis and the stub provider."""

import json
import secrets
from urllib.parse import urlsplit

import pytest
import requests

from app import create_app
from app.extensions import services
from app.sessions.interface import session_ref
from app.sessions.sealing import REVOCATION, Sealer, Unsealable
from app.store.keys import Keys
from app.store.profile_record import Profile
from config import Config
from tests.helpers.malformed_records import MALFORMATIONS, SESSION_CALLS
from tests.helpers.settings import SESSION_COOKIE, app_env
from tests.helpers.stub_op import StubOP


@pytest.fixture(scope="module")
def op():
    stub = StubOP()
    yield stub
    stub.stop()


def signed_in(op, redis):
    app = create_app(Config(app_env(op.issuer, REDIS_KEY_PREFIX="malformed:")), redis=redis)
    with app.app_context():
        services().store.profiles.put(Profile("alice", "@alice", "Alice Liddell", sub="user-sub-1"))
        services().store.profiles.put(Profile("bob", "@bob", "Bob", sub="user-sub-2"))
    client = app.test_client()
    authorize = requests.get(client.get("/auth/login").headers["Location"], allow_redirects=False, timeout=5)
    url = urlsplit(authorize.headers["Location"])
    assert client.get(f"{url.path}?{url.query}").status_code == 302
    return app, client


@pytest.mark.parametrize("call", SESSION_CALLS)
@pytest.mark.parametrize("malformation", MALFORMATIONS)
def test_a_malformed_token_record_signs_the_session_out_and_is_removed(op, fake_redis, malformation, call):
    app, client = signed_in(op, fake_redis)
    cookie = client.get_cookie(SESSION_COOKIE).value
    key = Keys("malformed:").token_set(session_ref(app.config["SECRET_KEY"], cookie))
    stored = json.loads(fake_redis.get(key))
    fake_redis.set(key, MALFORMATIONS[malformation](stored, app.config["SECRET_KEY"], cookie), keepttl=True)
    request, answered_as_signed_out = SESSION_CALLS[call]
    response = request(client)
    assert answered_as_signed_out(response), (response.status_code, response.get_data(as_text=True)[:200])
    assert fake_redis.get(key) is None
    assert client.get("/auth/session").json == {"authenticated": False}


@pytest.mark.parametrize(
    "stored",
    [[], "v2.x", {"revocable": 5}, {"revocable": "v2.abc"}, {"revocable": "v2.AAAA"}],
    ids=["a list", "a string", "a number", "bad base64", "truncated"],
)
def test_an_unreadable_record_yields_no_refresh_token_to_revoke_and_no_error(stored):
    assert Sealer(secrets.token_urlsafe(32), []).revocable_refresh_token(stored) is None


def test_revocable_tokens_that_are_not_utf_8_yield_nothing_to_revoke():
    sealer = Sealer(secrets.token_urlsafe(32), [])
    assert sealer.revocable_refresh_token({"revocable": sealer.seal(REVOCATION, b"\xff\xfe")}) is None


@pytest.mark.parametrize("stored", [[], "sealed", 5, None], ids=["a list", "a string", "a number", "null"])
def test_a_stored_value_that_is_not_an_object_is_unsealable(stored):
    with pytest.raises(Unsealable):
        Sealer(secrets.token_urlsafe(32), []).open_record("cookie", stored)


@pytest.mark.parametrize("malformation", MALFORMATIONS)
def test_a_malformed_record_met_while_moving_it_to_a_new_secret_key_signs_the_session_out(op, fake_redis, malformation):
    app, client = signed_in(op, fake_redis)
    old_key = app.config["SECRET_KEY"]
    cookie = client.get_cookie(SESSION_COOKIE).value
    key = Keys("malformed:").token_set(session_ref(old_key, cookie))
    fake_redis.set(key, MALFORMATIONS[malformation](json.loads(fake_redis.get(key)), old_key, cookie), keepttl=True)
    env = app_env(op.issuer, REDIS_KEY_PREFIX="malformed:", SECRET_KEY=secrets.token_urlsafe(32))
    rotated = create_app(Config({**env, "SECRET_KEY_FALLBACKS": old_key}), redis=fake_redis).test_client()
    rotated.set_cookie(SESSION_COOKIE, cookie)
    response = rotated.get("/api/v1/me/profile", headers={"X-CSRF": "1"})
    assert (response.status_code, response.json["error"]["message"]) == (401, "the session has ended; sign in again")
    assert rotated.get("/auth/session").json == {"authenticated": False}
