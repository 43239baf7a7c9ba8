"""One measured window: wrk against a URL, closed-loop (as fast as 16 connections go) or open-loop (a
fixed rate), with the CPU each process used while it ran."""

import json
import math
import os
import re
import subprocess
import time
from dataclasses import dataclass
from urllib.parse import urlsplit

from dev.services import ROOT

from .cpu import Reading, children_seconds, process_tree

BENCH = ROOT / "bench"
WRK_THREADS = 2
CONNECTIONS = int(os.environ.get("BENCH_CONNECTIONS", "16"))
# An open-loop request may wait long behind a stall: it counts as late, not as an error.
PACED_TIMEOUT = "30s"
# bench/wrk_paced.lua's histogram buckets: floor(log(µs) / log(BUCKET_BASE)).
BUCKET_BASE = 1.01


class BenchFailed(RuntimeError):
    """A run produced errors, so its figures mean nothing."""


@dataclass(frozen=True)
class Window:
    """What wrk sends: the URL and headers, keep-alive or `Connection: close`, and for the poke route
    the first target number (every request pokes a target never poked in this window)."""

    url: str
    headers: dict
    close: bool = False
    poke_from: int | None = None


def drive(label: str, window: Window, server_pid: int, redis_pid: int, seconds: float) -> dict:
    """Run wrk -t2 -c16 for `seconds` as fast as it goes; BenchFailed on any non-2xx answer or socket
    error. Returns req/s, p50 and p99 in µs, and the CPU (`_used`)."""
    script_args = [] if window.poke_from is None else [str(window.poke_from), str(WRK_THREADS)]
    figures, used = _wrk(label, window, WRK_THREADS, seconds, "wrk.lua", script_args, server_pid, redis_pid)
    result = {"p50_us": figures["p50_us"], "p99_us": figures["p99_us"], **used}
    print(
        f"{label}: {result['rps']:.0f} req/s, p50 {result['p50_us'] / 1000:.2f} ms, "
        f"p99 {result['p99_us'] / 1000:.2f} ms, {_cpu_line(result)}",
        flush=True,
    )
    return result


def drive_paced(label: str, window: Window, server_pid: int, redis_pid: int, seconds: float, rate: float) -> dict:
    """Send `rate` req/s for `seconds` over CONNECTIONS keep-alive connections on a fixed schedule
    (bench/wrk_paced.lua), latency counted from each request's intended send time. Returns the offered
    and achieved rate, p50, p99 and p99.9 from the intended send and p50 from the actual one (µs), the
    latency histograms, and the CPU (`_used`)."""
    per_connection = rate / CONNECTIONS
    script_args = [f"{per_connection:.3f}"]
    if window.poke_from is not None:
        script_args += [str(window.poke_from), str(CONNECTIONS)]
    figures, used = _wrk(label, window, CONNECTIONS, seconds, "wrk_paced.lua", script_args, server_pid, redis_pid)
    histogram = {int(bucket): count for bucket, count in figures["from_intended"].items()}
    sent = {int(bucket): count for bucket, count in figures["from_sent"].items()}
    result = {
        "offered_rps": rate,
        **used,
        "p50_us": percentile(histogram, 0.50),
        "p99_us": percentile(histogram, 0.99),
        "p999_us": percentile(histogram, 0.999),
        "p50_sent_us": percentile(sent, 0.50),
        "late": figures["late"],
        "histogram": histogram,
    }
    print(
        f"{label}: offered {rate:.0f} req/s, served {result['rps']:.0f}, from the intended send p50 "
        f"{result['p50_us'] / 1000:.2f} ms, p99 {result['p99_us'] / 1000:.2f} ms, p99.9 "
        f"{result['p999_us'] / 1000:.2f} ms (p50 from the actual send {result['p50_sent_us'] / 1000:.2f} ms), "
        f"{_cpu_line(result)}",
        flush=True,
    )
    return result


