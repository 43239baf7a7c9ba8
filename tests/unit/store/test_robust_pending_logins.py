"""The bound on pending sign-ins in total, on fakeredis (which runs the store's Lua): admitted first,
released when taken, dropped, expired or not saved after all (issue 19, point 5)."""

import secrets

import pytest
import redis as redis_py

from app.store import logins as logins_module
from app.store.keys import Keys
from app.store.logins import MAX_PENDING, PendingLogins, TooManyPendingLogins
from tests.helpers.clock import FakeClock

KEYS = Keys("t:")
TTL = 600


@pytest.fixture
def clock(monkeypatch):
    fake = FakeClock()
    monkeypatch.setattr(logins_module, "time", fake)
    return fake


def bounded(fake_redis, max_total: int) -> PendingLogins:
    return PendingLogins(fake_redis, KEYS, max_total=max_total)


def new_state(browser: str | None = None) -> str:
    """A state shaped like the app's: a browser tag, then random text."""
    return f"{browser or secrets.token_hex(8)}.{secrets.token_urlsafe(32)}"


def login_keys(fake_redis) -> list[bytes]:
    return sorted(fake_redis.scan_iter(match="t:login*"))


def test_a_sign_in_beyond_the_bound_is_refused_and_writes_nothing(fake_redis, clock):
    logins = bounded(fake_redis, 3)
    for _ in range(3):
        logins.save(new_state(), ["verifier", "binding", "/"], TTL)
    before = (login_keys(fake_redis), fake_redis.zrange(KEYS.pending_logins(), 0, -1))
    with pytest.raises(TooManyPendingLogins):
        logins.save(new_state(), ["verifier", "binding", "/"], TTL)
    assert (login_keys(fake_redis), fake_redis.zrange(KEYS.pending_logins(), 0, -1)) == before
    assert logins.count() == 3


def test_a_refused_sign_in_is_told_when_the_oldest_pending_one_expires(fake_redis, clock):
    logins = bounded(fake_redis, 2)
    logins.save(new_state(), ["v", "b", "/"], TTL)
    clock.advance(100)
    logins.save(new_state(), ["v", "b", "/"], TTL)
    clock.advance(50.5)
    with pytest.raises(TooManyPendingLogins) as refused:
        logins.save(new_state(), ["v", "b", "/"], TTL)
    assert refused.value.retry_after == TTL - 150


def test_an_expired_sign_in_frees_its_place(fake_redis, clock):
    logins = bounded(fake_redis, 1)
    logins.save(new_state(), ["v", "b", "/"], TTL)
    clock.advance(TTL - 1)
    with pytest.raises(TooManyPendingLogins):
        logins.save(new_state(), ["v", "b", "/"], TTL)
    clock.advance(1)
    logins.save(new_state(), ["v", "b", "/"], TTL)
    assert logins.count() == 1


def test_a_finished_sign_in_frees_its_place(fake_redis, clock):
    logins = bounded(fake_redis, 1)
    state = new_state()
    logins.save(state, ["verifier", "binding", "/next"], TTL)
    assert logins.take(state) == ["verifier", "binding", "/next"]
    assert logins.count() == 0
    logins.save(new_state(), ["v", "b", "/"], TTL)


def test_sign_ins_a_browser_drops_beyond_its_five_free_their_places(fake_redis, clock):
    logins = bounded(fake_redis, MAX_PENDING + 1)
    for _ in range(MAX_PENDING + 3):
        logins.save(new_state("a" * 16), ["v", "b", "/"], TTL)
    assert logins.count() == MAX_PENDING
    assert len(login_keys(fake_redis)) == MAX_PENDING + 1  # five sign-ins and the browser's list
    logins.save(new_state(), ["v", "b", "/"], TTL)


def test_a_sign_in_that_cannot_be_saved_gives_its_place_back(fake_redis, clock):
    logins = bounded(fake_redis, 1)
    fake_redis.set(KEYS.pending_logins_of("b" * 16), "not a list")  # the save's LPUSH fails on it
    with pytest.raises(redis_py.ResponseError):
        logins.save(new_state("b" * 16), ["v", "b", "/"], TTL)
    assert logins.count() == 0
    logins.save(new_state(), ["v", "b", "/"], TTL)


def test_the_count_of_pending_sign_ins_expires_with_the_last_of_them(fake_redis, clock):
    logins = bounded(fake_redis, 5)
    logins.save(new_state(), ["v", "b", "/"], TTL)
    assert 0 < fake_redis.pttl(KEYS.pending_logins()) <= TTL * 1000


def test_a_pending_sign_in_is_stored_under_a_digest_of_its_state_never_the_state(fake_redis, clock):
    logins = bounded(fake_redis, 5)
    state = new_state()
    logins.save(state, ["v", "b", "/"], TTL)
    names = [key.decode() for key in fake_redis.scan_iter()]
    members = [member.decode() for member in fake_redis.zrange(KEYS.pending_logins(), 0, -1)]
    assert logins.key(state) in names
    assert not any(state.partition(".")[2] in text for text in names + members)


def test_a_stored_record_that_is_not_json_counts_as_no_sign_in(fake_redis, clock):
    logins = bounded(fake_redis, 5)
    state = new_state()
    logins.save(state, ["v", "b", "/"], TTL)
    fake_redis.set(logins.key(state), b"\x80 not json")
    assert logins.take(state) is None
