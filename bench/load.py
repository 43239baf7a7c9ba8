"""One measured window: wrk against a URL, with the CPU each process group used while it ran."""

import json
import os
import resource
import subprocess
from dataclasses import dataclass

from dev.services import ROOT

from .servers import BenchFailed, cpu_seconds, process_tree

BENCH = ROOT / "bench"
WRK_THREADS = 2
CONNECTIONS = int(os.environ.get("BENCH_CONNECTIONS", "16"))


@dataclass(frozen=True)
class Window:
    """What wrk sends: the URL and headers, keep-alive or `Connection: close`, and for the poke route
    the first target number (every request pokes a target never poked in this window)."""

    url: str
    headers: dict
    close: bool = False
    poke_from: int | None = None


def drive(label: str, window: Window, seconds: float, server_pid: int, redis_pid: int) -> dict:
    """Run wrk for `seconds`; BenchFailed on any non-2xx answer or socket error. Returns req/s, p50 and
    p99 in µs, and CPU ms per request of the server (its whole process tree), Redis and wrk."""
    argv = ["wrk", f"-t{WRK_THREADS}", f"-c{CONNECTIONS}", f"-d{seconds:g}s", "--latency", "-s", str(BENCH / "wrk.lua")]
    headers = {**window.headers, **({"Connection": "close"} if window.close else {})}
    for name, value in headers.items():
        argv += ["-H", f"{name}: {value}"]
    argv.append(window.url)
    if window.poke_from is not None:
        argv += ["--", str(window.poke_from), str(WRK_THREADS)]
    server_pids = process_tree(server_pid)
    before = cpu_seconds(server_pids), cpu_seconds([redis_pid]), _children_cpu()
    output = subprocess.run(argv, cwd=ROOT, check=True, stdout=subprocess.PIPE, text=True).stdout
    after = cpu_seconds(server_pids), cpu_seconds([redis_pid]), _children_cpu()
    figures = json.loads(next(line for line in output.splitlines() if line.startswith("BENCH "))[6:])
    if figures["non_2xx"] or figures["socket_errors"]:
        raise BenchFailed(
            f"{label}: {figures['non_2xx']} non-2xx responses (e.g. {figures['bad_status']}), "
            f"{figures['socket_errors']} socket errors:\n{output}"
        )
    requests = max(1, figures["requests"])
    used = [(end - start) * 1000 / requests for start, end in zip(before, after, strict=True)]
    result = {
        "rps": figures["requests"] / (figures["duration_us"] / 1e6),
        "p50_us": figures["p50_us"],
        "p99_us": figures["p99_us"],
        "cpu_server_ms": used[0],
        "cpu_redis_ms": used[1],
        "cpu_wrk_ms": used[2],
        "last_target": figures["last_target"],
    }
    print(
        f"{label}: {result['rps']:.0f} req/s, p50 {result['p50_us'] / 1000:.2f} ms, "
        f"p99 {result['p99_us'] / 1000:.2f} ms, "
        f"CPU ms/req server {used[0]:.3f} redis {used[1]:.3f} wrk {used[2]:.3f}",
        flush=True,
    )
    return result


def _children_cpu() -> float:
    """CPU seconds of this process's finished children: wrk's, measured around each run."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime
