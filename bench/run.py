"""`make bench`: first the best ceiling of the run (a bare Flask route, bench/ceiling.py, under every
candidate gunicorn config), then every API route under the shipped config (gunicorn.conf.py) as a
ratio to that best ceiling and to the same-config ceiling, the cost of metrics on the poke route and of
tracing on every route (bench/tracing_cost.py),
and with BENCH_DATA=large the routes again over a million profiles and ten million live cooldowns.
A route that misses a target gets a py-spy profile. Writes bench/results/latest.json and latest.md."""

import json
import math
import os
import secrets
import shutil
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import redis
import requests

from app.store.keys import Keys
from app.store.profiles import Profile, Profiles
from config import Config
from dev import oidc_driver
from dev.dpop import DpopKey
from dev.services import ROOT, StartFailed, free_port, idp_issuer, start_idp, start_redis, supervised

from .preload import preload
from .profiling import profile_route
from .report import P99_OVER_P50, TARGETS, markdown
from .servers import (
    CANDIDATES,
    CONNECTIONS,
    SECONDS,
    STATE,
    WARMUP_SECONDS,
    WRK_THREADS,
    BenchFailed,
    shipped_config,
    start_server,
    summary,
    wrk,
)
from .tracing_cost import POKE_WINDOWS, tracing_cost

