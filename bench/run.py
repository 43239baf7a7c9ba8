"""`make bench`: the service against the same three routes written plainly in Flask (same gunicorn
settings) and in FastAPI under uvicorn (2 workers, two configurations), in interleaved rounds, with
keep-alive clients and with `Connection: close`, then open-loop at 50 % and 80 % of each one's peak.
Per route and implementation: req/s, p50, p99 and CPU per request by process (server, Redis, wrk);
the service's ratio to each peer with its spread over the rounds; at a fixed load p50, p99 and p99.9
from the intended send; the requests that reached the identity provider meanwhile (0 expected).
BENCH_SECONDS (default 5) per window, BENCH_ROUNDS (default 5); BENCH_PROFILE=1 adds py-spy profiles
of the service's routes, BENCH_TRACING=1 the service with tracing on, and BENCH_DATA=large runs it all
over a million more profiles and ten million live cooldowns. Writes bench/results/latest.md,
latest.json and the pictures (bench/plots.py, in bench/.venv-plots), and a dated copy of each."""

import json
import os
import runpy
import subprocess
import sys
from datetime import UTC, datetime
from functools import partial

from dev import oidc_driver
from dev.services import ROOT, StartFailed, supervised

from . import open_loop
from .load import CONNECTIONS, WRK_THREADS, BenchFailed, drive
from .profiling import profile_route
from .report import markdown, summarize
from .servers import SERVICE
from .world import ROUTES, World

RESULTS = ROOT / "bench" / "results"
SECONDS = float(os.environ.get("BENCH_SECONDS", "5"))
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "5"))
WARMUP_SECONDS = 1
MODES = {"keep-alive": False, "Connection: close": True}
PLOTS_PYTHON = ROOT / "bench" / ".venv-plots" / "bin" / "python"


def measure(world: World) -> dict:
    """mode -> route -> implementation -> the figures of each round. Each round visits every route and
    mode, and within one the implementations back to back, in an order that rotates every round."""
    servers = world.servers
    for server in servers:
        for route in ROUTES:
            window(world, server, route, "warm-up", partial(drive, seconds=WARMUP_SECONDS))
    closed = partial(drive, seconds=SECONDS)
    windows = {mode: {route: {server.name: [] for server in servers} for route in ROUTES} for mode in MODES}
    for round_number in range(ROUNDS):
        shift = round_number % len(servers)
        order = servers[shift:] + servers[:shift]
        for route in ROUTES:
            for mode, close in MODES.items():
                for server in order:
                    label = f"round {round_number + 1}, {mode}"
                    windows[mode][route][server.name].append(window(world, server, route, label, closed, close))
    return windows


def window(world: World, server, route: str, label: str, driver, close: bool = False) -> dict:
    """One window of `route` on `server` run by `driver` (load.drive or load.drive_paced), with the
    requests that reached the identity provider meanwhile."""
    before = world.provider_requests()
    wrk_window = world.window(server, route, close)
    figures = driver(f"{label}, {route}, {server.name}", wrk_window, server.process.pid, world.redis.pid)
    figures["provider_requests"] = world.provider_requests() - before
    if route == "poke":
        world.check_poke_window(figures)
    return figures


def provider_requests(*groups: dict) -> dict:
    """The requests that reached the provider during measured windows: in all, and where."""
    where = []

    def visit(node, path):
        if isinstance(node, list):
            for number, figures in enumerate(node, 1):
                if figures.get("provider_requests"):
                    where.append(f"{', '.join(path)}, round {number}: {figures['provider_requests']}")
        else:
            for key, value in node.items():
                visit(value, [*path, key])

    for group in groups:
        visit(group, [])
    total = sum(int(entry.rsplit(": ", 1)[1]) for entry in where)
    return {"total": total, "windows": where}


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
    """Start everything (into `started`), measure, write the results and draw them."""
    load_before = os.getloadavg()
    world = World(started, SECONDS)
    world.start_peers(started)
    windows = measure(world)
    summary = summarize(windows)
    peaks = {
        route: {name: row["rps"] for name, row in summary["keep-alive"][route]["medians"].items()} for route in ROUTES
    }
    paced = open_loop.measure(world, peaks, ROUNDS, SECONDS, partial(window, world))
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
        "summary": summary,
        "open_loop": open_loop.summarize(paced),
        "provider_requests": provider_requests(windows, paced),
        "windows": windows,
        "open_loop_windows": paced,
    }
    open_loop.strip_histograms(paced)
    if os.environ.get("BENCH_PROFILE") == "1":
        results["profiles"] = profiles(world)
    stems = ("latest", f"{now:%Y-%m-%dT%H%M}")
    results["pictures"] = draw(results, stems)
    report = markdown(results)
    RESULTS.mkdir(exist_ok=True)
    for stem in stems:
        (RESULTS / f"{stem}.json").write_text(json.dumps(results, indent=2) + "\n")
        (RESULTS / f"{stem}.md").write_text(report)
    print(report)


def draw(results: dict, stems: tuple[str, ...]) -> list[str]:
    """The pictures of `results` (bench/plots.py, in the plotting library's own virtualenv), one set per
    stem; returns the file names written."""
    RESULTS.mkdir(exist_ok=True)
    source = RESULTS / f"{stems[-1]}.json"
    source.write_text(json.dumps(results) + "\n")
    written = subprocess.run(
        [str(PLOTS_PYTHON), "-m", "bench.plots", str(source), *stems],
        cwd=ROOT,
        check=True,
        stdout=subprocess.PIPE,
        text=True,
    ).stdout.split()
    return [name for name in written if name.startswith(stems[-1])]


def setting_text(value) -> str:
    """A gunicorn setting as a report shows it: a class (the worker) by its dotted name."""
    return f"{value.__module__}.{value.__qualname__}" if isinstance(value, type) else str(value)


def server_settings() -> str:
    """The gunicorn settings the service and the Flask peer ran under, as gunicorn.conf.py gives them."""
    conf = runpy.run_path(str(ROOT / "server" / "gunicorn.conf.py"))
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
