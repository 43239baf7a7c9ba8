"""Poke decisions on fakeredis (which runs the store's Lua): one poke per pair per day, withdrawal, and a
poke no replica confirmed counted as one."""

import fakeredis
import pytest
import redis as redis_py
from redis.sentinel import Sentinel, SentinelConnectionPool

from app.store.keys import Keys
from app.store.pokes import COOLDOWN_MS, PokeOutcome, PokeResult, Pokes
from app.store.profile_record import Profile
from app.store.replicas import ConfirmedWrites

KEYS = Keys("t:")


@pytest.fixture
def pokes(fake_redis):
    for name, disabled in (("alice", False), ("bob", False), ("dora", True)):
        profile = Profile(name, f"@{name}", name.title(), disabled=disabled)
        fake_redis.hset(KEYS.user(name), mapping=profile.to_hash())
    return Pokes(fake_redis, KEYS)


def test_a_second_poke_within_the_day_is_refused_with_the_time_left(pokes):
    poker, outcome = pokes.try_poke("alice", "bob")
    assert (poker.username, outcome) == ("alice", PokeOutcome(PokeResult.POKED))
    _, again = pokes.try_poke("alice", "bob")
    assert again.result is PokeResult.ON_COOLDOWN
    assert COOLDOWN_MS // 1000 - 5 <= again.seconds_left <= COOLDOWN_MS // 1000


def test_the_cooldown_is_per_pair(pokes):
    pokes.try_poke("alice", "bob")
    assert pokes.try_poke("bob", "alice")[1] == PokeOutcome(PokeResult.POKED)


@pytest.mark.parametrize("target", ["nobody", "dora"])
def test_an_absent_or_disabled_target_is_unknown_and_starts_no_cooldown(pokes, fake_redis, target):
    assert pokes.try_poke("alice", target)[1] == PokeOutcome(PokeResult.UNKNOWN_TARGET)
    assert fake_redis.exists(KEYS.cooldown("alice", target)) == 0


def test_a_withdrawn_poke_leaves_no_cooldown(pokes):
    pokes.try_poke("alice", "bob")
    pokes.withdraw("alice", "bob")
    assert pokes.try_poke("alice", "bob")[1] == PokeOutcome(PokeResult.POKED)


def test_a_cooldown_that_lost_its_ttl_still_holds_a_whole_day(pokes, fake_redis):
    fake_redis.set(KEYS.cooldown("alice", "bob"), "1")
    assert pokes.try_poke("alice", "bob")[1] == PokeOutcome(PokeResult.ON_COOLDOWN, COOLDOWN_MS // 1000)


def test_the_pokers_profile_comes_back_even_when_it_has_none(pokes):
    assert pokes.try_poke("ghost", "bob")[0] is None


def test_a_cooldown_in_its_last_second_still_reports_one_second_left(pokes, fake_redis):
    fake_redis.set(KEYS.cooldown("alice", "bob"), "1", px=400)
    assert pokes.try_poke("alice", "bob")[1] == PokeOutcome(PokeResult.ON_COOLDOWN, 1)


def sentinel_master_without_replica():
    """A client of a Sentinel-managed master (fakeredis behind redis-py's Sentinel pool) that has lost its
    replica: fakeredis knows no ROLE, so the master is taken to have none connected."""
    pool = SentinelConnectionPool("profile-poke", Sentinel([]), connection_class=fakeredis.FakeRedisConnection)
    pool.connection_kwargs.pop("connection_pool")  # the Sentinel pool's proxy, which fakeredis refuses
    pool.connection_kwargs["server"] = fakeredis.FakeServer()
    return redis_py.Redis(connection_pool=pool)


def test_a_poke_no_replica_confirmed_is_counted_as_an_unconfirmed_poke():
    master = sentinel_master_without_replica()
    master.hset(KEYS.user("bob"), mapping=Profile("bob", "@bob", "Bob").to_hash())
    unconfirmed = []  # what the app's pp_redis_unconfirmed_writes counter hears, its `write` label
    confirmed = ConfirmedWrites(master, timeout_ms=100, on_unconfirmed=unconfirmed.append)
    assert Pokes(master, KEYS, confirmed).try_poke("alice", "bob")[1] == PokeOutcome(PokeResult.POKED)
    assert unconfirmed == ["poke"]


def test_pokes_given_no_confirmed_writes_never_ask_for_a_replica(caplog):
    master = sentinel_master_without_replica()
    master.hset(KEYS.user("bob"), mapping=Profile("bob", "@bob", "Bob").to_hash())
    assert Pokes(master, KEYS).try_poke("alice", "bob")[1] == PokeOutcome(PokeResult.POKED)
    assert [record.getMessage() for record in caplog.records] == []  # no ROLE asked, nothing unconfirmed
