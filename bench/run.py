"""`make bench`: the service against the same three routes written plainly in Flask (same gunicorn
settings) and in FastAPI under uvicorn (2 workers, two configurations), in interleaved rounds, with
keep-alive clients and with `Connection: close`. Per route and implementation: req/s, p50, p99 and CPU
per request by process (server, Redis, wrk); the service's ratio to each peer with its spread over the
rounds. BENCH_SECONDS (default 5) per window, BENCH_ROUNDS (default 5); BENCH_PROFILE=1 adds py-spy
profiles of the service's routes, BENCH_TRACING=1 the service with tracing on, and BENCH_DATA=large
runs it all over a million more profiles and ten million live cooldowns.
Writes bench/results/latest.md and latest.json, and a dated copy of each."""

import json
import os
import runpy
import subprocess
import sys
from datetime import UTC, datetime

from dev import oidc_driver
from dev.services import ROOT, StartFailed, supervised

from .load import CONNECTIONS, WRK_THREADS, drive
from .profiling import profile_route
from .report import markdown, summarize
from .servers import SERVICE, BenchFailed
from .world import ROUTES, World

RESULTS = ROOT / "bench" / "results"
SECONDS = float(os.environ.get("BENCH_SECONDS", "5"))
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "5"))
WARMUP_SECONDS = 1
MODES = {"keep-alive": False, "Connection: close": True}


def measure(world: World) -> dict:
    """mode -> route -> implementation -> the figures of each round. Each round visits every route and
    mode, and within one the implementations back to back, in an order that rotates every round."""
    servers = world.servers
    for server in servers:
        for route in ROUTES:
            window(world, server, route, False, WARMUP_SECONDS, "warm-up")
    windows = {mode: {route: {server.name: [] for server in servers} for route in ROUTES} for mode in MODES}
    for round_number in range(ROUNDS):
        shift = round_number % len(servers)
        order = servers[shift:] + servers[:shift]
        for route in ROUTES:
            for mode, close in MODES.items():
                for server in order:
                    figures = window(world, server, route, close, SECONDS, f"round {round_number + 1}, {mode}")
                    windows[mode][route][server.name].append(figures)
    return windows


def window(world: World, server, route: str, close: bool, seconds: float, label: str) -> dict:
    """One wrk window of `route` on `server`."""
    figures = drive(
        f"{label}, {route}, {server.name}",
        world.window(server, route, close),
        seconds,
        server.process.pid,
        world.redis.pid,
    )
    if route == "poke":
        world.check_poke_window(figures)
    return figures


def profiles(world: World) -> list[str]:
    """py-spy profiles of the service's workers on each route (keep-alive), written to bench/results/."""
    service = next(server for server in world.servers if server.name == SERVICE)
    written = []
    for route in ROUTES:
        name = route.replace(",", "").replace(" ", "_")
        profile_route(name, service, world.window(service, route, False), SECONDS, RESULTS, world.redis.pid)
        written.append(f"profile-{name}.txt")
    return written


def run(started: list) -> None:
    """Start everything (into `started`), measure, write the results."""
    load_before = os.getloadavg()
    world = World(started, SECONDS)
    windows = measure(world)
    now = datetime.now(UTC)
    results = {
        "when": f"{now:%Y-%m-%d %H:%M} UTC",
        "cores": os.cpu_count(),
        "load_average": [round(load_before[0], 2), round(os.getloadavg()[0], 2)],
        "seconds": SECONDS,
        "rounds": ROUNDS,
        "wrk": f"wrk -t{WRK_THREADS} -c{CONNECTIONS} -d{SECONDS:g}s",
        "gunicorn": server_settings(),
        "large": world.large,
        "summary": summarize(windows),
        "windows": windows,
    }
    if os.environ.get("BENCH_PROFILE") == "1":
        results["profiles"] = profiles(world)
    report = markdown(results)
    RESULTS.mkdir(exist_ok=True)
    for stem in ("latest", f"{now:%Y-%m-%dT%H%M}"):
        (RESULTS / f"{stem}.json").write_text(json.dumps(results, indent=2) + "\n")
        (RESULTS / f"{stem}.md").write_text(report)
    print(report)


def setting_text(value) -> str:
    """A gunicorn setting as a report shows it: a class (the worker) by its dotted name."""
    return f"{value.__module__}.{value.__qualname__}" if isinstance(value, type) else str(value)


def server_settings() -> str:
    """The gunicorn settings the service and the Flask peer ran under, as gunicorn.conf.py gives them."""
    conf = runpy.run_path(str(ROOT / "gunicorn.conf.py"))
    names = ("worker_class", "workers", "threads", "keepalive", "worker_connections", "reuse_port")
    shown = ", ".join(f"{name} {setting_text(conf[name])}" for name in names if name in conf)
    extra = os.environ.get("BENCH_GUNICORN")
    return shown + (f", plus `{extra}`" if extra else "")


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
