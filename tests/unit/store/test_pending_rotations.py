"""Rotated session tokens that met a failing-over Redis (fakeredis emulating lost connections): kept and
stored once Redis answers, the refresh lock held until then so nobody spends the old refresh token."""

import time

import fakeredis
import pytest
import redis

from app.store import rotations
from app.store.keys import Keys
from app.store.tokensets import TokenSets

KEYS = Keys("t:")


@pytest.fixture
def server(monkeypatch):
    monkeypatch.setattr(rotations, "RETRY_EVERY", 0.3)
    return fakeredis.FakeServer()


@pytest.fixture
def token_sets(server):
    sets = TokenSets(fakeredis.FakeRedis(server=server), KEYS)
    sets.create("ref", {"refresh_token": "rt-1"}, ttl_ms=60_000, end={"user": "alice"}, end_ttl_ms=60_000)
    return sets


def refresh_during_an_outage(server, token_sets, *, lock_ms: int = 5_000) -> None:
    """What app.auth.refresh does: lock, rotate at the provider, store (the tokens' master gone by then),
    unlock (the lock's master answering: on a cluster it is usually another)."""
    assert token_sets.lock("ref", "owner", lock_ms)
    server.connected = False
    with pytest.raises(redis.ConnectionError):
        token_sets.replace("ref", 1, {"refresh_token": "rt-2"}, lock_owner="owner")
    server.connected = True
    token_sets.unlock("ref", "owner")


def eventually(condition, timeout: float = 3.0) -> bool:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def stored(token_sets) -> tuple[str, int]:
    record = token_sets.load("ref")[0]
    return record["refresh_token"], record["v"]


def test_rotated_tokens_redis_could_not_take_are_stored_once_it_answers_the_lock_held_until_then(server, token_sets):
    refresh_during_an_outage(server, token_sets)
    assert stored(token_sets) == ("rt-1", 1)
    assert not token_sets.lock("ref", "another request", 5_000)  # nobody may spend rt-1 meanwhile
    assert eventually(lambda: stored(token_sets) == ("rt-2", 2))
    assert eventually(lambda: token_sets.lock("ref", "another request", 5_000))  # released once stored


def test_a_kept_rotation_is_dropped_when_the_tokens_moved_on_meanwhile(server, token_sets):
    refresh_during_an_outage(server, token_sets)
    assert token_sets.replace("ref", 1, {"refresh_token": "rt-other"})  # another writer, before the retry
    assert eventually(lambda: token_sets.lock("ref", "another request", 5_000))
    assert stored(token_sets) == ("rt-other", 2)


def test_a_kept_rotation_gives_up_when_the_refresh_lock_expires(server, token_sets, caplog):
    refresh_during_an_outage(server, token_sets, lock_ms=100)
    assert eventually(lambda: "could not be stored before their refresh lock expired" in caplog.text)
    assert stored(token_sets) == ("rt-1", 1)  # another request may have refreshed with rt-1 by then


def test_a_write_without_the_refresh_lock_is_not_kept(server, token_sets):
    server.connected = False
    with pytest.raises(redis.ConnectionError):
        token_sets.replace("ref", 1, {"refresh_token": "rt-2"})
    server.connected = True
    time.sleep(0.4)
    assert stored(token_sets) == ("rt-1", 1)
