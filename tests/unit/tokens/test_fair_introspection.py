"""Introspection fair under floods (issue 28, point 2), against a stub RFC 7662 endpoint over fakeredis:
answers and refusals shared by every instance (one provider call per token), a token seen valid asked
again without admission, bounds per address and per network, a share each network keeps once the pool
is spent, and the provider's own 429 or 503 honoured by every instance while known answers are served."""

import base64
import hashlib
import json
import secrets
from datetime import UTC, datetime
from email.utils import format_datetime

import fakeredis
import pytest

from app.addresses import client_key
from app.errors import PROVIDER_BUSY
from app.tokens import introspection
from app.tokens.introspection import REFUSED
from tests.helpers.apps import app_with_alice
from tests.helpers.clock import FakeClock
from tests.helpers.log_capture import LineCapture

from .test_introspection import IntrospectingIssuer

FROM_ADDRESS = "too many unknown access tokens from this address; try again later"
FROM_NETWORK = "too many unknown access tokens from this network; try again later"


class ThrottlingIssuer(IntrospectingIssuer):
    """The introspecting stub, answering `throttle` (status and headers) instead while it is set."""

    def __init__(self, key):
        super().__init__(key)
        self.throttle: tuple[int, dict] | None = None

    def answer(self, method, path, params, headers):
        if method == "POST" and path.endswith("/introspect") and self.throttle:
            self.fetches["introspection"] += 1
            return self.throttle[0], self.throttle[1], {"error": "slow_down"}
        return super().answer(method, path, params, headers)


@pytest.fixture
def stub(key):
    issuer = ThrottlingIssuer(key)
    yield issuer
    issuer.stop()


@pytest.fixture
def clock(monkeypatch):
    """The clock of introspection's caches and back-off (Redis's own windows run on real time)."""
    monkeypatch.setattr(introspection, "time", moved := FakeClock())
    return moved


def instances(stub, count: int = 2, **env) -> list:
    """Test clients of `count` app instances sharing one Redis and one key prefix, as a fleet does."""
    redis, prefix = fakeredis.FakeRedis(), f"fleet-{secrets.token_hex(4)}:"
    settings = {
        "ACCESS_TOKEN_VALIDATION": "introspection",
        "INTROSPECTION_CLIENT_ID": "api",
        "INTROSPECTION_CLIENT_SECRET": "api-secret",
        "REDIS_KEY_PREFIX": prefix,
        **env,
    }
    return [app_with_alice(stub.issuer, redis, **settings).test_client() for _ in range(count)]


def read(client, token: str, address: str = "192.0.2.1"):
    return client.get(
        "/api/v1/me/profile", headers={"Authorization": f"Bearer {token}"}, environ_base={"REMOTE_ADDR": address}
    )


def why(response) -> tuple[int, str]:
    return response.status_code, response.json["error"]["message"] if response.status_code != 200 else ""


def calls(stub) -> int:
    return stub.fetches["introspection"]


# ---------------------------------------------------------------- one provider call per fleet


def test_a_valid_token_costs_one_provider_call_across_instances(stub):
    first, second = instances(stub)
    assert read(first, "token-a").status_code == 200
    assert [read(second, "token-a").status_code for _ in range(3)] == [200] * 3
    assert calls(stub) == 1  # before: one per process


def test_a_refused_token_costs_one_provider_call_across_instances(stub):
    first, second = instances(stub)
    stub.active = False
    assert why(read(first, "junk")) == (401, REFUSED)
    assert why(read(second, "junk")) == (401, REFUSED)
    assert calls(stub) == 1


