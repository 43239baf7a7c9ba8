"""Back-channel logout tokens against the stub provider's keys: what ends sessions and what is
refused with 400 invalid_request, each for its own reason."""

import time
import uuid
from urllib.parse import urlsplit

import fakeredis
import pytest
import redis
import requests

from app import create_app
from app.extensions import services
from app.sessions import backchannel
from app.sessions.backchannel import MAX_AGE
from app.store.keys import Keys
from app.store.profile_record import Profile
from config import Config
from tests.helpers.apps import app_with_alice
from tests.helpers.clock import FakeClock
from tests.helpers.settings import CSRF, app_env, session_cookie_name
from tests.helpers.stub_op import StubOP

EVENT = {"http://schemas.openid.net/event/backchannel-logout": {}}


@pytest.fixture(scope="module")
def op():
    stub = StubOP()
    stub.id_token = lambda claims: stub.sign_id({**claims, "sid": "op-session-1"})
    yield stub
    stub.stop()


@pytest.fixture
def app(op, fake_redis):
    return app_with_alice(op.issuer, fake_redis)


def signed_in(app):
    client = app.test_client()
    authorize = requests.get(client.get("/auth/login").headers["Location"], allow_redirects=False, timeout=5)
    url = urlsplit(authorize.headers["Location"])
    assert client.get(f"{url.path}?{url.query}").status_code == 302
    assert client.get("/auth/session").json["authenticated"] is True
    return client


def logout_token(op, *, header=None, **changes) -> str:
    now = int(time.time())
    claims = {
        "iss": op.issuer,
        "aud": "profile-poke-web",
        "iat": now,
        "exp": now + 120,
        "jti": str(uuid.uuid4()),
        "events": EVENT,
        "sub": "user-sub-1",
        "sid": "op-session-1",
    }
    claims.update(changes)
    return op.sign({k: v for k, v in claims.items() if v is not None}, header={"typ": "logout+jwt", **(header or {})})


def post(app, token):
    return app.test_client().post("/auth/backchannel-logout", data={"logout_token": token})


def test_a_valid_logout_token_ends_the_sessions_of_its_provider_session(app, op):
    client = signed_in(app)
    response = post(app, logout_token(op))
    assert (response.status_code, response.headers["Cache-Control"]) == (200, "no-store")
    assert client.get("/auth/session").json == {"authenticated": False}
    assert client.get("/api/v1/me/profile", headers=CSRF).status_code == 401


def test_a_logout_is_audited_with_the_subject_the_provider_session_and_the_sessions_it_ended(app, op, audit_lines):
    signed_in(app)
    (started,) = audit_lines.events("signin.succeeded")
    assert post(app, logout_token(op)).status_code == 200
    (ended,) = audit_lines.events("session.ended")
    assert {name: ended.get(name) for name in ("reason", "sub", "provider_session", "ended")} == {
        "reason": "backchannel",
        "sub": "user-sub-1",
        "provider_session": "op-session-1",
        "ended": [started["session"]],
    }


def test_a_logout_token_with_only_sub_ends_every_session_of_the_user(app, op):
    first, second = signed_in(app), signed_in(app)
    assert post(app, logout_token(op, sid=None)).status_code == 200
    assert first.get("/auth/session").json == second.get("/auth/session").json == {"authenticated": False}


def test_a_logout_token_that_matches_no_session_is_still_a_200(app, op):
    client = signed_in(app)
    assert post(app, logout_token(op, sid="another-op-session", sub="someone-else")).status_code == 200
    assert client.get("/auth/session").json["authenticated"] is True


def test_a_typ_of_application_logout_jwt_in_any_case_is_accepted(app, op):
    client = signed_in(app)
    assert post(app, logout_token(op, header={"typ": "Application/Logout+JWT"})).status_code == 200
    assert client.get("/auth/session").json == {"authenticated": False}


