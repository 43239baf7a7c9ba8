"""The session check (GET /auth/session) against the real Redis and dev provider, with a short idle
timeout: it says how the user signed in and when the idle timeout ends, and never extends the
session; only API calls (and signing in) do."""

import time

import pytest

from app.sessions.interface import session_ref
from app.store.keys import Keys
from dev.oidc_driver import ACR_PASSWORD
from tests.helpers.settings import CSRF
from tests.helpers.signin import cookie_value, signed_in_client

pytestmark = pytest.mark.integration

IDLE = 3


@pytest.fixture
def short_idle_app(make_app):
    return make_app(SESSION_IDLE_TIMEOUT=str(IDLE))


def session_key_ttls(app, client, redis) -> list[int]:
    """The time to live in ms of the session's two keys (token set, Flask-Session), negative when gone."""
    keys = Keys(app.config["REDIS_KEY_PREFIX"])
    ref = session_ref(app.config["SECRET_KEY"], cookie_value(client, app.config["SESSION_COOKIE_NAME"]))
    return [redis.pttl(keys.token_set(ref)), redis.pttl(keys.session(ref))]


def test_the_session_check_says_how_the_user_signed_in_and_when_the_idle_timeout_ends(short_idle_app):
    before = int(time.time())
    client = signed_in_client(short_idle_app, "alice")
    session = client.get("/auth/session").json
    assert (session["authenticated"], session["user"]) == (True, "alice")
    assert (session["acr"], session["amr"]) == (ACR_PASSWORD, ["pwd"])
    assert before - 2 <= session["auth_time"] <= time.time()
    assert before + IDLE - 1 <= session["idle_expires_at"] <= time.time() + IDLE
    assert session["idle_expires_at"] <= session["expires_at"]
    assert session["idle_timeout"] == IDLE


def test_polling_the_session_check_for_longer_than_the_idle_timeout_signs_the_tab_out(short_idle_app, redis):
    client = signed_in_client(short_idle_app, "alice")
    first = client.get("/auth/session").json
    deadline = time.time() + IDLE + 1.5
    answers = []
    while time.time() < deadline:
        answers.append(client.get("/auth/session").json)
        time.sleep(0.4)
    assert len(answers) >= 10
    alive = [answer for answer in answers if answer["authenticated"]]
    assert {answer["idle_expires_at"] for answer in alive} == {first["idle_expires_at"]}  # polls never move it
    assert answers[-1] == {"authenticated": False}
    assert session_key_ttls(short_idle_app, client, redis) == [-2, -2]  # both keys gone from Redis
    ended = client.get("/api/v1/me/profile", headers=CSRF)
    assert ended.status_code == 401
    assert ended.json["error"] == {"code": "unauthorized", "message": "the session has ended; sign in again"}


def test_api_calls_keep_the_session_in_while_the_tab_polls(short_idle_app):
    client = signed_in_client(short_idle_app, "alice")
    deadline = time.time() + 2 * IDLE + 1
    while time.time() < deadline:
        assert client.get("/auth/session").json["authenticated"] is True
        assert client.get("/api/v1/me/profile", headers=CSRF).status_code == 200
        time.sleep(0.8)
    assert client.get("/auth/session").json["authenticated"] is True


def test_idle_expires_at_moves_with_api_calls_and_not_with_polls(short_idle_app, redis):
    client = signed_in_client(short_idle_app, "alice")
    first = client.get("/auth/session").json["idle_expires_at"]
    ttls = session_key_ttls(short_idle_app, client, redis)
    time.sleep(1.5)
    polled = client.get("/auth/session").json["idle_expires_at"]
    after_polls = session_key_ttls(short_idle_app, client, redis)
    assert polled == first
    assert all(0 < later < earlier - 1000 for later, earlier in zip(after_polls, ttls, strict=True))
    assert client.get("/api/v1/me/profile", headers=CSRF).status_code == 200
    moved = client.get("/auth/session").json["idle_expires_at"]
    assert moved > first
    assert all(ttl > IDLE * 1000 - 1000 for ttl in session_key_ttls(short_idle_app, client, redis))
