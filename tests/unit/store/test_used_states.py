"""The claims of sign-in states (app.store.logins), by direct calls on fakeredis: the short name a
state is kept under and how long a claim lasts."""

import base64
import hashlib
import time

from app.store.keys import Keys
from app.store.logins import UsedStates, login_id

KEYS = Keys("l:")


def test_a_state_is_kept_under_128_bits_of_its_digest_unpadded():
    state = "a-state-from-the-sign-in-request"
    digest = hashlib.sha256(state.encode()).digest()[:16]
    assert login_id(state) == base64.urlsafe_b64encode(digest).decode().rstrip("=")
    assert len(login_id(state)) == 22 and state not in login_id(state)


def test_a_state_claimed_at_or_past_its_expiry_is_still_kept_one_second(fake_redis):
    used = UsedStates(fake_redis, KEYS)
    assert used.claim("late-state", time.time() - 10) is True
    assert fake_redis.ttl(used.key("late-state")) == 1
    assert used.claim("late-state", time.time() + 600) is False
