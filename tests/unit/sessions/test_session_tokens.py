"""Every branch of the session-token refresh protocol, on fakeredis (which runs the store's Lua) with a
fake provider-facing login client: one refresher, waiters, races lost and won, ends and extensions."""

import threading
import time

import fakeredis
import pytest
import redis

from app.challenges import SESSION_ENDED, Unauthorized
from app.errors import ProviderUnavailable, Unavailable
from app.sessions import credentials, lifetime, records, refresh
from app.sessions.credentials import SessionTokens
from app.sessions.interface import session_ref
from app.sessions.records import REFRESH_MARGIN, sign_in_proof
from app.sessions.refresh import WAIT_STEP
from app.sessions.sealing import Sealer
from app.store import rotations
from app.store.keys import Keys
from app.store.profile_record import Profile
from app.store.session_index import SessionIndex
from app.store.tokensets import TokenSets
from tests.helpers.clock import FakeClock
from tests.helpers.fake_login_client import FakeLoginClient

SECRET = "a-secret-key-of-at-least-32-characters"
SID = "the-cookie-value"
REF = session_ref(SECRET, SID)
IDLE = 1800
KEYS = Keys("t:")
SEALER = Sealer(SECRET, [])


@pytest.fixture
def login_client():
    return FakeLoginClient()


@pytest.fixture
def token_sets(fake_redis):
    return TokenSets(fake_redis, KEYS)


@pytest.fixture
def tokens(token_sets, login_client):
    return SessionTokens(
        token_sets,
        login_client,
        SessionIndex(token_sets._redis, KEYS),
        secret_key=SECRET,
        idle_timeout=IDLE,
        max_age=28800,
        idp_timeout=0.05,
        refresh_wait=0.3,
    )


@pytest.fixture
def clock(monkeypatch):
    """The session tokens' clock, moved only by the test and by a waiter's own sleeps (WAIT_STEP each):
    whether a waiter sees another request's tokens before its wait runs out is staged, not raced."""
    fake = FakeClock()
    for module in (credentials, lifetime, records, refresh):  # one clock for the record, its life and its refresh
        monkeypatch.setattr(module, "time", fake)
    return fake


def sign_in(tokens, *, expires_in: int, refresh_token: str | None = "rt-0") -> dict:
    response = {"access_token": "at-0", "refresh_token": refresh_token, "expires_in": expires_in, "scope": "openid"}
    return tokens.start(SID, username="alice", sub="sub-alice", response=response)


def unsealed(raw: dict | None) -> dict | None:
    """A stored token set with its sealed tokens opened (they are sealed for the cookie SID)."""
    return None if raw is None else SEALER.open_record(SID, raw)[0]


def sealed(record: dict) -> dict:
    return SEALER.seal_record(SID, record)


def store_newer(token_sets) -> None:
    """What a concurrent refresher (one whose lock may have expired) writes: the next version."""
    record = stored(token_sets)
    newer = {**record, "access_token": "at-newer", "refresh_token": "rt-newer", "expires_at": time.time() + 300}
    assert token_sets.replace(REF, record["v"], sealed(newer))


def told(audit_lines) -> list[tuple]:
    """(event, reason, session, ended) of each audit event written so far."""
    return [(e["event"], e["reason"], e.get("session"), e.get("ended")) for e in audit_lines.events()]


def stored(token_sets) -> dict | None:
    return unsealed(token_sets.load(REF)[0])


def lock_is_free(token_sets) -> bool:
    if not token_sets.lock(REF, "probe", 1000):
        return False
    token_sets.unlock(REF, "probe")
    return True


def test_a_token_far_from_expiry_is_used_as_it_is(tokens, token_sets, login_client):
    sign_in(tokens, expires_in=300)
    assert tokens.credential_for_cookie(SID).access_token == "at-0"
    assert login_client.refreshed_with == []
    assert stored(token_sets)["v"] == 1


def test_a_token_with_exactly_the_refresh_margin_left_is_not_refreshed_yet(tokens, token_sets, login_client, clock):
    sign_in(tokens, expires_in=REFRESH_MARGIN)
    assert stored(token_sets)["expires_at"] - clock.time() == REFRESH_MARGIN  # the clock stands still
    assert tokens.credential_for_cookie(SID).access_token == "at-0"
    assert login_client.refreshed_with == []


def test_a_token_near_expiry_is_refreshed_and_stored_as_the_next_version(tokens, token_sets, login_client):
    sign_in(tokens, expires_in=30)
    assert tokens.credential_for_cookie(SID).access_token == "at-1"
    assert login_client.refreshed_with == ["rt-0"]
    record = stored(token_sets)
    assert (record["v"], record["access_token"], record["refresh_token"]) == (2, "at-1", "rt-1")
    assert lock_is_free(token_sets)


def test_concurrent_requests_refresh_once_and_the_waiter_gets_the_new_version(tokens, token_sets, login_client, clock):
    sign_in(tokens, expires_in=-10)
    refreshing, waiting, results = threading.Event(), threading.Event(), {}
    # The first request holds the lock in its refresh call until the second is waiting, and the second's
    # first wait step ends only once the first has stored its tokens: the same order however busy the
    # machine (a sleep racing the second request could let the first finish before the second looked).
    login_client.during_refresh = lambda: (refreshing.set(), waiting.wait(5))
    first = threading.Thread(target=lambda: results.update(first=tokens.credential_for_cookie(SID).access_token))
    first.start()
    assert refreshing.wait(5)
    clock.on_sleep = lambda: (waiting.set(), first.join(5))
    results["second"] = tokens.credential_for_cookie(SID).access_token  # finds the lock taken: waits
    first.join(5)
    assert results == {"first": "at-1", "second": "at-1"}
    assert login_client.refreshed_with == ["rt-0"]
    assert clock.slept == [WAIT_STEP]  # it waited one step and took the first request's tokens


def test_a_waiter_receives_the_version_another_instance_stored(tokens, token_sets, login_client, clock):
    sign_in(tokens, expires_in=-10)
    assert token_sets.lock(REF, "another-instance", 5000)
    clock.at(0.1, store_newer, token_sets)  # 0.1 s into the wait, whatever the machine's load
    assert tokens.credential_for_cookie(SID).access_token == "at-newer"
    assert 0.1 <= sum(clock.slept) < 0.1 + 2 * WAIT_STEP  # taken at the first look after it was stored
    assert login_client.refreshed_with == []


def test_a_waiter_gives_up_with_503_when_the_refresh_outlasts_its_wait(tokens, token_sets, login_client, clock):
    sign_in(tokens, expires_in=-10)
    assert token_sets.lock(REF, "another-instance", 5000)
    started = clock.monotonic()
    with pytest.raises(Unavailable) as refused:
        tokens.credential_for_cookie(SID)
    assert refused.value.status == 503
    assert refused.value.message == "the session's tokens are being refreshed; try again"
    assert 0.3 <= round(clock.monotonic() - started, 9) < 0.3 + 2 * WAIT_STEP  # its refresh_wait, no more
    assert login_client.refreshed_with == []


def test_a_waiter_with_no_time_to_wait_gives_up_with_503_at_once(token_sets, login_client, clock):
    tokens = SessionTokens(
        token_sets, login_client, index_of(token_sets), secret_key=SECRET, idle_timeout=IDLE, max_age=28800,
        idp_timeout=0.05, refresh_wait=0,
    )  # fmt: skip
    sign_in(tokens, expires_in=-10)
    assert token_sets.lock(REF, "another-instance", 5000)
    with pytest.raises(Unavailable) as refused:
        tokens.credential_for_cookie(SID)
    assert refused.value.message == "the session's tokens are being refreshed; try again"
    assert clock.slept == []  # at its deadline (now) it gives up: no step more


def test_a_waiter_waits_twice_the_provider_timeout_and_a_second_by_default(token_sets, login_client, clock):
    # Without refresh_wait, a waiter outlasts a refresh call of up to two provider timeouts (connect and
    # read) and a second more. Only the clock tells this apart from another default, so it is the
    # test's clock: on the machine's it would take seconds and be a race with the load.
    tokens = SessionTokens(
        token_sets, login_client, index_of(token_sets), secret_key=SECRET, idle_timeout=IDLE, max_age=28800,
        idp_timeout=2,
    )  # fmt: skip
    sign_in(tokens, expires_in=-10)
    assert token_sets.lock(REF, "another-instance", 9000)
    with pytest.raises(Unavailable):
        tokens.credential_for_cookie(SID)
    assert 5 <= round(sum(clock.slept), 9) < 5 + 2 * WAIT_STEP


