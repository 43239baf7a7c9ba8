"""What `make bench` drives and how: gunicorn servers under candidate configs, wrk runs, summaries."""

import json
import os
import runpy
import secrets
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import requests

from dev.services import ROOT, Process, free_port, gunicorn_argv, idp_issuer, start_idp, start_redis

BENCH = ROOT / "bench"
STATE = ROOT / ".dev" / "bench"
SECONDS = int(os.environ.get("BENCH_SECONDS", "10"))
CONNECTIONS = int(os.environ.get("BENCH_CONNECTIONS", "16"))
WRK_THREADS = 2
WARMUP_SECONDS = 2
# Every config the best ceiling is sought among: gunicorn options over gunicorn.conf.py's settings,
# with its keep-alive and connection cap set back to gunicorn's defaults (off, 1000) unless named, so
# the candidates stay what they were whatever the shipped config is.
PLAIN = ["--keep-alive", "0", "--worker-connections", "1000"]
GTHREAD_3X8 = ["--worker-class", "gthread", "--workers", "3", "--threads", "8"]
CANDIDATES = {
    **{f"sync {n}": ["--worker-class", "sync", "--workers", str(n), *PLAIN] for n in (2, 3, 4, 5)},
    "gthread 3x2": ["--worker-class", "gthread", "--workers", "3", "--threads", "2", *PLAIN],
    "gthread 2x4": ["--worker-class", "gthread", "--workers", "2", "--threads", "4", *PLAIN],
    "gthread 3x8": [*GTHREAD_3X8, *PLAIN],
    "gevent 2": ["--worker-class", "gevent", "--workers", "2", *PLAIN],
    "gevent 3": ["--worker-class", "gevent", "--workers", "3", *PLAIN],
    "gevent 4": ["--worker-class", "gevent", "--workers", "4", *PLAIN],
    # Keep-alive saves a connection per request; sync workers cannot keep a connection open.
    "gthread 3x8 keep-alive": [*GTHREAD_3X8, *PLAIN, "--keep-alive", "5"],
    "gthread 3x8 keep-alive, 12 per worker": [*GTHREAD_3X8, "--keep-alive", "5", "--worker-connections", "12"],
    "gevent 3 keep-alive": ["--worker-class", "gevent", "--workers", "3", *PLAIN, "--keep-alive", "5"],
}


class BenchFailed(RuntimeError):
    """A run produced errors, so its figures mean nothing."""


def shipped_config() -> tuple[str, list[str]]:
    """The name and gunicorn options of the config gunicorn.conf.py ships, WEB_CONCURRENCY included."""
    conf = runpy.run_path(str(ROOT / "gunicorn.conf.py"))
    kind, workers, threads = conf["worker_class"], conf["workers"], conf["threads"]
    name = f"{kind} {workers}x{threads}" if kind == "gthread" else f"{kind} {workers}"
    if kind == "gthread" and conf["keepalive"]:
        name += f" keep-alive, {conf['worker_connections']} connections per worker"
    return name, ["--worker-class", kind, "--workers", str(workers), "--threads", str(threads)]


def start_server(started: list, name: str, app: str, port: int, ready_path: str, env: dict, options: list) -> Process:
    """`app` under gunicorn.conf.py plus `options` on 127.0.0.1:`port`, returned once it answers."""
    argv = gunicorn_argv(port, options, app)
    process = Process(name, argv, log_path=STATE / f"{name.replace(' ', '-')}.log", env=env)
    started.append(process)
    process.wait_until(lambda: requests.get(f"http://127.0.0.1:{port}/{ready_path}", timeout=1).ok)
    return process


def worker_pids(server: Process) -> list[int]:
    """The process ids of `server`'s gunicorn workers (Linux /proc)."""
    return [int(pid) for pid in Path(f"/proc/{server.pid}/task/{server.pid}/children").read_text().split()]


