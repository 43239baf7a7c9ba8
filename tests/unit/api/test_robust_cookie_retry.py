"""The guard's one retry of a cookie request whose session token the provider calls inactive (a provider
that revokes the old access token at refresh): the app in introspection mode on fakeredis, against a
stub RFC 7662 endpoint on loopback that refuses the tokens it is told to (issue 19 point 3)."""

import pytest

from app import create_app
from app.extensions import services
from app.sessions import refresh
from app.sessions.interface import session_ref
from app.sessions.sealing import Sealer
from app.store.keys import Keys
from app.store.profile_record import Profile
from app.store.tokensets import TokenSets
from config import Config
from tests.helpers.clock import FakeClock
from tests.helpers.settings import CSRF, SESSION_COOKIE, app_env
from tests.helpers.stub_issuer import StubIssuer

SID = "the-session-cookie"


class RevokingIssuer(StubIssuer):
    """A stub issuer whose introspection endpoint calls the tokens in `revoked` inactive, lists every
    token it was asked about in `asked`, and runs `while_asked(token)` before it answers."""

    def __init__(self, key):
        super().__init__(key)
        self.revoked: set[str] = set()
        self.asked: list[str] = []
        self.while_asked = lambda token: None

    def discovery(self) -> dict:
        return {**super().discovery(), "introspection_endpoint": f"{self.issuer}/introspect"}

    def answer(self, method, path, params, headers):
        if method != "POST" or not path.endswith("/introspect"):
            return super().answer(method, path, params, headers)
        token = params["token"]
        self.asked.append(token)
        self.while_asked(token)
        if token in self.revoked:
            return 200, {}, {"active": False}
        return 200, {}, {**self.access_claims(), "active": True, "token_type": "Bearer"}


@pytest.fixture
def provider(key):
    issuer = RevokingIssuer(key)
    yield issuer
    issuer.stop()


@pytest.fixture
def app(provider, fake_redis):
    settings = {
        "ACCESS_TOKEN_VALIDATION": "introspection",
        "INTROSPECTION_CLIENT_ID": "api",
        "INTROSPECTION_CLIENT_SECRET": "api-secret",
    }
    app = create_app(Config(app_env(provider.issuer, **settings)), redis=fake_redis)
    with app.app_context():
        services().store.profiles.put(Profile("alice", "@alice", "Alice", sub=provider.access_claims()["sub"]))
        response = {"access_token": "at-old", "refresh_token": "rt-old", "expires_in": 300}
        services().session_tokens.start(SID, username="alice", sub=provider.access_claims()["sub"], response=response)
    return app


@pytest.fixture
def session_store(app, fake_redis):
    return SessionStore(app, fake_redis)


class SessionStore:
    """The session's record in Redis, as another request or instance changes it."""

    def __init__(self, app, redis):
        self._secret = app.config["SECRET_KEY"]
        self._ref = session_ref(self._secret, SID)
        self.token_sets = TokenSets(redis, Keys(app.config["REDIS_KEY_PREFIX"]))

    def store_refreshed(self, access_token: str = "at-new") -> None:
        """What another request's refresh writes: the next version, with a new access token."""
        sealer = Sealer(self._secret, [])
        record = sealer.open_record(SID, self.token_sets.load(self._ref)[0])[0]
        newer = {**record, "access_token": access_token, "refresh_token": "rt-new"}
        assert self.token_sets.replace(self._ref, record["v"], sealer.seal_record(SID, newer))

    def lock(self) -> None:
        assert self.token_sets.lock(self._ref, "other-request", 30_000)

    def unlock(self) -> None:
        self.token_sets.unlock(self._ref, "other-request")

    def exists(self) -> bool:
        return self.token_sets.exists(self._ref)


def own_profile(app, *, bearer: str | None = None):
    client = app.test_client()
    client.set_cookie(SESSION_COOKIE, SID)
    headers = {**CSRF, **({"Authorization": f"Bearer {bearer}"} if bearer else {})}
    return client.get("/api/v1/me/profile", headers=headers)


def test_a_session_token_revoked_by_a_refresh_that_finished_meanwhile_is_retried_with_the_newest(
    app, provider, session_store
):
    provider.revoked = {"at-old"}
    provider.while_asked = lambda token: token == "at-old" and session_store.store_refreshed()
    response = own_profile(app)
    assert response.status_code == 200
    assert response.json["data"]["handle"] == "@alice"
    assert provider.asked == ["at-old", "at-new"]


def test_a_session_token_refused_while_a_refresh_is_in_flight_waits_for_it_and_retries(
    app, provider, session_store, monkeypatch
):
    monkeypatch.setattr(refresh, "time", clock := FakeClock())
    provider.revoked = {"at-old"}
    session_store.lock()  # another request is refreshing; it stores its tokens 0.2 s into our wait
    clock.at(0.2, lambda: (session_store.store_refreshed(), session_store.unlock()))
    response = own_profile(app)
    assert response.status_code == 200
    assert provider.asked == ["at-old", "at-new"]
    assert 0.2 <= sum(clock.slept) < 0.3


def test_a_retry_whose_newest_token_is_refused_too_is_401_after_two_introspections(app, provider, session_store):
    provider.revoked = {"at-old", "at-new"}
    provider.while_asked = lambda token: token == "at-old" and session_store.store_refreshed()
    response = own_profile(app)
    assert response.status_code == 401
    assert response.json["error"]["code"] == "invalid_token"
    assert 'error="invalid_token"' in response.headers["WWW-Authenticate"]
    assert provider.asked == ["at-old", "at-new"]  # once, not a loop
    assert session_store.exists()  # a refused token never ended the session, and still does not


def test_a_refused_session_token_that_is_still_the_newest_is_401_after_one_introspection(app, provider, session_store):
    provider.revoked = {"at-old"}
    response = own_profile(app)
    assert response.status_code == 401
    assert response.json["error"]["code"] == "invalid_token"
    assert provider.asked == ["at-old"]  # nothing newer: no second provider call
    assert session_store.exists()


def test_a_refused_bearer_token_is_never_retried_with_the_session_of_the_cookie_beside_it(app, provider, session_store):
    provider.revoked = {"at-old"}
    session_store.store_refreshed()  # the session the cookie names holds a newer, valid token
    response = own_profile(app, bearer="at-old")
    assert response.status_code == 401
    assert response.json["error"]["code"] == "invalid_token"
    assert provider.asked == ["at-old"]