def test_a_waiter_hears_401_when_the_session_ends_while_it_waits(tokens, token_sets, clock):
    sign_in(tokens, expires_in=-10)
    assert token_sets.lock(REF, "another-instance", 5000)
    clock.at(0.1, token_sets.delete, REF)  # signed out 0.1 s into the wait
    with pytest.raises(Unauthorized, match=SESSION_ENDED):
        tokens.credential_for_cookie(SID)
    assert sum(clock.slept) < 0.3  # heard before its wait ran out


def test_a_still_valid_token_is_used_while_another_request_refreshes(tokens, token_sets, login_client, clock):
    sign_in(tokens, expires_in=30)
    assert token_sets.lock(REF, "another-instance", 5000)
    assert tokens.credential_for_cookie(SID).access_token == "at-0"
    assert clock.slept == []  # no waiting
    assert login_client.refreshed_with == []


def test_a_newer_version_stored_before_the_lock_was_taken_is_used_as_it_is(tokens, token_sets, login_client):
    sign_in(tokens, expires_in=-10)
    login_client.before_discover = lambda: store_newer(token_sets)  # between the read and the lock
    assert tokens.credential_for_cookie(SID).access_token == "at-newer"
    assert login_client.refreshed_with == []
    assert stored(token_sets)["refresh_token"] == "rt-newer"


def test_a_session_that_ended_before_the_lock_was_taken_is_not_refreshed(tokens, token_sets, login_client):
    sign_in(tokens, expires_in=-10)
    login_client.before_discover = lambda: token_sets.delete(REF)  # signed out between the read and the lock
    with pytest.raises(Unauthorized, match=SESSION_ENDED):
        tokens.credential_for_cookie(SID)
    assert login_client.refreshed_with == []


def test_a_refresh_that_lost_the_compare_and_set_keeps_and_returns_the_newer_tokens(tokens, token_sets, login_client):
    sign_in(tokens, expires_in=-10)
    login_client.during_refresh = lambda: store_newer(token_sets)  # a refresher whose lock had expired
    assert tokens.credential_for_cookie(SID).access_token == "at-newer"
    assert login_client.refreshed_with == ["rt-0"]
    record = stored(token_sets)
    assert (record["v"], record["refresh_token"]) == (2, "rt-newer")
    assert lock_is_free(token_sets)


def test_invalid_grant_ends_the_session_and_everything_it_keeps(
    tokens, token_sets, login_client, fake_redis, audit_lines
):
    session_id = sign_in(tokens, expires_in=-10)["id"]
    fake_redis.set(KEYS.session(REF), "flask-session")
    login_client.refresh_answer = "invalid_grant"
    with pytest.raises(Unauthorized, match=SESSION_ENDED):
        tokens.credential_for_cookie(SID)
    assert fake_redis.exists(KEYS.token_set(REF), KEYS.session(REF), KEYS.refresh_lock(REF)) == 0
    assert told(audit_lines) == [
        ("refresh.refused", "invalid_grant", session_id, None),
        ("session.ended", "refresh_refused", session_id, [session_id]),
    ]
    assert [(event.get("user"), event.get("sub")) for event in audit_lines.events()] == [("alice", "sub-alice")] * 2
    assert fake_redis.exists(KEYS.session_end(REF)) == 0  # its end is told: never again as idle


def test_invalid_grant_keeps_a_session_a_newer_refresh_already_moved_on(
    tokens, token_sets, login_client, fake_redis, audit_lines
):
    session_id = sign_in(tokens, expires_in=-10)["id"]
    fake_redis.set(KEYS.session(REF), "flask-session")
    login_client.refresh_answer = "invalid_grant"
    login_client.during_refresh = lambda: store_newer(token_sets)  # it used our refresh token first
    assert tokens.credential_for_cookie(SID).access_token == "at-newer"
    assert stored(token_sets)["refresh_token"] == "rt-newer"
    assert fake_redis.exists(KEYS.session(REF)) == 1
    assert told(audit_lines) == [("refresh.refused", "superseded", session_id, None)]
    assert audit_lines.events()[0]["error"] == "invalid_grant"


