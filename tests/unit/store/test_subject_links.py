"""Subject links on fakeredis: a link this process set or read is remembered for a while (an operator's
relink reaches it within LINK_MEMORY_SECONDS), and one it removed is forgotten at once."""

import pytest

from app.store import subject_links
from app.store.keys import Keys
from app.store.subject_links import LINK_MEMORY_SECONDS, SubjectLinks
from tests.helpers.clock import FakeClock

KEYS = Keys("t:")


@pytest.fixture
def clock(monkeypatch):
    fake = FakeClock()
    monkeypatch.setattr(subject_links, "time", fake)
    return fake


def test_a_link_this_process_set_is_remembered_without_reading_redis_again(fake_redis):
    links = SubjectLinks(fake_redis, KEYS)
    assert links.link("sub-1", "alice") is None
    fake_redis.delete(KEYS.subject("sub-1"))  # gone from Redis behind this process's back
    assert links.username("sub-1") == "alice"


def test_a_link_this_process_removed_is_forgotten_at_once(fake_redis):
    links = SubjectLinks(fake_redis, KEYS)
    links.link("sub-1", "alice")
    links.unlink("sub-1", "alice")
    assert links.username("sub-1") is None
    assert links.link("sub-1", "bob") is None
    assert links.username("sub-1") == "bob"


def test_a_link_read_from_redis_is_remembered_and_a_relink_is_seen_after_the_memory_time(fake_redis, clock):
    links = SubjectLinks(fake_redis, KEYS)
    fake_redis.set(KEYS.subject("sub-1"), "alice")  # linked by another process
    assert links.username("sub-1") == "alice"
    fake_redis.set(KEYS.subject("sub-1"), "bob")  # an operator's relink
    clock.advance(LINK_MEMORY_SECONDS - 0.5)
    assert links.username("sub-1") == "alice"
    clock.advance(0.5)
    assert links.username("sub-1") == "bob"


def test_the_memory_holds_at_most_cache_size_links_and_an_expired_removed_one_takes_no_place(fake_redis, clock):
    links = SubjectLinks(fake_redis, KEYS, cache_size=2)
    links.link("sub-1", "alice")
    fake_redis.delete(KEYS.subject("sub-1"))
    clock.advance(LINK_MEMORY_SECONDS)
    assert links.username("sub-1") is None  # read again, found gone: forgotten
    links.link("sub-2", "bob")
    links.link("sub-3", "carol")
    fake_redis.delete(KEYS.subject("sub-2"), KEYS.subject("sub-3"))
    assert (links.username("sub-2"), links.username("sub-3")) == ("bob", "carol")  # both remembered
    links.link("sub-4", "dave")  # the memory is full: it starts again
    assert (links.username("sub-2"), links.username("sub-4")) == (None, "dave")
