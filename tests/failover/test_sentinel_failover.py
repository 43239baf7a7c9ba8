"""A Sentinel-managed master dies under load, its replica cut off 50 ms before: the service, configured
with REDIS_URL=redis+sentinel://..., rides through and loses nothing it acknowledged (issue 29). Before
that, what confirming a write on the replica costs, and what happens when the replica does not answer.

One master, one replica, three sentinels (quorum 2, down-after 1 s); the app under gunicorn with the
shipped settings (REDIS_WAIT_TIMEOUT_MS 100)."""

import os
import secrets
import signal
import subprocess
import time

import pytest
import requests

from app import create_app
from app.extensions import make_redis
from app.store.keys import Keys
from config import Config
from dev.redis_ha import replica_ports, start_sentinel_set, wait_for
from dev.services import free_port
from tests.helpers.failover_figures import WAIT_TIMEOUT_MS, wait_cost, write, write_cost
from tests.helpers.failover_run import (
    ROUNDS,
    assert_rode_through,
    cut_off,
    kill_behind_its_replica,
    reconnect,
    ride_through,
    served_world,
)
from tests.helpers.real_services import integration_env

pytestmark = pytest.mark.integration
WAIT_TIMEOUT = 0.1  # REDIS_WAIT_TIMEOUT_MS's default, in seconds


@pytest.fixture(scope="module")
def sentinels(workdir):
    ha = start_sentinel_set(workdir / "failover-sentinel", down_after_ms=1000)
    yield ha
    ha.stop()


@pytest.fixture(scope="module")
def world(failover_idp, sentinels, workdir):
    server, world = served_world(failover_idp, sentinels.url(), 1, workdir)
    yield world
    server.stop()


def test_confirming_a_write_on_the_replica_costs_a_fraction_of_a_millisecond(sentinels):
    sentinels.revive_replica()
    costs = wait_cost(make_redis(sentinels.url(), socket_timeout=1), f"wait-cost:{secrets.token_hex(4)}")
    write_cost({"Sentinel: master + replica, REDIS_URL redis+sentinel://": costs}, "What WAIT costs per write")
    # A WAIT that ran out its timeout would cost every write at least WAIT_TIMEOUT_MS (see the cluster's test).
    assert costs["confirmed"][0] < 0.9 * WAIT_TIMEOUT_MS * 1000, costs


def test_the_rate_limiter_counts_on_the_master_the_sentinels_name(failover_idp, sentinels):
    env = integration_env(failover_idp, sentinels.url(), 1, RATE_LIMIT_LOGIN="2 per minute")
    client = create_app(Config(env)).test_client()
    assert [client.get("/auth/login").status_code for _ in range(3)] == [302, 302, 429]
    master = make_redis(f"redis://127.0.0.1:{sentinels.named_master()}/0", socket_timeout=1)
    assert master.keys(f"{env['REDIS_KEY_PREFIX']}limits*")


def test_a_sentinel_that_does_not_answer_is_skipped_at_once(sentinels):
    gone = f"127.0.0.1:{free_port()}"
    client = make_redis(sentinels.url().replace("sentinel://", f"sentinel://{gone},"), socket_timeout=1)
    started = time.monotonic()
    assert client.ping()
    assert time.monotonic() - started < 0.5  # redis-py's default retries it ten times, backing off


def test_a_poke_waits_for_the_replica_and_at_most_redis_wait_timeout_ms(world, sentinels):
    sentinels.revive_replica()
    master, replica = sentinels.named_master(), sentinels.replica()
    assert replica_ports(master) == [replica]
    token = world.idp.user_token("alice")
    targets = [next(world.targets["alice"]) for _ in range(2)]

    def poke(target: str) -> float:
        started = time.monotonic()
        answer = requests.post(
            f"{world.live.url}/api/v1/pokes",
            json={"username": target},
            headers={"Authorization": f"Bearer {token}"},
            timeout=10,
        )
        assert answer.status_code == 200, answer.text
        return time.monotonic() - started

    before = world.unconfirmed()["poke"]
    poke(targets[0])
    assert world.unconfirmed()["poke"] == before  # the replica confirmed it
    os.kill(sentinels.servers[replica].pid, signal.SIGSTOP)
    try:
        waited = poke(targets[1])
    finally:
        os.kill(sentinels.servers[replica].pid, signal.SIGCONT)
    assert waited >= WAIT_TIMEOUT, waited  # it waited for a replica that could not answer...
    assert world.unconfirmed()["poke"] == before + 1  # ...then answered, counted as unconfirmed
    cooldown = Keys(world.live.env["REDIS_KEY_PREFIX"]).cooldown("alice", targets[1])
    on_replica = make_redis(f"redis://127.0.0.1:{replica}/0", socket_timeout=1)
    wait_for(lambda: on_replica.exists(cooldown), 5, "the replica catching up")


def test_each_write_while_the_replica_is_cut_off_is_counted_unconfirmed(world, sentinels):
    """A replica behind a broken link is still the one the sentinels promote: a master that no longer lists it
    must not take that for "no replica" and answer writes as confirmed (which lost 13 pokes in a failover)."""
    sentinels.revive_replica()
    master, replica = sentinels.named_master(), sentinels.replica()
    token = world.idp.user_token("alice")
    cooldowns = Keys(world.live.env["REDIS_KEY_PREFIX"]).cooldown
    targets = [next(world.targets["alice"]) for _ in range(6)]
    on_master = make_redis(f"redis://127.0.0.1:{master}/0", socket_timeout=1)
    on_replica = make_redis(f"redis://127.0.0.1:{replica}/0", socket_timeout=1)
    before = world.unconfirmed()["poke"]
    subprocess.run(["sh", "-c", cut_off(master, replica)], check=True, capture_output=True)
    try:
        wait_for(lambda: not replica_ports(master), 5, "the master seeing its replica gone")
        for target in targets:
            answer = requests.post(
                f"{world.live.url}/api/v1/pokes",
                json={"username": target},
                headers={"Authorization": f"Bearer {token}"},
                timeout=10,
            )
            assert answer.status_code == 200, answer.text
        # Each acknowledged cooldown is on the master alone, and each was counted: none passed as confirmed.
        assert [on_master.exists(cooldowns("alice", t)) for t in targets] == [1] * len(targets)
        assert [on_replica.exists(cooldowns("alice", t)) for t in targets] == [0] * len(targets)
        assert world.unconfirmed()["poke"] - before == len(targets)
    finally:
        reconnect(replica)
    wait_for(lambda: all(on_replica.exists(cooldowns("alice", t)) for t in targets), 10, "the replica catching up")
    assert "a poke write was not confirmed: its master has no replica connected" in world.live.log_path.read_text()


@pytest.mark.parametrize("round_", ROUNDS)
def test_a_sentinel_failover_under_load_costs_a_few_503s_and_nothing_acknowledged(world, sentinels, round_):
    sentinels.revive_replica()
    master, replica = sentinels.named_master(), sentinels.replica()
    figures, traffic = ride_through(
        "Sentinel: master killed (SIGKILL) 50 ms after its replica was cut off",
        world,
        event=lambda: kill_behind_its_replica((master, sentinels.servers[master].pid), replica),
        done=lambda: sentinels.named_master() == replica,
    )
    write([figures], "Sentinel: 1 master + 1 replica, 3 sentinels, down-after 1 s")
    assert figures.failed, "killing the master under load failed no request: did the kill happen?"
    assert_rode_through(figures, traffic)