def test_invalid_grant_after_the_session_ended_elsewhere_is_401(tokens, token_sets, login_client):
    sign_in(tokens, expires_in=-10)
    login_client.refresh_answer = "invalid_grant"
    login_client.during_refresh = lambda: token_sets.delete(REF)  # signed out meanwhile
    with pytest.raises(Unauthorized, match=SESSION_ENDED):
        tokens.credential_for_cookie(SID)


@pytest.mark.parametrize("down", ["discovery", "token endpoint"])
def test_a_provider_outage_keeps_a_session_whose_token_is_still_valid(tokens, token_sets, login_client, down):
    sign_in(tokens, expires_in=30)
    login_client.discover_down = down == "discovery"
    login_client.refresh_answer = "unavailable"
    assert tokens.credential_for_cookie(SID).access_token == "at-0"
    assert stored(token_sets)["v"] == 1
    assert lock_is_free(token_sets)


@pytest.mark.parametrize("down", ["discovery", "token endpoint"])
def test_a_provider_outage_with_an_expired_token_is_503_and_keeps_the_session(tokens, token_sets, login_client, down):
    sign_in(tokens, expires_in=-10)
    login_client.discover_down = down == "discovery"
    login_client.refresh_answer = "unavailable"
    with pytest.raises(ProviderUnavailable):
        tokens.credential_for_cookie(SID)
    assert stored(token_sets)["refresh_token"] == "rt-0"
    assert lock_is_free(token_sets)


def test_a_session_without_a_refresh_token_ends_when_its_token_expires(tokens, token_sets, login_client, audit_lines):
    session_id = sign_in(tokens, expires_in=-10, refresh_token=None)["id"]
    with pytest.raises(Unauthorized, match=SESSION_ENDED):
        tokens.credential_for_cookie(SID)
    assert stored(token_sets) is None
    assert login_client.refreshed_with == []
    assert told(audit_lines) == [("session.ended", "absolute", session_id, [session_id])]


def test_a_session_past_its_absolute_end_is_over(tokens, token_sets, login_client, audit_lines):
    record = sign_in(tokens, expires_in=300)
    assert token_sets.replace(REF, 1, sealed({**record, "ends": time.time() - 1}))
    with pytest.raises(Unauthorized, match=SESSION_ENDED):
        tokens.credential_for_cookie(SID)
    assert stored(token_sets) is None
    assert told(audit_lines) == [("session.ended", "absolute", record["id"], [record["id"]])]
    with pytest.raises(Unauthorized, match=SESSION_ENDED):
        tokens.credential_for_cookie(SID)
    assert len(audit_lines.events()) == 1  # told once


def test_a_session_is_over_at_the_very_instant_of_its_absolute_end(tokens, token_sets, clock):
    record = sign_in(tokens, expires_in=300)
    assert token_sets.replace(REF, 1, sealed({**record, "ends": clock.time()}))  # the clock stands still
    with pytest.raises(Unauthorized, match=SESSION_ENDED):
        tokens.current(SID)
    assert stored(token_sets) is None


def test_an_unknown_session_is_401(tokens):
    with pytest.raises(Unauthorized, match=SESSION_ENDED):
        tokens.credential_for_cookie("never-signed-in")
    with pytest.raises(Unauthorized, match=SESSION_ENDED):
        tokens.current("never-signed-in")


def test_use_pushes_back_the_idle_expiry_of_the_tokens_and_the_session(tokens, fake_redis):
    sign_in(tokens, expires_in=300)
    fake_redis.set(KEYS.session(REF), "flask-session", px=5_000)
    fake_redis.pexpire(KEYS.token_set(REF), 5_000)
    tokens.current(SID)
    assert fake_redis.pttl(KEYS.token_set(REF)) > (IDLE - 5) * 1000
    assert fake_redis.pttl(KEYS.session(REF)) > (IDLE - 5) * 1000


def test_use_within_a_minute_of_the_last_extension_writes_nothing(tokens, fake_redis):
    sign_in(tokens, expires_in=300)
    fake_redis.pexpire(KEYS.token_set(REF), (IDLE - 30) * 1000)
    tokens.current(SID)
    assert fake_redis.pttl(KEYS.token_set(REF)) <= (IDLE - 30) * 1000