def test_redis_keeps_what_the_provider_said_under_the_tokens_hash_never_the_token(stub):
    [client] = instances(stub, 1)
    read(client, "secret-valid-token")
    stub.active = False
    read(client, "secret-junk-token")
    store = client.application.extensions["profile_poke"].store
    kept = {key: store.redis.get(key) for key in store.redis.scan_iter(f"{store.keys.prefix}introspection:*")}
    names = {
        base64.urlsafe_b64encode(hashlib.sha256(t).digest()).rstrip(b"=")
        for t in (b"secret-valid-token", b"secret-junk-token")
    }
    assert {key.rpartition(b":")[2] for key in kept} == names
    assert not any(b"secret-" in key + value for key, value in kept.items())
    for key in kept:
        assert 0 < store.redis.ttl(key) <= 300  # never past the token's exp (the stub's: 300 s)


def test_a_revoked_token_stops_working_on_every_instance_within_the_cache_ttl(stub, clock):
    first, second = instances(stub, INTROSPECTION_CACHE_TTL="10")
    assert read(first, "token-a").status_code == 200
    stub.active = False  # revoked at the provider
    clock.advance(9)
    assert read(second, "token-a").status_code == 200  # still fresh: the shared answer
    clock.advance(2)
    assert why(read(second, "token-a")) == (401, REFUSED)
    assert why(read(first, "token-a")) == (401, REFUSED)  # the refusal is shared too
    assert calls(stub) == 2


def test_a_token_seen_valid_is_asked_about_again_without_admission(stub, clock):
    [client] = instances(stub, 1, INTROSPECTION_CACHE_TTL="5", RATE_LIMIT_INTROSPECTION="1 per minute")
    assert read(client, "token-a").status_code == 200  # spends the address's one call
    stub.active = False
    assert why(read(client, "junk")) == (429, FROM_ADDRESS)
    stub.active = True
    clock.advance(6)  # the answer is stale: the provider is asked again, the bound is not
    assert read(client, "token-a").status_code == 200
    assert calls(stub) == 2


def test_a_revoked_token_is_seen_valid_no_more_even_when_refusals_are_not_remembered(stub, clock):
    [client] = instances(
        stub, 1, INTROSPECTION_CACHE_TTL="5", INTROSPECTION_REFUSAL_TTL="0", RATE_LIMIT_INTROSPECTION="2 per minute"
    )
    assert read(client, "token-a").status_code == 200
    stub.active = False
    clock.advance(6)
    statuses = [read(client, "token-a").status_code for _ in range(3)]
    assert statuses == [401, 401, 429]  # asked once as seen valid, then admitted like any unknown token
    assert calls(stub) == 3


def test_what_another_release_left_under_a_tokens_hash_is_as_if_never_seen(stub):
    [client] = instances(stub, 1)
    store = client.application.extensions["profile_poke"].store
    name = base64.urlsafe_b64encode(hashlib.sha256(b"token-a").digest()).rstrip(b"=").decode()
    store.redis.set(store.keys.introspection(name), b'{"principal": {"subject": "x"}, "until": 1e12}')
    assert read(client, "token-a").status_code == 200
    assert calls(stub) == 1


# ---------------------------------------------------------------- counted by address and by network


def test_the_64s_of_one_56_share_one_networks_bound(stub):
    [client] = instances(
        stub, 1, RATE_LIMIT_INTROSPECTION="2 per minute", RATE_LIMIT_INTROSPECTION_NETWORK="3 per minute"
    )
    stub.active = False
    sent = [("2001:db8:1:101::1", 2), ("2001:db8:1:102::1", 2), ("2001:db8:1:1ff::1", 1)]
    answers = [why(read(client, secrets.token_hex(8), address)) for address, times in sent for _ in range(times)]
    assert [status for status, _ in answers] == [401, 401, 401, 429, 429]
    assert answers[-1] == (429, FROM_NETWORK)
    assert read(client, "junk-x", "2001:db8:1:201::1").status_code == 401  # another /56 of the same /48
    assert calls(stub) == 4