# case -> (claim changes, header, the message, the reason its backchannel.refused event names)
TIMES = {"iat", "exp"}  # claims REFUSED gives as seconds from now
REFUSED = {
    "wrong aud": ({"aud": "another-client"}, None, "not issued to this client", "audience"),
    "wrong iss": ({"iss": "https://evil.example/realms/stub"}, None, "wrong issuer", "issuer"),
    "a nonce": ({"nonce": "n-1"}, None, "a logout token must not carry a nonce", "nonce"),
    "no events": ({"events": None}, None, "no back-channel logout event", "events"),
    "another event": (
        {"events": {"http://schemas.openid.net/event/other": {}}},
        None,
        "no back-channel logout event",
        "events",
    ),
    # Times as offsets from when the test runs (a table of absolute times, made at collection, went stale
    # in a run that reached it more than ten minutes later).
    "iat over 300 s old": ({"iat": -400, "exp": 60}, None, "issued too long ago", "too_old"),
    "iat in the future": ({"iat": 600}, None, "missing or future iat", "iat"),
    "expired": ({"exp": -600}, None, "expired", "expired"),
    "no jti": ({"jti": None}, None, "no jti", "jti"),
    "neither sid nor sub": ({"sid": None, "sub": None}, None, "neither sid nor sub", "no_subject"),
    "an empty sid and no sub": ({"sid": "", "sub": None}, None, "neither sid nor sub", "no_subject"),
    "a sid that is no string and no sub": ({"sid": 42, "sub": None}, None, "neither sid nor sub", "no_subject"),
    "a sub that is no string and no sid": ({"sid": None, "sub": 42}, None, "neither sid nor sub", "no_subject"),
    "a sub that is no string": ({"sub": 42}, None, "sub is not a string", "no_subject"),
    "a sid that is no string": ({"sid": 42}, None, "sid is not a string", "no_subject"),
    "an ID token's typ": ({}, {"typ": "JWT"}, "the token's typ is not logout+jwt", "typ"),
}


@pytest.mark.parametrize("case", REFUSED)
def test_a_bad_logout_token_is_refused_and_ends_nothing(app, op, audit_lines, case):
    changes, header, message, reason = REFUSED[case]
    now = int(time.time())
    changes = {claim: now + value if claim in TIMES else value for claim, value in changes.items()}
    client = signed_in(app)
    audit_lines.lines.clear()
    response = post(app, logout_token(op, header=header, **changes))
    assert response.status_code == 400
    assert (response.json["error"], response.json["error_description"]) == ("invalid_request", message)
    assert response.headers["Cache-Control"] == "no-store"
    assert client.get("/auth/session").json["authenticated"] is True
    (refused,) = audit_lines.events()
    assert (refused["event"], refused["reason"]) == ("backchannel.refused", reason)
    assert "sub" not in refused  # nothing a refused token claims is repeated as fact


def test_a_replayed_jti_is_refused_and_audited_with_its_verified_subject(app, op, audit_lines):
    token = logout_token(op, sid="nobody-here")
    assert post(app, token).status_code == 200
    replay = post(app, token)
    assert (replay.status_code, replay.json["error_description"]) == (400, "this logout token was already used")
    (refused,) = audit_lines.events("backchannel.refused")
    assert (refused.get("reason"), refused.get("sub")) == ("replayed", "user-sub-1")


@pytest.fixture
def frozen(monkeypatch):
    """The logout token checks' clock, standing still on a whole second: a claim can sit right on a bound."""
    monkeypatch.setattr(backchannel, "time", clock := FakeClock(start=float(int(time.time()))))
    return clock


# case -> (claims from the time now and the leeway, the status): each bound, met exactly or just inside
EDGES = {
    "iat as far ahead as the leeway allows": (lambda now, leeway: {"iat": now + leeway, "exp": None}, 200),
    "iat exactly MAX_AGE old": (lambda now, leeway: {"iat": now - MAX_AGE, "exp": None}, 200),
    "exp passed less than the leeway ago": (lambda now, leeway: {"iat": now - 120, "exp": now - leeway + 1}, 200),
    "exp passed exactly the leeway ago": (lambda now, leeway: {"iat": now - 120, "exp": now - leeway}, 400),
}


@pytest.mark.parametrize("case", EDGES)
def test_the_time_bounds_of_a_logout_token_hold_to_the_second(app, op, frozen, case):
    claims, status = EDGES[case]
    response = post(app, logout_token(op, sid="nobody-here", **claims(int(frozen.time()), app.config["TOKEN_LEEWAY"])))
    assert response.status_code == status
    if status == 400:
        assert response.json["error_description"] == "expired"