def test_a_use_extends_the_session_once_its_ttl_is_below_the_threshold_not_at_it(token_sets, fake_redis, clock):
    life = lifetime.Lifetime(token_sets, None, idle_timeout=IDLE, max_age=28800)
    record = {"ends": clock.time() + 28800}
    threshold_ms = IDLE * 1000 - lifetime.IDLE_TOUCH_SLACK_MS
    fake_redis.set(KEYS.token_set(REF), "tokens", px=5_000)
    life.used(REF, record, threshold_ms)  # the PTTL the caller read: exactly the threshold
    assert fake_redis.pttl(KEYS.token_set(REF)) <= 5_000
    life.used(REF, record, threshold_ms - 1)
    assert fake_redis.pttl(KEYS.token_set(REF)) > (IDLE - 5) * 1000


def test_a_short_lived_session_is_extended_once_a_quarter_of_its_time_has_passed(tokens, token_sets, fake_redis, clock):
    record = sign_in(tokens, expires_in=300)
    assert token_sets.replace(REF, 1, sealed({**record, "ends": clock.time() + 100}))  # 100 s left in all
    fake_redis.pexpire(KEYS.token_set(REF), 78_000)  # 22 s used: less than a quarter, so no write
    tokens.current(SID)
    assert fake_redis.pttl(KEYS.token_set(REF)) <= 78_000
    fake_redis.pexpire(KEYS.token_set(REF), 74_000)  # 26 s used: extended to the end
    tokens.current(SID)
    assert fake_redis.pttl(KEYS.token_set(REF)) > 95_000


def test_the_idle_expiry_never_passes_the_absolute_end(tokens, token_sets, fake_redis):
    record = sign_in(tokens, expires_in=300)
    assert token_sets.replace(REF, 1, sealed({**record, "ends": time.time() + 10}))
    fake_redis.pexpire(KEYS.token_set(REF), 1_000)
    tokens.current(SID)
    assert 5_000 < fake_redis.pttl(KEYS.token_set(REF)) <= 10_000


def test_a_refresh_token_lifetime_shortens_the_session(tokens):
    response = {"access_token": "at-0", "refresh_token": "rt-0", "expires_in": 300, "refresh_expires_in": 600}
    record = tokens.start(SID, username="alice", sub="sub-alice", response=response)
    assert record["ends"] - record["started"] == pytest.approx(600, abs=1)


def test_the_profile_comes_with_the_token_once_the_process_knows_the_sessions_user(tokens, fake_redis):
    fake_redis.hset(KEYS.user("alice"), mapping=Profile("alice", "@alice", "Alice").to_hash())
    sign_in(tokens, expires_in=300)
    assert tokens.credential_for_cookie(SID).profile is None  # the first call learns the user
    assert tokens.credential_for_cookie(SID).profile.display_name == "Alice"


def test_the_per_process_user_cache_is_bounded(token_sets, login_client, fake_redis):
    tokens = SessionTokens(
        token_sets,
        login_client,
        SessionIndex(fake_redis, KEYS),
        secret_key=SECRET,
        idle_timeout=IDLE,
        max_age=28800,
        idp_timeout=0.05,
        users_cached=1,
    )
    fake_redis.hset(KEYS.user("alice"), mapping=Profile("alice", "@alice", "Alice").to_hash())
    sign_in(tokens, expires_in=300)
    tokens.start("another-cookie", username="bob", sub="sub-bob", response={"access_token": "at-b"})
    tokens.current(SID)
    assert tokens.credential_for_cookie(SID).profile.username == "alice"
    tokens.current("another-cookie")  # the cache is full: it starts over
    assert tokens.credential_for_cookie(SID).profile is None