def test_the_addresses_of_one_24_share_one_networks_bound_and_another_24_has_its_own(stub):
    [client] = instances(
        stub, 1, RATE_LIMIT_INTROSPECTION="2 per minute", RATE_LIMIT_INTROSPECTION_NETWORK="3 per minute"
    )
    stub.active = False
    statuses = [read(client, secrets.token_hex(8), f"203.0.113.{n}").status_code for n in range(1, 6)]
    assert statuses == [401, 401, 401, 429, 429]
    assert why(read(client, "junk-y", "203.0.113.77")) == (429, FROM_NETWORK)
    assert read(client, "junk-z", "203.0.114.1").status_code == 401


def test_an_ipv6_48_gets_twice_the_networks_bound(stub):
    [client] = instances(
        stub, 1, RATE_LIMIT_INTROSPECTION="2 per minute", RATE_LIMIT_INTROSPECTION_NETWORK="2 per minute"
    )
    stub.active = False
    statuses = [read(client, secrets.token_hex(8), f"2001:db8:7:{n:x}00::1").status_code for n in range(1, 7)]
    assert statuses == [401, 401, 401, 401, 429, 429]


def test_nat64_clients_are_counted_by_the_ipv4_address_they_carry(stub):
    [client] = instances(stub, 1, RATE_LIMIT_INTROSPECTION="2 per minute")
    stub.active = False
    assert [read(client, secrets.token_hex(8), "64:ff9b::cb00:7107").status_code for _ in range(3)] == [401, 401, 429]
    assert read(client, "junk-a", "64:ff9b::c633:6407").status_code == 401  # another IPv4 user behind the edge
    assert why(read(client, "junk-b", "203.0.113.7")) == (429, FROM_ADDRESS)  # the same IPv4 user, directly


def test_requests_without_an_address_share_the_bound_of_the_one_key_no_address_has(stub):
    [client] = instances(stub, 1, RATE_LIMIT_INTROSPECTION="2 per minute")
    stub.active = False
    assert [read(client, secrets.token_hex(8), None).status_code for _ in range(3)] == [401, 401, 429]
    store = client.application.extensions["profile_poke"].store
    assert store.redis.get(store.keys.token_checks_of(client_key(None))) == b"3"  # as the rate limits count it


# ---------------------------------------------------------------- the pool and each network's share


def test_once_other_networks_spent_the_pool_a_quiet_networks_new_valid_token_still_works(stub):
    [client] = instances(
        stub,
        1,
        RATE_LIMIT_INTROSPECTION="2 per minute",
        RATE_LIMIT_INTROSPECTION_NETWORK="4 per minute",
        RATE_LIMIT_INTROSPECTION_TOTAL="6 per minute",
    )
    stub.active = False
    flood = [
        read(client, secrets.token_hex(8), f"{net}.1").status_code
        for net in ("192.0.2", "198.51.100", "203.0.113")
        for _ in range(2)
    ]
    assert flood == [401] * 6  # the pool is spent
    beyond = read(client, "junk-more", "203.0.113.2")  # a flooding network past its share
    assert why(beyond) == (503, PROVIDER_BUSY)
    assert 0 < int(beyond.headers["Retry-After"]) <= 60
    stub.active = True
    assert read(client, "new-valid-token", "100.64.0.1").status_code == 200  # before: 503 for everyone
    assert read(client, "another-new-token", "100.64.0.2").status_code == 200
    assert why(read(client, "a-third-new-token", "100.64.0.3")) == (503, PROVIDER_BUSY)  # its share: 2 a window


def test_a_known_token_is_served_whatever_the_pool_says(stub):
    [client] = instances(
        stub, 1, RATE_LIMIT_INTROSPECTION="1 per minute", RATE_LIMIT_INTROSPECTION_TOTAL="1 per minute"
    )
    assert read(client, "token-a", "192.0.2.1").status_code == 200
    stub.active = False
    assert read(client, "junk", "192.0.2.2").status_code == 503  # the pool and its network's share are spent
    assert [read(client, "token-a", "192.0.2.1").status_code for _ in range(3)] == [200] * 3
    assert calls(stub) == 1


