"""When the provider refuses a session's access token, whether a newer one exists: the session's newest
token when it differs from the refused one, after any refresh in flight; never a provider call; on
fakeredis (which runs the store's Lua) with a fake provider-facing login client (issue 19 point 3)."""

import pytest

from app.challenges import SESSION_ENDED, Unauthorized
from app.errors import Unavailable
from app.sessions import refresh
from app.sessions.credentials import SessionTokens
from app.sessions.interface import session_ref
from app.sessions.refresh import WAIT_STEP
from app.sessions.sealing import Sealer
from app.store.keys import Keys
from app.store.session_index import SessionIndex
from app.store.tokensets import TokenSets
from tests.helpers.clock import FakeClock
from tests.helpers.fake_login_client import FakeLoginClient

SECRET = "a-secret-key-of-at-least-32-characters"
SID = "the-cookie-value"
REF = session_ref(SECRET, SID)
KEYS = Keys("t:")
SEALER = Sealer(SECRET, [])
REFRESH_WAIT = 0.3


@pytest.fixture
def login_client():
    client = FakeLoginClient()
    client.before_discover = lambda: pytest.fail("the provider was asked")
    return client


@pytest.fixture
def token_sets(fake_redis):
    return TokenSets(fake_redis, KEYS)


def signed_in(token_sets, login_client, *, expires_in: int, refresh_wait: float = REFRESH_WAIT) -> SessionTokens:
    """Session tokens with session SID signed in, its access token `at-0` living `expires_in` seconds."""
    tokens = SessionTokens(
        token_sets,
        login_client,
        SessionIndex(token_sets._redis, KEYS),
        secret_key=SECRET,
        idle_timeout=1800,
        max_age=28800,
        idp_timeout=0.05,
        refresh_wait=refresh_wait,
    )
    response = {"access_token": "at-0", "refresh_token": "rt-0", "expires_in": expires_in, "scope": "openid"}
    tokens.start(SID, username="alice", sub="sub-alice", response=response)
    return tokens


@pytest.fixture
def tokens(token_sets, login_client):
    return signed_in(token_sets, login_client, expires_in=300)


@pytest.fixture
def clock(monkeypatch):
    """The refresh protocol's clock, moved only by the test and by the waiter's own sleeps."""
    monkeypatch.setattr(refresh, "time", fake := FakeClock())
    return fake


def store_refreshed(token_sets) -> None:
    """What another request's refresh writes: the next version of the record, with a new access token."""
    stored, _ = token_sets.load(REF)
    record = SEALER.open_record(SID, stored)[0]
    newer = {**record, "access_token": "at-newer", "refresh_token": "rt-newer"}
    assert token_sets.replace(REF, record["v"], SEALER.seal_record(SID, newer))


def test_a_newer_token_already_stored_is_returned_without_waiting(tokens, token_sets, login_client, clock):
    store_refreshed(token_sets)
    assert tokens.newer_access_token(SID, "at-0") == "at-newer"
    assert clock.slept == []
    assert login_client.refreshed_with == []


def test_the_refused_token_still_the_newest_with_no_refresh_in_flight_gives_none_at_once(tokens, login_client, clock):
    assert tokens.newer_access_token(SID, "at-0") is None
    assert clock.slept == []
    assert login_client.refreshed_with == []


def test_the_refused_token_still_the_newest_is_never_refreshed_even_in_the_refresh_window(
    token_sets, login_client, clock
):
    tokens = signed_in(token_sets, login_client, expires_in=30)  # due for a refresh
    assert tokens.newer_access_token(SID, "at-0") is None
    assert login_client.refreshed_with == []


def test_a_refresh_in_flight_is_waited_for_and_its_new_token_returned(tokens, token_sets, login_client, clock):
    assert token_sets.lock(REF, "other-request", 5000)
    clock.at(0.1, store_refreshed, token_sets)  # stored 0.1 s into the wait, its lock released later
    assert tokens.newer_access_token(SID, "at-0") == "at-newer"
    assert 0.1 <= sum(clock.slept) < 0.1 + 2 * WAIT_STEP  # taken at the first look after it was stored
    assert login_client.refreshed_with == []


def test_a_refresh_in_flight_that_stores_nothing_leaves_no_newer_token(tokens, token_sets, clock):
    assert token_sets.lock(REF, "other-request", 5000)
    clock.at(0.1, token_sets.unlock, REF, "other-request")  # its provider was down: nothing stored
    assert tokens.newer_access_token(SID, "at-0") is None
    assert 0.1 <= sum(clock.slept) < 0.1 + 2 * WAIT_STEP


def test_a_refresh_in_flight_that_outlasts_the_wait_is_503(tokens, token_sets, clock):
    assert token_sets.lock(REF, "other-request", 5000)
    with pytest.raises(Unavailable) as raised:
        tokens.newer_access_token(SID, "at-0")
    assert raised.value.message == "the session's tokens are being refreshed; try again"
    assert REFRESH_WAIT <= round(sum(clock.slept), 9) < REFRESH_WAIT + 2 * WAIT_STEP  # its wait, no more


def test_a_refresh_in_flight_and_no_time_to_wait_is_503_at_the_first_look(token_sets, login_client, clock):
    tokens = signed_in(token_sets, login_client, expires_in=300, refresh_wait=0)  # its deadline is now
    assert token_sets.lock(REF, "other-request", 5000)
    with pytest.raises(Unavailable) as raised:
        tokens.newer_access_token(SID, "at-0")
    assert raised.value.message == "the session's tokens are being refreshed; try again"
    assert clock.slept == []  # at its deadline it gives up: no step more


def test_a_session_ended_during_the_wait_is_401_session_ended(tokens, token_sets, clock):
    assert token_sets.lock(REF, "other-request", 5000)
    clock.at(0.1, token_sets.delete, REF)  # the refresh got invalid_grant and ended the session
    with pytest.raises(Unauthorized) as raised:
        tokens.newer_access_token(SID, "at-0")
    assert raised.value.message == SESSION_ENDED


def test_a_session_ended_before_the_retry_is_401_session_ended(tokens, token_sets, clock):
    token_sets.delete(REF)
    with pytest.raises(Unauthorized) as raised:
        tokens.newer_access_token(SID, "at-0")
    assert raised.value.message == SESSION_ENDED
    assert clock.slept == []
