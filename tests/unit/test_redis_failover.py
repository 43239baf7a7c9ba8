"""What the service makes of a Redis failing over, without a real one: each refusal a Redis sends while a
failover settles is a 503 `unavailable` (never a 500), `REDIS_URL` takes Sentinel's form (and refuses a
malformed one at start, naming it), and REDIS_WAIT_TIMEOUT_MS is read and checked."""

import logging

import pytest
import redis as redis_py
from redis.sentinel import SentinelConnectionPool

from app.extensions import make_redis
from app.store.replicas import ConfirmedWrites
from config import Config, ConfigError
from tests.helpers.settings import app_env

STORAGE_DOWN = {"code": "unavailable", "message": "the service's storage is unavailable"}
REFUSALS = {
    "a demoted master": redis_py.exceptions.ReadOnlyError("You can't write against a read only replica."),
    "WAIT on a master being demoted": redis_py.ResponseError(
        "UNBLOCKED force unblock from blocking operation, instance state changed (master -> replica?)"
    ),
    "min-replicas-to-write unmet": redis_py.ResponseError("NOREPLICAS Not enough good replicas to write."),
    "a slot changing hands": redis_py.exceptions.TryAgainError("Multiple keys request during rehashing of slot"),
    "a cluster without the slot's master": redis_py.exceptions.ClusterDownError("The cluster is down"),
    "a replica without its master": redis_py.exceptions.MasterDownError("Link with MASTER is down"),
}


@pytest.mark.parametrize("refusal", list(REFUSALS.values()), ids=list(REFUSALS))
def test_a_refusal_of_a_redis_failing_over_is_a_503_with_retry_after(unit_app, fake_redis, monkeypatch, refusal):
    def refuse(*args, **kwargs):
        raise refusal

    monkeypatch.setattr(fake_redis, "hmget", refuse)
    response = unit_app.test_client().get("/api/v1/users/bob")
    assert (response.status_code, response.json["error"]) == (503, STORAGE_DOWN)
    assert response.headers["Retry-After"] == "5"


def test_any_other_refusal_stays_a_500(unit_app, fake_redis, monkeypatch):
    def refuse(*args, **kwargs):
        raise redis_py.ResponseError("WRONGTYPE Operation against a key holding the wrong kind of value")

    monkeypatch.setattr(fake_redis, "hmget", refuse)
    response = unit_app.test_client().get("/api/v1/users/bob")
    assert (response.status_code, response.json["error"]["code"]) == (500, "internal_error")


def test_a_sentinel_url_makes_a_client_of_the_master_the_sentinels_name():
    client = make_redis("redis+sentinel://:s%40cret@10.0.0.1:26380,10.0.0.2/profile-poke/3", socket_timeout=0.5)
    pool = client.connection_pool
    assert isinstance(pool, SentinelConnectionPool)
    assert (pool.service_name, pool.connection_kwargs["db"]) == ("profile-poke", 3)
    assert pool.connection_kwargs["password"] == "s@cret"
    assert pool.connection_kwargs["retry"].get_retries() == 1  # a request fails near the timeout
    sentinels = pool.sentinel_manager.sentinels
    assert [
        (s.connection_pool.connection_kwargs["host"], s.connection_pool.connection_kwargs["port"]) for s in sentinels
    ] == [
        ("10.0.0.1", 26380),
        ("10.0.0.2", 26379),
    ]
    assert all(s.connection_pool.connection_kwargs["password"] == "s@cret" for s in sentinels)
    assert all(s.connection_pool.connection_kwargs["socket_timeout"] == 0.5 for s in sentinels)


def test_a_rediss_sentinel_url_speaks_tls_to_sentinels_and_servers():
    client = make_redis("rediss+sentinel://h1:26379/profile-poke", socket_timeout=0.5, tls_verify=False)
    pool = client.connection_pool
    assert pool.connection_class.__name__ == "SentinelManagedSSLConnection"
    assert pool.connection_kwargs["db"] == 0 and pool.connection_kwargs["ssl_cert_reqs"] == "none"
    [sentinel] = pool.sentinel_manager.sentinels
    assert sentinel.connection_pool.connection_class.__name__ == "SSLConnection"


@pytest.mark.parametrize(
    "url",
    [
        "redis+sentinel://h1:26379",
        "redis+sentinel://h1:26379/",
        "redis+sentinel://h1:26379/profile-poke/zero",
        "redis+sentinel://h1:26379/profile-poke/0/1",
        "redis+sentinel://h1:port/profile-poke",
        "redis+sentinel://:secret@/profile-poke",
        "rediss+sentinel://h1:70000/profile-poke",
    ],
)
def test_a_malformed_sentinel_url_stops_start_up_naming_the_setting_and_not_the_password(url):
    with pytest.raises(ConfigError, match=r"REDIS_URL must be rediss?\+sentinel://") as refused:
        Config(app_env("http://issuer.invalid", REDIS_URL=url))
    assert "secret" not in str(refused.value)


def test_the_wait_timeout_defaults_to_100_ms_and_must_be_a_whole_number_of_ms():
    assert Config(app_env("http://issuer.invalid")).REDIS_WAIT_TIMEOUT_MS == 100
    assert Config(app_env("http://issuer.invalid", REDIS_WAIT_TIMEOUT_MS="0")).REDIS_WAIT_TIMEOUT_MS == 0
    for bad in ("-1", "0.5", "soon"):
        with pytest.raises(ConfigError, match="REDIS_WAIT_TIMEOUT_MS"):
            Config(app_env("http://issuer.invalid", REDIS_WAIT_TIMEOUT_MS=bad))


def test_writes_are_not_confirmed_where_redis_refuses_role_and_a_warning_says_so(fake_redis, caplog):
    confirmed = ConfirmedWrites(fake_redis, timeout_ms=100)  # fakeredis knows neither ROLE nor WAIT
    with caplog.at_level(logging.WARNING, logger="app.store.replicas"):
        results, others = confirmed.execute("poke", "k", [("SET", "k", "1")], [("GET", "other")])
    assert (results, others) == ([True], [None])
    assert "writes are not confirmed on a replica: Redis refuses ROLE" in caplog.text
