"""Subject links on fakeredis: a link this process set or read is remembered for a while (an operator's
relink reaches it within LINK_MEMORY_SECONDS), and one it removed is forgotten at once."""

from app.store.keys import Keys
from app.store.subject_links import SubjectLinks

KEYS = Keys("t:")


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
