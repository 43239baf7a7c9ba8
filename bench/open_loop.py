"""Latency at a fixed offered load: each route on each implementation driven open-loop (bench/wrk_paced.lua)
at 50 % and 80 % of the peak that implementation reached on that route with keep-alive clients, in
interleaved rounds. Percentiles come from the rounds' latencies pooled; a window "queued" when its p50
from the intended send was over 3 x its p50 from the actual send (requests waited to be sent behind a
stall), and each window notes how its server's CPU split over the server's processes."""

import statistics
from functools import partial

from .load import drive_paced, percentile
from .world import ROUTES

LEVELS = {"50 %": 0.5, "80 %": 0.8}
QUEUED = 3.0


def measure(world, peaks: dict, rounds: int, seconds: float, window) -> dict:
    """route -> implementation -> level -> the figures of each round. `peaks` is route -> name -> req/s;
    `window(server, route, label, driver)` runs one window with `driver` (load.drive_paced here)."""
    servers = world.servers
    windows = {route: {server.name: {level: [] for level in LEVELS} for server in servers} for route in ROUTES}
    for round_number in range(rounds):
        shift = round_number % len(servers)
        order = servers[shift:] + servers[:shift]
        for route in ROUTES:
            for level, fraction in LEVELS.items():
                for server in order:
                    paced = partial(drive_paced, seconds=seconds, rate=fraction * peaks[route][server.name])
                    label = f"round {round_number + 1}, open-loop at {level} of the peak"
                    windows[route][server.name][level].append(window(server, route, label, paced))
    return windows


def summarize(windows: dict) -> dict:
    """route -> implementation -> level -> pooled percentiles, medians and the queued windows."""
    summary = {}
    for route, by_server in windows.items():
        summary[route] = {}
        for name, by_level in by_server.items():
            summary[route][name] = {level: _pooled(rounds) for level, rounds in by_level.items()}
    return summary


def strip_histograms(windows: dict) -> None:
    """Drop each window's histogram (the summary keeps the pooled one), to keep the JSON small."""
    for by_server in windows.values():
        for by_level in by_server.values():
            for rounds in by_level.values():
                for figures in rounds:
                    figures.pop("histogram", None)


def _pooled(rounds: list[dict]) -> dict:
    pooled = {}
    for figures in rounds:
        for bucket, count in figures["histogram"].items():
            pooled[bucket] = pooled.get(bucket, 0) + count
    queued = [figures for figures in rounds if figures["p50_us"] > QUEUED * figures["p50_sent_us"]]
    return {
        "offered_rps": statistics.median(figures["offered_rps"] for figures in rounds),
        "rps": statistics.median(figures["rps"] for figures in rounds),
        "p50_us": percentile(pooled, 0.50),
        "p99_us": percentile(pooled, 0.99),
        "p999_us": percentile(pooled, 0.999),
        "p50_sent_us": statistics.median(figures["p50_sent_us"] for figures in rounds),
        "cpu_server_ms": statistics.median(figures["cpu_server_ms"] for figures in rounds),
        "windows": len(rounds),
        "queued": len(queued),
        "busiest_share": [busiest_worker(figures) for figures in rounds],
        "queued_windows": [
            {
                "p50_us": figures["p50_us"],
                "p50_sent_us": figures["p50_sent_us"],
                "cpu_shares": figures["cpu_shares"],
                "connections": figures["connections"],
            }
            for figures in queued
        ],
        "histogram": {str(bucket): count for bucket, count in sorted(pooled.items())},
    }


def busiest_worker(figures: dict) -> float:
    """The busiest worker's share of the workers' CPU in a window (the master left out): 1/n when n
    workers shared the work evenly, 1.0 when one did it all."""
    workers = figures["cpu_shares"][1:] or figures["cpu_shares"]
    return round(max(workers) / (sum(workers) or 1.0), 2)


def queued_lines(summary: dict) -> list[str]:
    """One line per window that queued: its p50s, and its server's CPU and connections by process."""
    lines = []
    for route, by_server in summary.items():
        for name, by_level in by_server.items():
            for level, row in by_level.items():
                for window in row["queued_windows"]:
                    shares = "/".join(f"{100 * share:.0f}" for share in window["cpu_shares"])
                    held = "/".join(str(count) for count in window["connections"])
                    lines.append(
                        f"- {route}, {name}, {level}: p50 {window['p50_us'] / 1000:.1f} ms from the intended send, "
                        f"{window['p50_sent_us'] / 1000:.1f} ms from the actual one; CPU % by process {shares}; "
                        f"connections by process {held} (master first)"
                    )
    return lines


def markdown(summary: dict) -> list[str]:
    """The open-loop table."""
    lines = [
        "| route | implementation | offered | req/s served | p50 ms | p99 ms | p99.9 ms | p99/p50 | "
        "p50 from the actual send | windows queued | busiest worker's CPU share |",
        "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|",
    ]
    for route, by_server in summary.items():
        for name, by_level in by_server.items():
            for level, row in by_level.items():
                shares = row["busiest_share"]
                lines.append(
                    f"| {route} | {name} | {level}: {row['offered_rps']:,.0f} | {row['rps']:,.0f} | "
                    f"{row['p50_us'] / 1000:.2f} | {row['p99_us'] / 1000:.2f} | {row['p999_us'] / 1000:.2f} | "
                    f"{row['p99_us'] / row['p50_us']:.1f} | {row['p50_sent_us'] / 1000:.2f} | "
                    f"{row['queued']} of {row['windows']} | {min(shares):.2f} to {max(shares):.2f} |"
                )
    return lines