def worker_seconds(server: Process) -> dict[int, float]:
    """CPU seconds used so far by each gunicorn worker of `server`, by process id."""
    stats = {pid: Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split() for pid in worker_pids(server)}
    return {pid: (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK") for pid, fields in stats.items()}


def wrk(
    name: str, server: Process, url: str, seconds: int, headers=None, poke_from: int | None = None, proofs=None
) -> dict:
    """Drive `url` with wrk for `seconds`; BenchFailed on any non-2xx response or socket error. Also
    returns how the server's CPU time split over its workers (`split`, in %). `proofs` is a file of
    DPoP proofs, one a line, each sent once."""
    argv = ["wrk", f"-t{WRK_THREADS}", f"-c{CONNECTIONS}", f"-d{seconds}s", "--latency", "-s", str(BENCH / "wrk.lua")]
    for header, value in (headers or {}).items():
        argv += ["-H", f"{header}: {value}"]
    argv.append(url)
    if poke_from is not None:
        argv += ["--", str(poke_from), str(WRK_THREADS)]
    if proofs is not None:
        argv += ["--", "proofs", str(proofs), str(WRK_THREADS)]
    before = worker_seconds(server)
    output = subprocess.run(argv, cwd=ROOT, check=True, stdout=subprocess.PIPE, text=True).stdout
    used = [cpu - before.get(pid, 0) for pid, cpu in worker_seconds(server).items()]
    figures = json.loads(next(line for line in output.splitlines() if line.startswith("BENCH "))[6:])
    if figures["non_2xx"] or figures["socket_errors"]:
        raise BenchFailed(
            f"{name}: {figures['non_2xx']} non-2xx responses (e.g. {figures['bad_status']}), "
            f"{figures['socket_errors']} socket errors:\n{output}"
        )
    figures["rps"] = figures["requests"] / (figures["duration_us"] / 1e6)
    figures["cpu_us"] = sum(used) / max(1, figures["requests"]) * 1e6
    figures["split"] = "/".join(f"{100 * part / (sum(used) or 1):.0f}" for part in sorted(used, reverse=True))
    print(
        f"{name}: {figures['rps']:.0f} req/s, p50 {figures['p50_us'] / 1000:.2f} ms, "
        f"p99 {figures['p99_us'] / 1000:.2f} ms, worker CPU split {figures['split']} %",
        flush=True,
    )
    return figures


def summary(figures: dict, ceiling_rps: float | None = None, same_config_rps: float | None = None) -> dict:
    """req/s, p50 and p99 in ms, and the ratios to the best and the same-config ceiling when given."""
    result = {"rps": round(figures["rps"], 1), "p50_ms": figures["p50_us"] / 1000, "p99_ms": figures["p99_us"] / 1000}
    if "cpu_us" in figures:
        result["cpu_us"] = round(figures["cpu_us"], 1)
    if ceiling_rps:
        result["ratio"] = round(figures["rps"] / ceiling_rps, 3)
    if same_config_rps:
        result["same_config_ratio"] = round(figures["rps"] / same_config_rps, 3)
    return result


@contextmanager
def redis_and_provider() -> Iterator[tuple[str, str, int]]:
    """A private redis-server and dev provider for a one-off measurement, stopped on the way out:
    (the Redis URL, the provider's issuer, the port of the app whose redirects the provider accepts)."""
    with tempfile.TemporaryDirectory() as workdir:
        redis_port, idp_port, app_port = free_port(), free_port(), free_port()
        redis_server = start_redis(redis_port, workdir=Path(workdir))
        base = f"http://127.0.0.1:{app_port}/"
        idp = start_idp(
            idp_port,
            log_path=Path(workdir) / "idp.log",
            env={
                "IDP_API_CLIENT_SECRET": secrets.token_urlsafe(24),
                "IDP_REDIRECT_URIS": f"{base}auth/callback",
                "IDP_POST_LOGOUT_REDIRECT_URIS": base,
            },
        )
        try:
            yield f"redis://127.0.0.1:{redis_port}/0", idp_issuer(idp_port), app_port
        finally:
            idp.stop()
            redis_server.stop()
