"""`python -m bench.studies.levers`: each server lever (candidates.py) on the real routes (public profile,
own profile with a bearer token, poke) with keep-alive clients, every candidate up at once, in
interleaved rounds whose order rotates; optionally then open-loop at one fixed rate per route for all.
Per window: req/s, p50, p99, the CPU per request of the server's process tree, Redis and wrk, the
server's context switches per request, and how its CPU split over its processes. The report gives
medians and, per round, each candidate's CPU per request and req/s over the first candidate's in the
same round (median, lowest and highest): on a shared machine those ratios hold where req/s do not.

LEVERS='name;name' picks candidates (the first is the baseline; default all), LEVERS_ROUNDS (3),
BENCH_SECONDS (5), LEVERS_OPEN=0.8 adds open-loop windows at 0.8 x the baseline's req/s on each route.
Writes bench/results/levers-<time>.md and .json."""

import json
import os
import statistics
import sys
from datetime import UTC, datetime
from functools import partial

from dev.services import ROOT, StartFailed, free_port, supervised

from ...load import BenchFailed, drive, drive_paced
from ...open_loop import busiest_worker
from ...servers import start
from ...world import ROUTES, World
from .candidates import CANDIDATES

ROUNDS = int(os.environ.get("LEVERS_ROUNDS", "3"))
SECONDS = float(os.environ.get("BENCH_SECONDS", "5"))
OPEN = float(os.environ.get("LEVERS_OPEN", "0") or 0)
RESULTS = ROOT / "bench" / "results"


def run(started: list) -> dict:
    """Start everything (into `started`), measure, return the results."""
    chosen = [name.strip() for name in os.environ.get("LEVERS", "").split(";") if name.strip()]
    names = chosen or list(CANDIDATES)
    load = [os.getloadavg()[0]]
    world = World(started, SECONDS)
    for name in names:
        candidate, port = CANDIDATES[name], free_port()
        env = {**world.service_env, **candidate.environment()}
        world.servers.append(start(started, name, candidate.argv(port), env, port, "/api/v1/openapi.json"))
    for server in world.servers:
        for route in ROUTES:
            window(world, server, route, "warm-up", partial(drive, seconds=1))
    windows = {route: {name: [] for name in names} for route in ROUTES}
    paced = {route: {name: [] for name in names} for route in ROUTES}
    for number in range(ROUNDS):
        order = world.servers[number % len(names) :] + world.servers[: number % len(names)]
        for route in ROUTES:
            for server in order:
                label = f"round {number + 1}"
                windows[route][server.name].append(window(world, server, route, label, partial(drive, seconds=SECONDS)))
        load.append(os.getloadavg()[0])
    if OPEN:
        for number in range(ROUNDS):
            order = world.servers[number % len(names) :] + world.servers[: number % len(names)]
            for route in ROUTES:
                rate = OPEN * statistics.median(w["rps"] for w in windows[route][names[0]])
                driver = partial(drive_paced, seconds=SECONDS, rate=rate)
                for server in order:
                    figures = window(world, server, route, f"open-loop round {number + 1}", driver)
                    figures.pop("histogram")
                    paced[route][server.name].append(figures)
            load.append(os.getloadavg()[0])
    return {"names": names, "load": load, "closed": windows, "open": paced if OPEN else None}


def window(world: World, server, route: str, label: str, driver) -> dict:
    figures = driver(
        f"{label}, {route}, {server.name}", world.window(server, route, False), server.process.pid, world.redis.pid
    )
    if route == "poke":
        world.check_poke_window(figures)
    return figures


def _ratio(mine: list[dict], base: list[dict], key: str) -> str:
    ratios = [a[key] / b[key] for a, b in zip(mine, base, strict=True)]
    return f"{statistics.median(ratios):.2f} ({min(ratios):.2f}-{max(ratios):.2f})"


def table(results: dict, kind: str) -> list[str]:
    """One line per route and candidate: medians over the rounds and the same-round ratios to the baseline."""
    names, runs = results["names"], results[kind]
    lines = [
        "| route | candidate | req/s | p50 ms | p99 ms | p99/p50 | server CPU µs/req | ÷ baseline CPU | "
        "÷ baseline req/s | Redis µs/req | wrk µs/req | switches/req | busiest worker |",
        "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|",
    ]
    for route in ROUTES:
        base = runs[route][names[0]]
        for name in names:
            rounds = runs[route][name]

            def median(key, rounds=rounds):
                return statistics.median(w[key] for w in rounds)

            tail = statistics.median(w["p99_us"] / w["p50_us"] for w in rounds)
            shares = [busiest_worker(w) for w in rounds]
            lines.append(
                f"| {route} | {name} | {median('rps'):,.0f} | {median('p50_us') / 1000:.2f} | "
                f"{median('p99_us') / 1000:.2f} | {tail:.1f} | {1000 * median('cpu_server_ms'):,.0f} | "
                f"{_ratio(rounds, base, 'cpu_server_ms')} | {_ratio(rounds, base, 'rps')} | "
                f"{1000 * median('cpu_redis_ms'):,.0f} | {1000 * median('cpu_wrk_ms'):,.0f} | "
                f"{median('switches_per_request'):.1f} | {min(shares):.2f}-{max(shares):.2f} |"
            )
    return lines


def main() -> int:
    try:
        with supervised() as started:
            results = run(started)
    except (BenchFailed, StartFailed) as error:
        print(f"levers: {error}", file=sys.stderr)
        return 1
    now = datetime.now(UTC)
    lines = [
        f"# Server levers, {now:%Y-%m-%d %H:%M} UTC",
        "",
        f"{os.cpu_count()} cores; load average per round: {', '.join(f'{x:.1f}' for x in results['load'])}. "
        f"{ROUNDS} interleaved rounds of {SECONDS:g} s per route and candidate, keep-alive, `wrk -t2 -c16`.",
        "",
        *table(results, "closed"),
    ]
    if results["open"]:
        lines += ["", f"## Open-loop at {OPEN:g} x the baseline's req/s, latency from the intended send", ""]
        lines += table(results, "open")
    report = "\n".join(lines) + "\n"
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"levers-{now:%Y-%m-%dT%H%M}.md").write_text(report)
    (RESULTS / f"levers-{now:%Y-%m-%dT%H%M}.json").write_text(json.dumps(results, indent=1) + "\n")
    print(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