RESULTS = ROOT / "bench" / "results"
LARGE = os.environ.get("BENCH_DATA", "") == "large"
USER, PASSWORD = "alice", "demo"
# Metrics cost: pairs of short poke windows with and without metrics, in ABBA order, so that a load
# rising or falling during the run weighs on both sides alike; the cost is the median pair.
OVERHEAD_ROUNDS = 6
OVERHEAD_SECONDS = max(3, SECONDS // 2)


def seed_targets(redis_url: str, prefix: str, count: int) -> None:
    """Profiles t0000001… for the poke route, written by the app's own Profiles.put into pipelines."""
    client = redis.Redis.from_url(redis_url)
    for start in range(1, count + 1, 10_000):
        pipe = client.pipeline(transaction=False)
        profiles = Profiles(pipe, Keys(prefix))
        for index in range(start, min(start + 10_000, count + 1)):
            name = f"t{index:07d}"
            profiles.put(Profile(username=name, handle=name, display_name=name))
        pipe.execute()
    client.close()


def sign_in(base: str) -> str:
    """The session cookie of USER, signed in through /auth/login and the provider's login form."""
    with requests.Session() as http:
        start = http.get(f"{base}auth/login", allow_redirects=False, timeout=10)
        callback = oidc_driver.login_at_idp(http, start.headers["Location"], USER, PASSWORD)
        done = http.get(callback, allow_redirects=False, timeout=10)
        cookie = http.cookies.get("pp_session")
        if done.status_code != 302 or not cookie:
            raise BenchFailed(f"sign-in failed: {done.status_code} {done.text[:300]}")
        return cookie


def idp_total(counters) -> int:
    """The sum of every counter in the provider's (nested) request statistics."""
    return sum(map(idp_total, counters.values())) if isinstance(counters, dict) else counters


def best_ceiling(started: list) -> dict:
    """The bare route under every candidate config, one after the other: name -> wrk figures."""
    figures = {}
    for name, options in CANDIDATES.items():
        port = free_port()
        server = start_server(started, f"ceiling {name}", "bench.ceiling:app", port, "", {}, options)
        wrk(f"ceiling {name} warm-up", server, f"http://127.0.0.1:{port}/", WARMUP_SECONDS)
        figures[name] = wrk(f"ceiling {name}", server, f"http://127.0.0.1:{port}/", SECONDS)
        server.stop()
        started.remove(server)
    return figures


class Bench:
    """The servers of one run and the state the poke route moves through (never a poked pair twice)."""

    def __init__(self, started: list):
        shutil.rmtree(STATE, ignore_errors=True)
        redis_port, idp_port, app_port = free_port(), free_port(), free_port()
        started.append(start_redis(redis_port, workdir=STATE / "redis"))
        self.redis_port, self.redis_url = redis_port, f"redis://127.0.0.1:{redis_port}/0"
        self.base = f"http://127.0.0.1:{app_port}/"
        self.idp_base = f"http://127.0.0.1:{idp_port}"
        started.append(
            start_idp(
                idp_port,
                log_path=STATE / "idp.log",
                env={
                    "IDP_API_CLIENT_SECRET": secrets.token_urlsafe(32),
                    "IDP_ACCESS_TOKEN_TTL": "3600",
                    "IDP_REDIRECT_URIS": f"{self.base}auth/callback,{self.base}",
                    "IDP_POST_LOGOUT_REDIRECT_URIS": self.base,
                },
            )
        )
        self.env = {
            "OIDC_ISSUER_URL": idp_issuer(idp_port),
            "OIDC_CLIENT_ID": "profile-poke-web",
            "OIDC_REDIRECT_URI": f"{self.base}auth/callback",
            "SESSION_COOKIE_SECURE": "false",
            "REDIS_URL": self.redis_url,
            "SECRET_KEY": secrets.token_urlsafe(48),
        }
        subprocess.run(
            [sys.executable, "-m", "flask", "--app", "wsgi", "users", "import", "dev/demo-users.json"],
            env={**os.environ, **self.env},
            cwd=ROOT,
            check=True,
        )
        # BENCH_CONFIG names a candidate to measure the routes under instead (for comparing configs).
        self.shipped, options = shipped_config()
        if os.environ.get("BENCH_CONFIG"):
            self.shipped = os.environ["BENCH_CONFIG"]
            options = CANDIDATES[self.shipped]
        self.options = options
        # Production runs with metrics on; the plain app is the same minus METRICS_TOKEN.
        metered = {**self.env, "METRICS_TOKEN": secrets.token_urlsafe(32)}
        self.app = start_server(started, "app", "wsgi:app", app_port, "api/v1/openapi.json", metered, options)
        plain_port = free_port()
        self.plain = start_server(
            started, "app-plain", "wsgi:app", plain_port, "api/v1/openapi.json", self.env, options
        )
        self.plain_url = f"http://127.0.0.1:{plain_port}/api/v1/pokes"
        ceiling_port = free_port()
        self.ceiling = start_server(started, "ceiling", "bench.ceiling:app", ceiling_port, "", {}, options)
        self.ceiling_url = f"http://127.0.0.1:{ceiling_port}/"
        token = oidc_driver.user_tokens(
            self.env["OIDC_ISSUER_URL"], self.env["OIDC_CLIENT_ID"], self.env["OIDC_REDIRECT_URI"], USER, PASSWORD
        )["access_token"]
        # The same user's token bound to a key (RFC 9449): every request carries a fresh proof.
        self.dpop_key = DpopKey.generate("ES256")
        bound = oidc_driver.user_tokens(
            self.env["OIDC_ISSUER_URL"],
            self.env["OIDC_CLIENT_ID"],
            self.env["OIDC_REDIRECT_URI"],
            USER,
            PASSWORD,
            dpop_key=self.dpop_key,
        )["access_token"]
        cookie = sign_in(self.base)
        self.routes = {
            "public_profile": (f"{self.base}api/v1/users/bob", {}),
            "own_profile_bearer": (f"{self.base}api/v1/me/profile", {"Authorization": f"Bearer {token}"}),
            "own_profile_cookie": (f"{self.base}api/v1/me/profile", {"Cookie": f"pp_session={cookie}", "X-CSRF": "1"}),
            "poke": (f"{self.base}api/v1/pokes", {"Authorization": f"Bearer {token}"}),
            "own_profile_dpop": (f"{self.base}api/v1/me/profile", {"Authorization": f"DPoP {bound}"}),
        }
        self.max_rps = 10_000.0
        self.next_target, self.targets = 1, 0

    def seed(self, rps: float, windows: int) -> None:
        """Enough never-poked targets for `windows` poke windows at up to 1.5 times `rps`."""
        self.targets = max(100_000, math.ceil(rps * 1.5 * windows * (SECONDS + WARMUP_SECONDS)))
        self.max_rps = rps * 1.5
        print(f"seeding {self.targets} poke targets", flush=True)
        seed_targets(self.redis_url, Config(self.env).REDIS_KEY_PREFIX, self.targets)

    def route(self, name: str, seconds: int, server=None, url=None, label=None) -> dict:
        """wrk on route `name` (on `server`/`url` instead of the metered app when given)."""
        default_url, headers = self.routes[name]
        poke_from = self.next_target if name == "poke" else None
        proofs = self.proofs(url or default_url, seconds, headers) if name == "own_profile_dpop" else None
        figures = wrk(label or name, server or self.app, url or default_url, seconds, headers, poke_from, proofs)
        if poke_from is not None:
            self.next_target = figures["last_target"] + 1
            if self.next_target > self.targets:
                raise BenchFailed(f"poke ran past the {self.targets} seeded targets")
        return figures

    def proofs(self, url: str, seconds: int, headers: dict) -> Path:
        """A file of fresh DPoP proofs for GET `url`, enough for `seconds` at the fastest rate seen."""
        token = headers["Authorization"].removeprefix("DPoP ")
        count = math.ceil(self.max_rps * seconds) + 1000
        path = STATE / "dpop-proofs.txt"
        path.write_text("".join(self.dpop_key.proof("GET", url, access_token=token) + "\n" for _ in range(count)))
        return path

    def routes_with_ceilings(self, prefix: str = "") -> tuple[dict, dict]:
        """The same-config ceiling, every route, the ceiling again: (routes, mean ceiling) figures."""
        before = wrk(f"{prefix}same-config ceiling before", self.ceiling, self.ceiling_url, SECONDS)
        measured = {name: self.route(name, SECONDS, label=f"{prefix}{name}") for name in self.routes}
        after = wrk(f"{prefix}same-config ceiling after", self.ceiling, self.ceiling_url, SECONDS)
        ceiling = {key: (before[key] + after[key]) / 2 for key in ("rps", "p50_us", "p99_us")}
        return measured, ceiling


def run(started: list) -> None:
    """Start everything (into `started`), measure, write the results."""
    load_before = os.getloadavg()
    bench = Bench(started)
    ceilings = best_ceiling(started)
    best_name = max(ceilings, key=lambda name: ceilings[name]["rps"])
    best = ceilings[best_name]
    bench.seed(best["rps"], 4 + 2 * OVERHEAD_ROUNDS + POKE_WINDOWS + (1 if LARGE else 0))
    for name in bench.routes:
        bench.route(name, WARMUP_SECONDS, label=f"{name} warm-up")
    bench.route("poke", WARMUP_SECONDS, bench.plain, bench.plain_url, "poke without metrics warm-up")

    oidc_driver.reset_stats(bench.idp_base)
    measured, same = bench.routes_with_ceilings()
    with_metrics, without_metrics = [], []
    for round_number in range(OVERHEAD_ROUNDS):
        for metered in (False, True) if round_number % 2 == 0 else (True, False):
            if metered:
                label = f"poke with metrics {round_number}"
                with_metrics.append(bench.route("poke", OVERHEAD_SECONDS, label=label))
            else:
                label = f"poke without metrics {round_number}"
                without_metrics.append(bench.route("poke", OVERHEAD_SECONDS, bench.plain, bench.plain_url, label))
    idp_requests = idp_total(oidc_driver.stats(bench.idp_base))
    tracing = tracing_cost(bench, started, bench.options)

    results = {
        "shipped_config": bench.shipped,
        "best_ceiling": {"config": best_name, **summary(best)},
        "ceilings": {name: summary(figures) for name, figures in ceilings.items()},
        "same_config_ceiling": summary(same),
        "routes": {name: summary(figures, best["rps"], same["rps"]) for name, figures in measured.items()},
        "idp_requests": idp_requests,
        "metrics_overhead": metrics_cost(with_metrics, without_metrics, metrics_code_us()),
        "tracing": tracing,
    }
    missed = [
        name
        for name, row in results["routes"].items()
        if name in TARGETS and (row["ratio"] < TARGETS[name] or row["p99_ms"] > P99_OVER_P50 * row["p50_ms"])
    ]
    results["profiles"] = []
    for name in missed:
        url, headers = bench.routes[name]
        poke_from = bench.next_target if name == "poke" else None
        figures = profile_route(name, bench.app, url, SECONDS, RESULTS, headers, poke_from)
        if poke_from is not None:
            bench.next_target = figures["last_target"] + 1
        results["profiles"].append(f"profile-{name}.txt")
    if LARGE:
        results["large"] = measure_large(bench, results)
    machine = (
        f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC, {os.cpu_count()} cores, load average "
        f"{load_before[0]:.1f} at the start and {os.getloadavg()[0]:.1f} at the end (other work shares the cores); "
        f"`wrk -t{WRK_THREADS} -c{CONNECTIONS} -d{SECONDS}s`, all on the same cores."
    )
    RESULTS.mkdir(exist_ok=True)
    report = markdown(results, {n: f["split"] for n, f in measured.items()}, machine)
    for name in ("latest", "large") if LARGE else ("latest",):
        (RESULTS / f"{name}.json").write_text(json.dumps(results, indent=2) + "\n")
        (RESULTS / f"{name}.md").write_text(report)
    print(report)


def metrics_cost(with_metrics: list, without_metrics: list, code_us: float) -> dict:
    """What metrics cost on the poke route: server CPU per request (steady on a busy machine, where
    req/s is not) with and without them, the median over the pairs of windows and its spread, and
    the metrics code of a poke timed alone (`code_us`) as a share of the CPU of a poke without it."""

    def mean(windows: list, key: str) -> float:
        return sum(window[key] for window in windows) / len(windows)

    pairs = sorted(w["cpu_us"] / wo["cpu_us"] - 1 for w, wo in zip(with_metrics, without_metrics, strict=True))
    without_cpu = mean(without_metrics, "cpu_us")
    return {
        "with_rps": round(mean(with_metrics, "rps"), 1),
        "without_rps": round(mean(without_metrics, "rps"), 1),
        "with_cpu_us": round(mean(with_metrics, "cpu_us"), 1),
        "without_cpu_us": round(without_cpu, 1),
        "overhead": round(statistics.median(pairs), 4),
        "pairs": [round(pair, 4) for pair in pairs],
        "code_us": code_us,
        "code_overhead": round(code_us / without_cpu, 4),
    }


def metrics_code_us() -> float:
    """The metrics code of one poke timed by itself (bench/metrics_code.py), in µs."""
    output = subprocess.run(
        [sys.executable, "-m", "bench.metrics_code"], cwd=ROOT, check=True, stdout=subprocess.PIPE, text=True
    ).stdout
    return round(sum(json.loads(output).values()), 2)


def measure_large(bench: Bench, results: dict) -> dict:
    """Preload the large data set, then the routes again; each route's drift in same-config ratio."""
    client = redis.Redis.from_url(bench.redis_url)
    started = time.monotonic()
    sizes = preload(client, bench.redis_port, Config(bench.env).REDIS_KEY_PREFIX)
    seconds = time.monotonic() - started
    client.close()
    oidc_driver.reset_stats(bench.idp_base)
    measured, same = bench.routes_with_ceilings("large: ")
    if idp_total(oidc_driver.stats(bench.idp_base)):
        raise BenchFailed("the identity provider was called during the large-data windows")
    routes = {}
    for name, figures in measured.items():
        row = summary(figures, results["best_ceiling"]["rps"], same["rps"])
        row["empty_ratio"] = results["routes"][name]["same_config_ratio"]
        row["drift"] = round(row["same_config_ratio"] / row["empty_ratio"] - 1, 4)
        routes[name] = row
    return {
        "preload_seconds": round(seconds, 1),
        "sizes": sizes,
        "same_config_ceiling": summary(same),
        "routes": routes,
    }


def main() -> int:
    try:
        with supervised() as started:
            run(started)
        return 0
    except KeyboardInterrupt:
        return 130
    except (BenchFailed, StartFailed, subprocess.CalledProcessError, oidc_driver.DriverError) as error:
        print(f"make bench: {error}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