def percentile(histogram: dict[int, int], fraction: float) -> float:
    """The latency (µs, the bucket's middle) below which `fraction` of a bench/wrk_paced.lua histogram lies."""
    total = sum(histogram.values())
    if not total:
        return math.nan
    seen = 0
    for bucket in sorted(histogram):
        seen += histogram[bucket]
        if seen >= fraction * total:
            return BUCKET_BASE ** (bucket + 0.5)
    return BUCKET_BASE ** (max(histogram) + 0.5)


def _wrk(label, window, threads, seconds, script, script_args, server_pid, redis_pid) -> tuple[dict, dict]:
    argv = ["wrk", f"-t{threads}", f"-c{CONNECTIONS}", f"-d{seconds:g}s", "--latency", "-s", str(BENCH / script)]
    if script == "wrk_paced.lua":
        argv += ["--timeout", PACED_TIMEOUT]
    headers = {**window.headers, **({"Connection": "close"} if window.close else {})}
    for name, value in headers.items():
        argv += ["-H", f"{name}: {value}"]
    argv.append(window.url)
    if script_args:
        argv += ["--", *script_args]
    pids = process_tree(server_pid)
    before = Reading.of(pids), Reading.of([redis_pid]), children_seconds()
    wrk = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.PIPE, text=True)
    time.sleep(min(1.0, seconds / 2))
    held = connections_by_process(urlsplit(window.url).port, pids)
    output = wrk.communicate()[0]
    if wrk.returncode:
        raise subprocess.CalledProcessError(wrk.returncode, argv, output)
    after = Reading.of(pids), Reading.of([redis_pid]), children_seconds()
    figures = json.loads(next(line for line in output.splitlines() if line.startswith("BENCH "))[6:])
    if figures["non_2xx"] or figures["socket_errors"]:
        raise BenchFailed(
            f"{label}: {figures['non_2xx']} non-2xx responses (e.g. {figures['bad_status']}), "
            f"{figures['socket_errors']} socket errors:\n{output[-2000:]}"
        )
    return figures, {**_used(figures, pids, before, after), "connections": held}


def connections_by_process(port: int, pids: list[int]) -> list[int]:
    """How many established connections to `port` each of `pids` holds (`ss`), in the order of `pids`:
    a kept-alive connection is served by the process that accepted it, for as long as it lasts."""
    listing = subprocess.run(
        ["ss", "-tnpH", "state", "established", f"( sport = :{port} )"], stdout=subprocess.PIPE, text=True
    ).stdout
    held = [int(pid) for pid in re.findall(r"pid=(\d+)", listing)]
    return [held.count(pid) for pid in pids]


def _used(figures: dict, pids: list[int], before: tuple, after: tuple) -> dict:
    """req/s, and per request: CPU ms of the server's whole tree, of Redis and of wrk, and the server's
    context switches; the share of the server's CPU each of its processes (master first) used."""
    requests = max(1, figures["requests"])
    server, redis = after[0].since(before[0]), after[1].since(before[1])
    total = server["seconds"] or 1.0
    return {
        "rps": figures["requests"] / (figures["duration_us"] / 1e6),
        "requests": figures["requests"],
        "cpu_server_ms": server["seconds"] * 1000 / requests,
        "cpu_redis_ms": redis["seconds"] * 1000 / requests,
        "cpu_wrk_ms": (after[2] - before[2]) * 1000 / requests,
        "switches_per_request": server["switches"] / requests,
        "cpu_shares": [round(server["per_process"][str(pid)] / total, 3) for pid in pids],
        "last_target": figures["last_target"],
    }


def _cpu_line(result: dict) -> str:
    shares = "/".join(f"{100 * share:.0f}" for share in result["cpu_shares"])
    held = "/".join(str(count) for count in result["connections"])
    return (
        f"CPU ms/req server {result['cpu_server_ms']:.3f} (% by process {shares}; connections {held}) redis "
        f"{result['cpu_redis_ms']:.3f} wrk {result['cpu_wrk_ms']:.3f}, "
        f"{result['switches_per_request']:.1f} switches/req"
    )
