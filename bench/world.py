"""Everything a `make bench` run measures against: one Redis and dev provider, the demo users and the
poke targets written by the service's own code, a token, and every implementation started once; and
how many requests reached the provider (its /__dev/stats)."""

import os
import secrets
import shutil
import subprocess
import sys
import time

import redis

from app.store.keys import Keys
from app.store.profile_record import Profile
from app.store.profiles import Profiles
from dev import oidc_driver
from dev.otlp_receiver import Receiver
from dev.services import ROOT, free_port, idp_issuer, local_app_env, start_idp, start_redis

from .load import Window
from .preload import preload
from .servers import (
    STATE,
    UVICORN_CONFIGS,
    BenchFailed,
    Server,
    start_fastapi_peer,
    start_flask_peer,
    start_service,
)

USER, PASSWORD = "alice", "demo"
PREFIX = "pp:"
ROUTES = ("public profile", "own profile, bearer", "poke")
# BENCH_TRACING=1 adds the service with every request traced and exported (to dev/otlp_receiver.py).
TRACED_SERVICE = "service, tracing on"


class World:
    """The servers of one run and the poke targets they share (see `window`)."""

    def __init__(self, started: list, seconds: float):
        shutil.rmtree(STATE, ignore_errors=True)
        redis_port, idp_port = free_port(), free_port()
        self.idp_base = f"http://127.0.0.1:{idp_port}"
        self.redis = start_redis(redis_port, workdir=STATE / "redis")
        started.append(self.redis)
        self.redis_url = f"redis://127.0.0.1:{redis_port}/0"
        redirect = f"http://127.0.0.1:{free_port()}/"
        started.append(
            start_idp(
                idp_port,
                log_path=STATE / "idp.log",
                env={
                    "IDP_API_CLIENT_SECRET": secrets.token_urlsafe(32),
                    "IDP_ACCESS_TOKEN_TTL": "3600",
                    "IDP_REDIRECT_URIS": f"{redirect}auth/callback",
                    "IDP_POST_LOGOUT_REDIRECT_URIS": redirect,
                },
            )
        )
        self.env = local_app_env(idp_issuer(idp_port), redirect, self.redis_url, REDIS_KEY_PREFIX=PREFIX)
        subprocess.run(
            [sys.executable, "-m", "flask", "--app", "wsgi", "users", "import", "dev/demo-users.json"],
            env={**os.environ, **self.env},
            cwd=ROOT,
            check=True,
        )
        # Room for a poke window at 12,000 req/s twice over; when the next window might run past the last
        # target, the cooldowns are cleared (once the last window's requests are done) and it starts over.
        self.window_room = int(12_000 * seconds)
        self.targets = max(50_000, 2 * self.window_room)
        self.next_target = 1
        self._seed_targets()
        # BENCH_DATA=large: a million more profiles and ten million live cooldowns beside them.
        self.large = None
        if os.environ.get("BENCH_DATA") == "large":
            client = redis.Redis.from_url(self.redis_url)
            self.large = preload(client, redis_port, PREFIX)
            client.close()
        self.token = oidc_driver.user_tokens(
            self.env["OIDC_ISSUER_URL"], "profile-poke-web", self.env["OIDC_REDIRECT_URI"], USER, PASSWORD
        )["access_token"]
        self.service_env = {**self.env, "METRICS_TOKEN": secrets.token_urlsafe(32)}
        self.servers: list[Server] = []

    def start_peers(self, started: list) -> None:
        """The service and every peer; the service runs as in production, metrics on, and the peers have
        neither metrics nor an access log."""
        service_env = self.service_env
        servers = [start_service(started, service_env), start_flask_peer(started, self.env)]
        servers += [start_fastapi_peer(started, self.env, name) for name in UVICORN_CONFIGS]
        if os.environ.get("BENCH_TRACING") == "1":
            receiver = Receiver(keep=False).start()
            started.append(receiver)  # stopped with the servers (it has a stop(), as they do)
            traced_env = {**service_env, "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url}
            servers.append(start_service(started, traced_env, TRACED_SERVICE))
        self.servers = servers

    def provider_requests(self) -> int:
        """Every request the provider has counted so far (the sum of /__dev/stats' counters)."""
        return _counted(oidc_driver.stats(self.idp_base))

    def _seed_targets(self) -> None:
        seed_targets(self.redis_url, PREFIX, self.targets)

    def window(self, server: Server, route: str, close: bool) -> Window:
        """What wrk sends to `server` on `route`; each poke names a target never poked since the
        cooldowns were last cleared, so every one is a first poke, answered 200."""
        bearer = {"Authorization": f"Bearer {self.token}"}
        if route == "public profile":
            return Window(f"{server.base}/api/v1/users/bob", {}, close)
        if route == "own profile, bearer":
            return Window(f"{server.base}/api/v1/me/profile", bearer, close)
        if self.next_target + self.window_room > self.targets:
            time.sleep(1)  # requests the last window sent may still be in a server's queue
            self._clear_cooldowns()
            self.next_target = 1
        return Window(f"{server.base}/api/v1/pokes", bearer, close, poke_from=self.next_target)

    def check_poke_window(self, figures: dict) -> None:
        """Move past the targets a poke window used; BenchFailed when it ran past the seeded ones."""
        if figures["last_target"] > self.targets:
            raise BenchFailed(f"a poke window ran past the {self.targets} seeded targets: raise their number")
        self.next_target = figures["last_target"] + 1

    def _clear_cooldowns(self) -> None:
        client = redis.Redis.from_url(self.redis_url)
        batch = []
        for key in client.scan_iter(match=f"{PREFIX}cooldown:{{t*}}:{USER}", count=5000):
            batch.append(key)
            if len(batch) == 5000:
                client.unlink(*batch)
                batch = []
        if batch:
            client.unlink(*batch)
        client.close()


def _counted(stats) -> int:
    if isinstance(stats, bool):
        return 0
    if isinstance(stats, int):
        return stats
    if isinstance(stats, dict):
        return sum(_counted(value) for value in stats.values())
    return 0  # the lists of recent requests' parameters repeat what the counters count


def seed_targets(redis_url: str, prefix: str, count: int) -> None:
    """Profiles t0000001… for the poke route, written by the service's own Profiles.put into pipelines."""
    print(f"seeding {count} poke targets", flush=True)
    client = redis.Redis.from_url(redis_url)
    for start in range(1, count + 1, 10_000):
        pipe = client.pipeline(transaction=False)
        profiles = Profiles(pipe, Keys(prefix))
        for index in range(start, min(start + 10_000, count + 1)):
            name = f"t{index:07d}"
            profiles.put(Profile(username=name, handle=name, display_name=name))
        pipe.execute()
    client.close()
