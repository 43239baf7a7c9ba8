"""Session token sets on fakeredis (which runs the store's Lua): compare-and-set and compare-and-delete."""

import time

from app.store.keys import Keys
from app.store.tokensets import TokenSets

END = {"end": {"id": "s-1", "user": "alice", "sub": "sub-1", "ends": 2e9}, "end_ttl_ms": 120_000}


def test_a_stale_writer_can_neither_replace_nor_end_newer_tokens(fake_redis):
    token_sets = TokenSets(fake_redis, Keys("t:"))
    token_sets.create("ref", {"refresh_token": "rt-1"}, ttl_ms=60_000, **END)
    assert token_sets.replace("ref", 1, {"refresh_token": "rt-2"})
    assert not token_sets.replace("ref", 1, {"refresh_token": "rt-old"})
    assert not token_sets.end_if_version("ref", 1)
    record, ttl_ms = token_sets.load("ref")
    assert (record["refresh_token"], record["v"]) == ("rt-2", 2)
    assert 0 < ttl_ms <= 60_000
    assert token_sets.end_if_version("ref", 2)
    assert token_sets.load("ref") == (None, -2)


def test_the_refresh_lock_is_released_only_by_its_holder(fake_redis):
    token_sets = TokenSets(fake_redis, Keys("t:"))
    assert token_sets.lock("ref", "a", 5_000)
    assert not token_sets.lock("ref", "b", 5_000)
    token_sets.unlock("ref", "b")
    assert not token_sets.lock("ref", "b", 5_000)
    token_sets.unlock("ref", "a")
    assert token_sets.lock("ref", "b", 5_000)


def test_ended_sessions_leave_the_active_set_when_another_is_marked_without_any_count(fake_redis):
    token_sets, keys = TokenSets(fake_redis, Keys("t:")), Keys("t:")
    token_sets.create("ended", {"refresh_token": "rt-1"}, ttl_ms=1, **END)
    time.sleep(0.01)
    token_sets.create("live", {"refresh_token": "rt-2"}, ttl_ms=60_000, **END)
    assert fake_redis.zrange(keys.active_sessions(), 0, -1) == [b"live"]


def test_a_second_mover_after_a_rotation_cannot_bring_back_what_the_first_has_changed(fake_redis):
    token_sets, keys = TokenSets(fake_redis, Keys("t:")), Keys("t:")
    token_sets.create("old", {"refresh_token": "rt-1"}, ttl_ms=60_000, **END)
    fake_redis.set(keys.session("old"), "session-1", px=60_000)
    read_by_second = {key: fake_redis.get(key) for key in (keys.token_set("old"), keys.session("old"))}
    assert token_sets.move("old", "new")["refresh_token"] == "rt-1"
    assert token_sets.replace("new", 1, {"refresh_token": "rt-2"})  # the first mover's request refreshes
    fake_redis.set(keys.session("new"), "session-2", keepttl=True)
    for key, value in read_by_second.items():  # the second mover read the old keys before they went
        fake_redis.set(key, value, px=60_000)
    token_sets.move("old", "new")
    record, _ = token_sets.load("new")
    assert (record["refresh_token"], record["v"]) == ("rt-2", 2)
    assert fake_redis.get(keys.session("new")) == b"session-2"


def test_a_session_left_to_expire_tells_its_end_once_and_one_ended_tells_nothing(fake_redis):
    token_sets = TokenSets(fake_redis, Keys("t:"))
    token_sets.create("expiring", {"refresh_token": "rt-1"}, ttl_ms=1, **END)
    token_sets.create("ended", {"refresh_token": "rt-2"}, ttl_ms=60_000, **END)
    time.sleep(0.01)
    assert token_sets.load("expiring") == (None, -2)
    assert token_sets.take_end("expiring") == END["end"]
    assert token_sets.take_end("expiring") is None
    token_sets.delete("ended")
    assert token_sets.take_end("ended") is None


def test_a_moved_session_keeps_its_end(fake_redis):
    token_sets = TokenSets(fake_redis, Keys("t:"))
    token_sets.create("old", {"refresh_token": "rt-1"}, ttl_ms=60_000, **END)
    token_sets.move("old", "new")
    assert token_sets.take_end("old") is None
    assert token_sets.take_end("new") == END["end"]
