"""A worker told to stop is gone within graceful_timeout whatever its threads are doing: under the
shipped config (one worker), with every thread held by a refresh the provider does not answer and
clients stalled mid-headers and mid-body, TERM to the worker (as the master sends it on a reload or
after max_requests) and INT to the whole process group (Ctrl-C in a terminal) both end it in time."""

import contextlib
import os
import signal
import threading
import time
from pathlib import Path

import pytest
import requests

from bench.studies.hang import SHORT_CLIENT, prepare
from bench.studies.slow_clients import slow_connections
from dev import oidc_driver
from dev.services import free_port
from tests.helpers.real_services import delete_prefix, integration_env, start_live_app, start_own_idp

pytestmark = pytest.mark.integration
PROVIDER_HOLDS_MS = 40_000
# TERM is tried with a short graceful_timeout (the worker serves what is in flight for that long),
# INT with the shipped one (20 s: a quick stop must not wait for it).
GRACEFUL_S = {"TERM to the worker": 3, "INT to the process group": 20}
# Beyond the grace: the worker's loop notices within a second, then the process exits; a loaded machine.
EXIT_S = 4.0


@pytest.fixture(scope="module")
def provider(workdir):
    """A provider of the module's own, whose token endpoint the tests hold."""
    port = free_port()
    server, idp = start_own_idp(workdir, [port])
    yield idp
    server.stop()


def worker_of(master_pid: int) -> int:
    (worker,) = Path(f"/proc/{master_pid}/task/{master_pid}/children").read_text().split()
    return int(worker)


def is_gone(pid: int) -> bool:
    """Whether `pid` has exited (a zombie its parent has not reaped yet counts)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


def refreshes_held_at_the_provider(url: str, sessions: list) -> list[threading.Thread]:
    """One cookie call per session, each due a refresh the provider holds: every worker thread busy."""

    def call(http):
        with contextlib.suppress(requests.RequestException):
            http.get(f"{url}/api/v1/me/profile", headers={"X-CSRF": "1"}, timeout=PROVIDER_HOLDS_MS / 1000 + 20)

    threads = [threading.Thread(target=call, args=(http,), daemon=True) for http in sessions]
    for thread in threads:
        thread.start()
    return threads


@pytest.mark.parametrize("how", GRACEFUL_S)
def test_a_stopped_worker_is_gone_within_graceful_timeout_whatever_its_threads_are_doing(
    provider, redis_url, workdir, how
):
    port = provider.app_ports[0]
    settings = {"OIDC_CLIENT_ID": SHORT_CLIENT, "IDP_TIMEOUT": "120"}
    settings["GUNICORN_CMD_ARGS"] = f"--graceful-timeout {GRACEFUL_S[how]}"
    env = integration_env(provider, redis_url, 0, **settings)
    server, live = start_live_app(env, port, workdir, workers=1)
    slow = []
    try:
        sessions, _ = prepare(live.url, {"issuer": provider.issuer})
        worker = worker_of(server.pid)
        oidc_driver.delay_token_endpoint(provider.base, PROVIDER_HOLDS_MS)
        calls = refreshes_held_at_the_provider(live.url, sessions)
        slow = slow_connections(live.url, silent=8, heads=8, bodies=8)
        time.sleep(1)
        assert all(call.is_alive() for call in calls)  # every thread is held at the provider
        started = time.monotonic()
        if how == "TERM to the worker":
            os.kill(worker, signal.SIGTERM)
        else:
            os.killpg(server.pid, signal.SIGINT)
        while not is_gone(worker) and time.monotonic() - started < PROVIDER_HOLDS_MS / 1000:
            time.sleep(0.05)
        # gunicorn's gthread: after TERM the worker waited at exit on its blocked threads (for a stalled
        # client, for ever); after INT the master killed it at graceful_timeout. A quick stop waits for
        # nothing; a graceful one serves what is in flight for graceful_timeout and not a moment more.
        limit = EXIT_S if how.startswith("INT") else GRACEFUL_S[how] + EXIT_S
        assert time.monotonic() - started < limit
    finally:
        oidc_driver.delay_token_endpoint(provider.base, 0)
        for connection in slow:
            connection.close()
        server.stop()
        delete_prefix(redis_url, env["REDIS_KEY_PREFIX"])