def test_an_ended_session_gives_up_its_place_in_the_per_process_user_cache(token_sets, login_client, fake_redis):
    tokens = SessionTokens(
        token_sets,
        login_client,
        SessionIndex(fake_redis, KEYS),
        secret_key=SECRET,
        idle_timeout=IDLE,
        max_age=28800,
        idp_timeout=0.05,
        users_cached=2,
    )
    fake_redis.hset(KEYS.user("alice"), mapping=Profile("alice", "@alice", "Alice").to_hash())
    tokens.start("bob-cookie", username="bob", sub="sub-bob", response={"access_token": "at-b"})
    tokens.current("bob-cookie")
    tokens.end("bob-cookie")
    sign_in(tokens, expires_in=300)
    tokens.start("carol-cookie", username="carol", sub="sub-carol", response={"access_token": "at-c"})
    tokens.current(SID)
    tokens.current("carol-cookie")  # two live sessions fill the cache without starting it over
    assert tokens.credential_for_cookie(SID).profile.username == "alice"


def test_ending_a_session_removes_its_tokens_and_returns_them(tokens, token_sets, fake_redis):
    sign_in(tokens, expires_in=300)
    fake_redis.set(KEYS.session(REF), "flask-session")
    assert tokens.end(SID)["refresh_token"] == "rt-0"
    assert fake_redis.exists(KEYS.token_set(REF), KEYS.session(REF)) == 0
    assert tokens.end(SID) is None


def test_an_id_token_from_a_refresh_is_verified_without_a_nonce_and_kept(tokens, token_sets, login_client):
    login_client.id_token_claims = {"sub": "sub-alice"}
    sign_in(tokens, expires_in=30)
    assert tokens.credential_for_cookie(SID).access_token == "at-1"
    assert login_client.verified == [("idt-1", None)]
    assert stored(token_sets)["id_token"] == "idt-1"


@pytest.mark.parametrize("claims, problem", [({"sub": "sub-mallory"}, None), ({"sub": "sub-alice"}, "wrong issuer")])
def test_a_refreshed_id_token_for_another_user_or_refused_ends_the_session(
    tokens, token_sets, login_client, caplog, audit_lines, claims, problem
):
    login_client.id_token_claims, login_client.id_token_problem = claims, problem
    session_id = sign_in(tokens, expires_in=30)["id"]
    with pytest.raises(Unauthorized, match=SESSION_ENDED):
        tokens.credential_for_cookie(SID)
    assert stored(token_sets) is None
    assert ("wrong issuer" if problem else "names another subject") in caplog.text
    assert told(audit_lines) == [
        ("refresh.refused", "id_token_refused", session_id, None),
        ("session.ended", "refresh_refused", session_id, [session_id]),
    ]


def test_a_refreshed_id_token_that_cannot_be_checked_in_an_outage_is_503_and_the_session_stays(
    tokens, token_sets, login_client
):
    def keys_unreachable(id_token, *, nonce):
        raise ProviderUnavailable("the provider's signing keys could not be fetched")

    login_client.id_token_claims, login_client.verify_id_token = {"sub": "sub-alice"}, keys_unreachable
    sign_in(tokens, expires_in=-10)
    with pytest.raises(ProviderUnavailable, match="signing keys"):
        tokens.credential_for_cookie(SID)
    assert stored(token_sets)["refresh_token"] == "rt-0"
    assert lock_is_free(token_sets)


def expiring_in(tokens, token_sets, clock, seconds: float) -> None:
    """A session whose access token has `seconds` left by `clock` (which stands still: however long the
    call takes, that is what it finds), and another request holding its refresh lock."""
    sign_in(tokens, expires_in=300)
    assert token_sets.replace(REF, 1, sealed({**stored(token_sets), "expires_at": clock.time() + seconds}))
    assert token_sets.lock(REF, "another-instance", 5000)


def test_a_token_with_more_than_a_second_left_is_used_while_another_request_refreshes(tokens, token_sets, clock):
    expiring_in(tokens, token_sets, clock, 1.5)
    assert tokens.credential_for_cookie(SID).access_token == "at-0"
    assert clock.slept == []


@pytest.mark.parametrize("seconds", [0.5, 1])  # 1: the clock stands still, so exactly one second is left
def test_a_token_with_a_second_or_less_left_waits_for_the_other_refresh(tokens, token_sets, clock, seconds):
    expiring_in(tokens, token_sets, clock, seconds)
    with pytest.raises(Unavailable):  # the other refresh never stores anything: the wait runs out
        tokens.credential_for_cookie(SID)
    assert sum(clock.slept) >= 0.3


def index_of(token_sets) -> SessionIndex:
    return SessionIndex(token_sets._redis, KEYS)


