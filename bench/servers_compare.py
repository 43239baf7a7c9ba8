"""`python -m bench.servers_compare`: the real routes under each candidate server, keep-alive clients and
`Connection: close`, in interleaved rounds (the order rotates each round), all servers up at once.
Per window: req/s, p50, p99 and the server's CPU per request (master and workers). Writes
bench/results/servers.json and servers.md (medians over the rounds, goodput = req/s while p99 <= 2.5 x p50).
SERVERS_ROUNDS (default 3) and BENCH_SECONDS (default 10) set the size; SERVERS_ONLY='a;b' a subset."""

import json
import os
import secrets
import statistics
import sys
import tempfile
from pathlib import Path

from config import Config
from dev.services import ROOT, Process, free_port, gunicorn_argv, supervised

from .report import P99_OVER_P50
from .run import Bench, seed_targets
from .servers import STATE, WARMUP_SECONDS, BenchFailed

ROUNDS = int(os.environ.get("SERVERS_ROUNDS", "3"))
SECONDS = int(os.environ.get("BENCH_SECONDS", "10"))
ROUTES = ("public_profile", "own_profile_bearer", "own_profile_cookie", "poke")
MODES = {"keep-alive": {}, "close": {"Connection": "close"}}
# gunicorn options over gunicorn.conf.py (its reuse_port included: gunicorn has no option to unset it).
GTHREAD_8 = ("--worker-class", "gthread", "--threads", "8")
GUNICORN = {
    "gunicorn.conf.py as shipped": [],
    "gthread 3x8, keep-alive off": [*GTHREAD_8, "--workers", "3", "--keep-alive", "0"],
    "gthread 2x8, keep-alive 100 s": [*GTHREAD_8, "--workers", "2", "--keep-alive", "100"],
    "gevent 2, keep-alive 100 s": ["--worker-class", "gevent", "--workers", "2", "--keep-alive", "100"],
}
GRANIAN = {f"granian 2x{threads}": ["--workers", "2", "--blocking-threads", str(threads)] for threads in (1, 8)}


def granian_argv(port: int, options: list) -> list[str]:
    """granian serving the WSGI app on 127.0.0.1:`port`."""
    return [
        *(sys.executable, "-m", "granian", "--interface", "wsgi", "--host", "127.0.0.1", "--port", str(port)),
        *("--no-ws", "--log-level", "warning", *options, "wsgi:app"),
    ]


def tree_seconds(server: Process) -> float:
    """CPU seconds used so far by `server` and its child processes (Linux /proc)."""
    pids = [server.pid, *map(int, Path(f"/proc/{server.pid}/task/{server.pid}/children").read_text().split())]
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except FileNotFoundError:
            continue
        total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


def start(started: list, name: str, env: dict) -> tuple[Process, str]:
    """Candidate `name` serving the app with `env`, once it answers: (process, base URL)."""
    port = free_port()
    if name in GUNICORN:
        argv = gunicorn_argv(port, GUNICORN[name])
    else:
        # gunicorn.conf.py's on_starting gives gunicorn its metrics directory; granian gets one here.
        env = {**env, "PROMETHEUS_MULTIPROC_DIR": tempfile.mkdtemp(prefix="servers-metrics-")}
        argv = granian_argv(port, GRANIAN[name])
    process = Process(name, argv, log_path=STATE / f"{name.replace(' ', '-').replace(',', '')}.log", env=env)
    started.append(process)
    import requests

    base = f"http://127.0.0.1:{port}/"
    process.wait_until(lambda: requests.get(f"{base}api/v1/openapi.json", timeout=1).ok, timeout=60)
    return process, base


def window(bench: Bench, server: Process, base: str, route: str, mode: str, seconds: int) -> dict:
    """One wrk window of `route` on the candidate at `base`, with its CPU per request."""
    url, headers = bench.routes[route]
    url = base + url.removeprefix(bench.base)
    before = tree_seconds(server)
    bench.routes[route] = (url, {**headers, **MODES[mode]})
    try:
        figures = bench.route(route, seconds, server=server, url=url, label=f"{server.name} {route} {mode}")
    finally:
        bench.routes[route] = (bench.base + url.removeprefix(base), headers)
    figures["tree_cpu_us"] = (tree_seconds(server) - before) / figures["requests"] * 1e6
    return figures


def table(results: dict) -> str:
    """Medians over the rounds, one line per candidate, route and mode."""
    lines = [
        "| server | route | clients | req/s | p50 ms | p99 ms | p99/p50 | CPU ms/req | goodput req/s |",
        "|---|---|---|--:|--:|--:|--:|--:|--:|",
    ]
    for name, routes in results.items():
        for route, modes in routes.items():
            for mode, windows in modes.items():
                rps = statistics.median(w["rps"] for w in windows)
                p50 = statistics.median(w["p50_us"] for w in windows) / 1000
                p99 = statistics.median(w["p99_us"] for w in windows) / 1000
                cpu = statistics.median(w["tree_cpu_us"] for w in windows) / 1000
                spread = f" ({min(w['rps'] for w in windows):.0f}-{max(w['rps'] for w in windows):.0f})"
                goodput = f"{rps:,.0f}" if p99 <= P99_OVER_P50 * p50 else "—"
                lines.append(
                    f"| {name} | {route} | {mode} | {rps:,.0f}{spread} | {p50:.2f} | {p99:.2f} | "
                    f"{p99 / p50:.1f} | {cpu:.2f} | {goodput} |"
                )
    return "\n".join(lines) + "\n"


def run(started: list) -> None:
    """Start everything (into `started`), measure in rounds, write the results."""
    bench = Bench(started)
    for extra in (bench.plain, bench.ceiling):
        extra.stop()
        started.remove(extra)
    only = [name.strip() for name in os.environ.get("SERVERS_ONLY", "").split(";") if name.strip()]
    names = only or [*GUNICORN, *GRANIAN]
    # Never a poked pair twice: targets for every poke window at up to 3,000 req/s.
    bench.targets = 3000 * (ROUNDS * len(names) * len(MODES) * SECONDS + len(names) * WARMUP_SECONDS)
    print(f"seeding {bench.targets} poke targets", flush=True)
    seed_targets(bench.redis_url, Config(bench.env).REDIS_KEY_PREFIX, bench.targets)
    env = {**bench.env, "METRICS_TOKEN": secrets.token_urlsafe(32)}
    servers = {name: start(started, name, env) for name in names}
    for server, base in servers.values():
        for route in ROUTES:
            window(bench, server, base, route, "keep-alive", WARMUP_SECONDS)
    results = {name: {route: {mode: [] for mode in MODES} for route in ROUTES} for name in names}
    load = [os.getloadavg()[0]]
    for round_number in range(ROUNDS):
        order = names[round_number % len(names) :] + names[: round_number % len(names)]
        for route in ROUTES:
            for name in order:
                for mode in MODES if round_number % 2 == 0 else reversed(MODES):
                    server, base = servers[name]
                    results[name][route][mode].append(window(bench, server, base, route, mode, SECONDS))
        load.append(os.getloadavg()[0])
    out = ROOT / "bench" / "results"
    (out / "servers.json").write_text(json.dumps({"load": load, "results": results}, indent=2) + "\n")
    report = table(results) + f"\nload average per round: {', '.join(f'{x:.1f}' for x in load)}\n"
    (out / "servers.md").write_text(report)
    print(report)


def main() -> int:
    try:
        with supervised() as started:
            run(started)
        return 0
    except BenchFailed as error:
        print(f"servers_compare: {error}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
