"""The rate limiter's counters are Redis keys like any other: their prefix is built in app/store/keys.py."""

from app import create_app
from app.store.keys import Keys
from config import Config
from tests.helpers.settings import CSRF, app_env


def test_the_rate_limiter_counts_under_the_prefix_keys_builds(stub_issuer, fake_redis):
    env = app_env(stub_issuer.issuer, RATE_LIMIT_LOGIN="5 per minute", RATE_LIMIT_EXCHANGE="5 per minute")
    client = create_app(Config(env), redis=fake_redis).test_client()
    assert client.get("/auth/login").status_code == 302
    assert client.post("/auth/exchange", json={}, headers=CSRF).status_code == 400
    counters = sorted(key.decode() for key in fake_redis.keys("*LIMITER*"))
    prefix = f"{Keys(env['REDIS_KEY_PREFIX']).rate_limits()}:LIMITER/"
    assert all(key.startswith(prefix) for key in counters), counters
    # Each view counts its client (127.0.0.1) and the client's network (127.0.0.0/24) apart.
    assert [key[len(prefix) :].rsplit("/", 3)[0] for key in counters] == [
        "127.0.0.0/24/auth.exchange:network",
        "127.0.0.0/24/auth.login:network",
        "127.0.0.1/auth.exchange",
        "127.0.0.1/auth.login",
    ]