def test_a_session_keeps_how_its_user_authenticated(tokens):
    response = {"access_token": "at-0", "refresh_token": "rt-0", "expires_in": 300, "scope": "openid"}
    proof = {"acr": "urn:dev:loa:2", "amr": ["pwd", "otp"], "auth_time": 1_790_000_000}
    tokens.start(SID, username="alice", sub="sub-alice", response=response, **proof)
    assert sign_in_proof(tokens.inspect(SID)[0]) == proof


def test_a_session_keeps_the_scope_its_token_response_granted(tokens):
    response = {"access_token": "at-0", "expires_in": 300, "scope": "openid svc:profile.private"}
    tokens.start(SID, username="alice", sub="sub-alice", response=response)
    assert tokens.inspect(SID)[0]["scope"] == "openid svc:profile.private"


def test_a_session_started_without_a_browser_or_a_granted_scope_has_an_unknown_browser_and_no_scope(tokens, token_sets):
    tokens.start(SID, username="alice", sub="sub-alice", response={"access_token": "at-0", "expires_in": 300})
    record = tokens.inspect(SID)[0]
    assert (record["user_agent"], record["scope"]) == ("unknown browser", "")
    [entry] = index_of(token_sets).of_subject("sub-alice").values()
    assert entry["user_agent"] == "unknown browser"


def test_ending_a_session_left_to_expire_audits_its_idle_end(tokens, fake_redis, audit_lines, clock):
    session = sign_in(tokens, expires_in=300)["id"]
    fake_redis.delete(KEYS.token_set(REF))  # what its idle timeout does; the note of how it ends outlives it
    assert tokens.end(SID) is None
    events = [
        {name: event.get(name) for name in ("event", "reason", "session", "user", "sub")}
        for event in audit_lines.events()
    ]
    assert events == [
        {"event": "session.ended", "reason": "idle", "session": session, "user": "alice", "sub": "sub-alice"}
    ]


def test_ending_a_live_session_audits_no_end_of_its_own(tokens, audit_lines, clock):
    sign_in(tokens, expires_in=300)
    assert tokens.end(SID)["access_token"] == "at-0"
    assert audit_lines.events() == []  # the sign-out or removal that ended it audits itself


def test_tokens_a_refresh_could_not_store_in_a_failover_are_stored_once_redis_answers(login_client, monkeypatch):
    monkeypatch.setattr(rotations, "RETRY_EVERY", 0.05)
    server = fakeredis.FakeServer()
    token_sets = TokenSets(fakeredis.FakeRedis(server=server), KEYS)
    tokens = SessionTokens(
        token_sets, login_client, index_of(token_sets), secret_key=SECRET, idle_timeout=IDLE, max_age=28800,
        idp_timeout=0.05,
    )  # fmt: skip
    sign_in(tokens, expires_in=30)
    login_client.during_refresh = lambda: setattr(server, "connected", False)  # the master dies meanwhile
    with pytest.raises(redis.ConnectionError):
        tokens.credential_for_cookie(SID)
    server.connected = True
    deadline = time.monotonic() + 5
    while (stored(token_sets) or {}).get("refresh_token") != "rt-1" and time.monotonic() < deadline:
        time.sleep(0.01)
    assert stored(token_sets)["refresh_token"] == "rt-1"  # the provider has spent rt-0: rt-1 must not be lost


def test_ending_a_session_takes_it_off_its_users_session_list(tokens, token_sets):
    sign_in(tokens, expires_in=300)
    assert len(index_of(token_sets).of_subject("sub-alice")) == 1
    tokens.end(SID)
    assert index_of(token_sets).of_subject("sub-alice") == {}


def test_the_refresh_lock_expires_on_its_own_should_its_holder_die(tokens, token_sets, login_client, fake_redis):
    sign_in(tokens, expires_in=30)
    lock_ttls = []
    login_client.during_refresh = lambda: lock_ttls.append(fake_redis.pttl(KEYS.refresh_lock(REF)))
    tokens.credential_for_cookie(SID)
    assert 0 < lock_ttls[0] <= int((2 * 0.05 + 5) * 1000)  # a little longer than a refresh call may last


