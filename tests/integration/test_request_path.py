"""Each API route pays only for what it uses: the Redis commands a request sends, counted by the
real Redis (INFO commandstats, summed over every node of a cluster). No API route reads the
Flask-Session session, and a warm route makes one round trip."""

from collections import Counter
from urllib.parse import urlsplit

import pytest
import redis as redis_py

from app.store.profiles import Profile
from tests.helpers.settings import CSRF
from tests.helpers.signin import signed_in_client

pytestmark = pytest.mark.integration

REQUESTS = 5


def node_clients(redis_url: str) -> list:
    """A plain client for every node the URL names (one, or each master of a cluster)."""
    parts = urlsplit(redis_url)
    hosts = parts.netloc.rpartition("@")[2].split(",")
    if "cluster" not in parts.scheme:
        return [redis_py.Redis.from_url(redis_url)]
    seed = redis_py.Redis(*hosts[0].split(":"))
    return [redis_py.Redis(host, int(port)) for host, port in (n.split(":")[:2] for n in seed.cluster("nodes"))]


def command_calls(clients) -> Counter:
    """Calls per command name so far, over every node."""
    calls = Counter()
    for client in clients:
        for name, stats in client.info("commandstats").items():
            calls[name.removeprefix("cmdstat_")] += stats["calls"]
    return calls


def commands_sent(redis_url: str, request) -> Counter:
    """The Redis commands that REQUESTS calls of `request` send (after one warm-up call), per request."""
    clients = node_clients(redis_url)
    assert request().status_code == 200
    before = command_calls(clients)
    for _ in range(REQUESTS):
        response = request()
        assert response.status_code == 200, response.get_data(as_text=True)
    sent = command_calls(clients) - before
    for client in clients:
        client.close()
    # The counting itself (INFO, CLUSTER NODES) and a connection health check are not the route's.
    return Counter({name: calls / REQUESTS for name, calls in sent.items() if name not in {"info", "ping", "cluster"}})


def test_the_public_profile_sends_one_hmget_and_never_reads_a_session_even_with_a_cookie(app, redis_url):
    client = signed_in_client(app, "alice")
    assert commands_sent(redis_url, lambda: client.get("/api/v1/users/bob")) == {"hmget": 1}


def test_the_own_profile_by_bearer_token_sends_one_hgetall(app, redis_url, idp):
    headers = {"Authorization": f"Bearer {idp.user_token('alice')}"}
    client = app.test_client()
    assert commands_sent(redis_url, lambda: client.get("/api/v1/me/profile", headers=headers)) == {"hgetall": 1}


def test_the_own_profile_by_cookie_reads_tokens_and_profile_in_one_round_trip_and_no_session(app, redis_url):
    client = signed_in_client(app, "alice")
    sent = commands_sent(redis_url, lambda: client.get("/api/v1/me/profile", headers=CSRF))
    assert sent == {"get": 1, "pttl": 1, "hgetall": 1}


def test_a_poke_sends_the_pokers_profile_read_and_the_poke_script_only(app, redis_url, idp):
    headers = {"Authorization": f"Bearer {idp.user_token('alice')}"}
    profiles = app.extensions["profile_poke"].store.profiles
    for index in range(REQUESTS + 1):  # a new target each time: a cooldown would answer 429
        profiles.put(Profile(f"target{index}", f"@target{index}", f"Target {index}"))
    targets = iter(f"target{index}" for index in range(REQUESTS + 1))
    client = app.test_client()
    sent = commands_sent(
        redis_url, lambda: client.post("/api/v1/pokes", json={"username": next(targets)}, headers=headers)
    )
    # Whether the cooldown's master has a replica to confirm it on (app.store.replicas) is asked at most
    # once per master and process every 5 s, not per poke.
    assert sent.pop("role", 0) * REQUESTS <= len(node_clients(redis_url))
    # Redis counts the commands the script runs (HGET the target, SET NX the cooldown) as well.
    expected = {"hgetall": 1, "evalsha": 1, "hget": 1, "set": 1}
    if "cluster" in redis_url:
        # redis-py 8's cluster pipeline asks a node for an EVALSHA's keys (COMMAND GETKEYS) before
        # routing it, though the keys are in its arguments: a round trip more, on clusters only.
        expected["command|getkeys"] = 1
    assert sent == expected