# ---------------------------------------------------------------- the provider asks us to back off


@pytest.mark.parametrize("status", [429, 503])
def test_a_provider_that_throttles_is_left_alone_by_every_instance_while_known_answers_are_served(stub, clock, status):
    first, second = instances(stub)
    assert read(first, "known-token").status_code == 200
    stub.active = False
    assert read(first, "known-junk").status_code == 401
    stub.throttle = (status, {"Retry-After": "7"})
    busy = read(first, "new-token")
    assert why(busy) == (503, PROVIDER_BUSY) and busy.headers["Retry-After"] == "7"
    assert calls(stub) == 3
    clock.advance(3)
    other = read(second, "another-new-token")  # the other instance heard of it through Redis
    assert why(other) == (503, PROVIDER_BUSY) and other.headers["Retry-After"] == "4"
    assert calls(stub) == 3  # nobody asked the provider
    assert read(second, "known-token").status_code == 200 and read(first, "known-token").status_code == 200
    assert why(read(second, "known-junk")) == (401, REFUSED)
    stub.throttle, stub.active = None, True
    clock.advance(4.5)
    assert read(second, "new-token").status_code == 200
    assert calls(stub) == 4


def test_at_the_end_of_its_back_off_an_instance_hears_that_another_was_asked_again(stub, clock):
    first, second = instances(stub)
    stub.throttle = (429, {"Retry-After": "7"})
    assert why(read(first, "token-a")) == (503, PROVIDER_BUSY)
    clock.advance(7)  # the very instant the back-off ends, for both instances
    assert why(read(second, "token-b")) == (503, PROVIDER_BUSY)  # asked, and told to wait 7 s more
    assert calls(stub) == 2
    busy = read(first, "token-c")
    assert why(busy) == (503, PROVIDER_BUSY) and busy.headers["Retry-After"] == "7"
    assert calls(stub) == 2  # the first instance read the new back-off rather than ask again


def test_a_stale_answer_is_not_served_while_the_provider_is_throttling(stub, clock):
    [client] = instances(stub, 1, INTROSPECTION_CACHE_TTL="5")
    assert read(client, "token-a").status_code == 200
    stub.throttle = (429, {"Retry-After": "30"})
    assert read(client, "new-token").status_code == 503
    clock.advance(6)  # token-a is past INTROSPECTION_CACHE_TTL: a revocation may have happened since
    assert why(read(client, "token-a")) == (503, PROVIDER_BUSY)
    assert calls(stub) == 2


@pytest.mark.parametrize(
    ("retry_after", "seconds"),
    [({"Retry-After": "12"}, 12), ({}, 5), ({"Retry-After": "99999"}, 300), ({"Retry-After": "soon"}, 5), ("date", 20)],
    ids=["seconds", "none: 5 s", "capped at 300 s", "unreadable: 5 s", "an HTTP date"],
)
def test_the_providers_retry_after_is_honoured_within_bounds(stub, clock, retry_after, seconds):
    [client] = instances(stub, 1)
    if retry_after == "date":
        retry_after = {"Retry-After": format_datetime(datetime.fromtimestamp(int(clock.time()) + 20, UTC), usegmt=True)}
    stub.throttle = (429, retry_after)
    read(client, "new-token")
    assert abs(int(read(client, "other-token").headers["Retry-After"]) - seconds) <= 1
    assert calls(stub) == 1


def test_a_throttled_call_is_logged_without_the_token(stub):
    [client] = instances(stub, 1)
    stub.throttle = (429, {"Retry-After": "9"})
    capture = LineCapture().attach("app")
    try:
        read(client, "a-secret-opaque-token")
    finally:
        capture.detach("app")
    [line] = capture.lines
    assert json.loads(line)["message"] == "identity provider asked to back off for 9 s"
    assert "a-secret-opaque-token" not in line