def test_a_record_no_key_opens_is_removed_even_when_the_process_knows_the_user(tokens, token_sets, audit_lines):
    sign_in(tokens, expires_in=300)
    tokens.credential_for_cookie(SID)  # the process learns the session's user
    record = stored(token_sets)
    assert token_sets.replace(REF, record["v"], SEALER.seal_record("another-cookie", record))
    with pytest.raises(Unauthorized, match=SESSION_ENDED):
        tokens.credential_for_cookie(SID)
    assert token_sets.load(REF)[0] is None
    assert told(audit_lines) == [("session.ended", "malformed", record["id"], [record["id"]])]
    assert audit_lines.events()[0]["user"] == "alice"


def test_the_refresh_token_of_any_stored_session_can_be_read_for_revocation(tokens, token_sets):
    sign_in(tokens, expires_in=300)
    assert tokens.revocable_refresh_token(REF) == "rt-0"
    assert tokens.revocable_refresh_token(session_ref(SECRET, "never-signed-in")) is None


OLD_SECRET = "an-older-secret-key-of-at-least-32-chars"


@pytest.fixture
def rotated(token_sets, login_client):
    """Session tokens under SECRET with OLD_SECRET as a fallback, and a session SID begun under OLD_SECRET."""
    common = {"idle_timeout": IDLE, "max_age": 28800, "idp_timeout": 0.05}
    before = SessionTokens(token_sets, login_client, index_of(token_sets), secret_key=OLD_SECRET, **common)
    response = {"access_token": "at-0", "refresh_token": "rt-0", "expires_in": 300}
    before.start(SID, username="alice", sub="sub-alice", response=response, user_agent="Firefox on Linux")
    return SessionTokens(
        token_sets, login_client, index_of(token_sets), secret_key=SECRET, secret_key_fallbacks=(OLD_SECRET,), **common
    )


def test_a_session_begun_under_a_fallback_key_keeps_working_under_the_new_key(rotated, token_sets):
    assert rotated.credential_for_cookie(SID).access_token == "at-0"
    assert token_sets.exists(REF) and not token_sets.exists(session_ref(OLD_SECRET, SID))


def test_a_migrated_session_is_listed_under_its_new_name_with_its_start_end_and_browser(rotated, token_sets):
    [before] = index_of(token_sets).of_subject("sub-alice").values()
    rotated.credential_for_cookie(SID)
    entries = list(index_of(token_sets).of_subject("sub-alice").values())
    moved = {"ref": REF, "started": before["started"], "ends": before["ends"], "user_agent": "Firefox on Linux"}
    assert moved in entries


def test_migrating_never_overwrites_a_session_stored_under_the_new_key(rotated, token_sets, login_client):
    current = SessionTokens(
        token_sets,
        login_client,
        index_of(token_sets),
        secret_key=SECRET,
        idle_timeout=IDLE,
        max_age=28800,
        idp_timeout=0.05,
    )
    current.start(SID, username="alice", sub="sub-alice", response={"access_token": "at-current", "expires_in": 300})
    rotated.migrate(SID)
    assert rotated.credential_for_cookie(SID).access_token == "at-current"


def test_a_migrated_session_from_before_browsers_were_recorded_is_listed_as_an_unknown_browser(rotated, token_sets):
    old_ref = session_ref(OLD_SECRET, SID)
    record, _ = token_sets.load(old_ref)
    assert token_sets.replace(old_ref, record["v"], {name: v for name, v in record.items() if name != "user_agent"})
    rotated.credential_for_cookie(SID)
    entries = index_of(token_sets).of_subject("sub-alice").values()
    assert [entry["user_agent"] for entry in entries if entry["ref"] == REF] == ["unknown browser"]


@pytest.mark.parametrize(
    "junk", [b"\xffnot json", b"[1, 2]", b'{"ends": "soon", "user": "alice"}', b'{"ends": 1, "id": [1]}']
)
def test_a_junk_session_end_record_never_fails_the_request(tokens, fake_redis, audit_lines, junk):
    fake_redis.set(KEYS.session_end(REF), junk)
    with pytest.raises(Unauthorized, match=SESSION_ENDED):
        tokens.credential_for_cookie(SID)
    assert [(event["reason"], event["ended"]) for event in audit_lines.events()] in ([], [("absolute", [])])
    assert fake_redis.exists(KEYS.session_end(REF)) == 0
