"""The provider's request to back off, shared in Redis: kept exactly as long as it asked, and none
until one is set."""

import time

from app.store.keys import Keys
from app.store.token_checks import ProviderBackoff

KEYS = Keys("t:")


def test_no_backoff_is_set_until_the_provider_asks(fake_redis):
    assert ProviderBackoff(fake_redis, KEYS).until() == 0.0


def test_a_backoff_is_kept_until_its_end_and_no_longer(fake_redis):
    backoff, now = ProviderBackoff(fake_redis, KEYS), time.time()
    backoff.start(now + 2.5, now=now)
    assert backoff.until() == now + 2.5
    assert 2_400 < fake_redis.pttl(KEYS.introspection_backoff()) <= 2_500