def test_the_jti_of_a_token_dated_ahead_is_remembered_until_the_token_can_no_longer_be_accepted(app, op, fake_redis):
    iat = int(time.time()) + app.config["TOKEN_LEEWAY"]  # the latest iat still accepted
    token = logout_token(op, sid="nobody-here", iat=iat, exp=None, jti="jti-ahead")
    assert post(app, token).status_code == 200
    accepted_for = iat + MAX_AGE - time.time()
    assert fake_redis.ttl(Keys(app.config["REDIS_KEY_PREFIX"]).logout_token("jti-ahead")) >= accepted_for


class RedisThatFailsOneDelete(fakeredis.FakeRedis):
    """fakeredis whose next pipeline that deletes keys raises ConnectionError, once armed."""

    armed = False

    def pipeline(self, transaction=True, shard_hint=None):
        pipe = super().pipeline(transaction, shard_hint)
        execute = pipe.execute

        def failing_execute(raise_on_error=True):
            if self.armed and any(args[0] == "DEL" for args, _ in pipe.command_stack):
                self.armed = False
                raise redis.ConnectionError("connection lost")
            return execute(raise_on_error)

        pipe.execute = failing_execute
        return pipe


@pytest.mark.parametrize("sid", ["op-session-1", None])
def test_a_logout_that_failed_midway_ends_the_sessions_when_the_provider_retries(op, sid):
    app = create_app(Config(app_env(op.issuer)), redis=(flaky := RedisThatFailsOneDelete()))
    with app.app_context():
        services().store.profiles.put(Profile("alice", "@alice", "Alice Liddell", sub="user-sub-1"))
    client, token = signed_in(app), logout_token(op, sid=sid)
    flaky.armed = True
    failed = post(app, token)
    assert (failed.status_code, failed.json["error"]["message"]) == (503, "the service's storage is unavailable")
    retry = post(app, token)
    assert (retry.status_code, retry.data) == (200, b"")
    assert client.get("/auth/session").json == {"authenticated": False}


def test_a_token_signed_by_another_key_or_missing_is_refused(app, op, audit_lines):
    forged = op.sign(
        {"iss": op.issuer, "aud": "profile-poke-web", "iat": int(time.time()), "jti": "x", "events": EVENT, "sub": "s"},
        key=StubOP.new_key(op.key.kid),
    )
    assert post(app, forged).json["error_description"] == "the token's signature is invalid"
    for form in ({}, {"logout_token": ""}):
        missing = app.test_client().post("/auth/backchannel-logout", data=form)
        assert (missing.status_code, missing.json["error_description"]) == (400, "logout_token is missing")
    reasons = [event["reason"] for event in audit_lines.events("backchannel.refused")]
    assert reasons == ["unverified", "missing", "missing"]


def test_the_back_channel_needs_no_cookie_and_no_csrf_header(app, op):
    response = app.test_client().post("/auth/backchannel-logout", data={"logout_token": logout_token(op)})
    assert response.status_code == 200
    assert "Set-Cookie" not in response.headers


def test_a_session_moved_by_a_secret_key_rotation_still_ends_by_its_provider_session(op, fake_redis):
    old_key, new_key = "old-" + "k" * 40, "new-" + "k" * 40
    before = create_app(Config(app_env(op.issuer, SECRET_KEY=old_key, REDIS_KEY_PREFIX="rot:")), redis=fake_redis)
    with before.app_context():
        services().store.profiles.put(Profile("alice", "@alice", "Alice Liddell", sub="user-sub-1"))
    cookie = signed_in(before).get_cookie(session_cookie_name()).value
    after = create_app(
        Config(app_env(op.issuer, SECRET_KEY=new_key, SECRET_KEY_FALLBACKS=old_key, REDIS_KEY_PREFIX="rot:")),
        redis=fake_redis,
    )
    client = after.test_client()
    client.set_cookie(session_cookie_name(), cookie)
    assert client.get("/api/v1/me/profile", headers=CSRF).status_code == 200  # moved to its new name
    assert post(after, logout_token(op, sub="someone-else")).status_code == 200  # matched by sid alone
    response = client.get("/api/v1/me/profile", headers=CSRF)
    assert (response.status_code, response.json["error"]["message"]) == (401, "the session has ended; sign in again")
