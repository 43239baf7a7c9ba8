"""DPoP proof ids on fakeredis (which runs the store's Lua): each proof id once per key, and a bound on
how many proofs one key may send in a window, whose Retry-After is the window's time left."""

import time

import pytest

from app.errors import TooManyDpopProofs
from app.store.keys import Keys
from app.store.proofs import SeenProofs

KEYS = Keys("t:")


def test_a_proof_id_is_accepted_once_per_key(fake_redis):
    proofs, now = SeenProofs(fake_redis, KEYS), time.time()
    assert proofs.first_use("jkt-1", "jti-1", now=now, until=now + 60) is True
    assert proofs.first_use("jkt-1", "jti-1", now=now, until=now + 60) is False
    assert proofs.first_use("jkt-2", "jti-1", now=now, until=now + 60) is True  # another key's ids apart


def test_a_key_beyond_its_bound_waits_for_the_windows_end_at_least_a_second(fake_redis):
    proofs, now = SeenProofs(fake_redis, KEYS, per_key="1 per second"), time.time()
    assert proofs.first_use("jkt-1", "jti-1", now=now, until=now + 60)
    with pytest.raises(TooManyDpopProofs) as refused:
        proofs.first_use("jkt-1", "jti-2", now=now, until=now + 60)
    assert refused.value.headers()["Retry-After"] == "1"
