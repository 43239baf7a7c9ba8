"""`python -m bench.servers_compare`: the real routes under each candidate server, keep-alive clients and
`Connection: close`, in interleaved rounds (the order rotates each round), all servers up at once.
Per window: req/s, p50, p99 and the server's CPU per request (master and workers). Writes
bench/results/servers.json and servers.md (medians over the rounds, goodput = req/s while p99 <= 2.5 x p50).
SERVERS_ROUNDS (default 3) and BENCH_SECONDS (default 10) set the size; SERVERS_ONLY='a;b' a subset."""

import json
import os
import secrets
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import requests

from config import Config
from dev import oidc_driver
from dev.services import (
    ROOT,
    Process,
    free_port,
    gunicorn_argv,
    idp_issuer,
    local_app_env,
    start_idp,
    start_redis,
    supervised,
)

from .hang import sign_in
from .world import seed_targets

STATE = ROOT / ".dev" / "servers"
WARMUP_SECONDS = 2
P99_OVER_P50 = 2.5
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
    "gunicorn's own gthread 3x8, keep-alive 100 s": [*GTHREAD_8, "--workers", "3", "--keep-alive", "100"],
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


def start(started: list, name: str, env: dict, port: int) -> tuple[Process, str]:
    """Candidate `name` serving the app with `env` on `port`, once it answers: (process, base URL)."""
    if name in GUNICORN:
        argv = gunicorn_argv(port, GUNICORN[name])
    else:
        # gunicorn.conf.py's on_starting gives gunicorn its metrics directory; granian gets one here.
        env = {**env, "PROMETHEUS_MULTIPROC_DIR": tempfile.mkdtemp(prefix="servers-metrics-")}
        argv = granian_argv(port, GRANIAN[name])
    process = Process(name, argv, log_path=STATE / f"{name.replace(' ', '-').replace(',', '')}.log", env=env)
    started.append(process)
    base = f"http://127.0.0.1:{port}/"
    process.wait_until(lambda: requests.get(f"{base}api/v1/openapi.json", timeout=1).ok, timeout=60)
    return process, base


class BenchFailed(RuntimeError):
    """A window had errors, so its figures mean nothing."""


class World:
    """Redis, the provider and the demo users; a bearer token, a session cookie and poke targets."""

    def __init__(self, started: list, targets: int):
        redis_port, idp_port, self.app_port = free_port(), free_port(), free_port()
        started.append(start_redis(redis_port, workdir=STATE / "redis"))
        base = f"http://127.0.0.1:{self.app_port}"
        idp_env = {
            "IDP_API_CLIENT_SECRET": secrets.token_urlsafe(24),
            "IDP_ACCESS_TOKEN_TTL": "3600",
            "IDP_REDIRECT_URIS": f"{base}/auth/callback",
            "IDP_POST_LOGOUT_REDIRECT_URIS": f"{base}/",
        }
        started.append(start_idp(idp_port, log_path=STATE / "idp.log", env=idp_env))
        self.env = local_app_env(
            idp_issuer(idp_port),
            base,
            f"redis://127.0.0.1:{redis_port}/0",
            METRICS_TOKEN=secrets.token_urlsafe(32),
        )
        import_users = [sys.executable, "-m", "flask", "--app", "wsgi", "users", "import", "dev/demo-users.json"]
        subprocess.run(import_users, env={**os.environ, **self.env}, cwd=ROOT, check=True, capture_output=True)
        seed_targets(self.env["REDIS_URL"], Config(self.env).REDIS_KEY_PREFIX, targets)
        self.targets, self.next_target = targets, 1
        env = self.env
        self.token = oidc_driver.user_tokens(
            env["OIDC_ISSUER_URL"], env["OIDC_CLIENT_ID"], f"{base}/auth/callback", "alice", "demo"
        )["access_token"]
        self.cookie = None

    def sign_in_through(self, base: str) -> None:
        """The session cookie, signed in through the app at `base` (the port the provider accepts)."""
        self.cookie = sign_in(base.rstrip("/"), "alice").cookies.get("pp_session")

    def routes(self, base: str) -> dict:
        """route -> (URL, headers) on the server at `base`."""
        bearer = {"Authorization": f"Bearer {self.token}"}
        return {
            "public_profile": (f"{base}api/v1/users/bob", {}),
            "own_profile_bearer": (f"{base}api/v1/me/profile", bearer),
            "own_profile_cookie": (f"{base}api/v1/me/profile", {"Cookie": f"pp_session={self.cookie}", "X-CSRF": "1"}),
            "poke": (f"{base}api/v1/pokes", bearer),
        }


def window(world: World, server: Process, base: str, route: str, mode: str, seconds: int) -> dict:
    """One wrk window (-t2 -c16) of `route` on the candidate at `base`, with its CPU per request."""
    url, headers = world.routes(base)[route]
    argv = ["wrk", "-t2", "-c16", f"-d{seconds}s", "--latency", "-s", str(ROOT / "bench" / "wrk.lua")]
    for name, value in {**headers, **MODES[mode]}.items():
        argv += ["-H", f"{name}: {value}"]
    argv.append(url)
    if route == "poke":
        argv += ["--", str(world.next_target), "2"]
    before = tree_seconds(server)
    output = subprocess.run(argv, cwd=ROOT, check=True, stdout=subprocess.PIPE, text=True).stdout
    used = tree_seconds(server) - before
    figures = json.loads(next(line for line in output.splitlines() if line.startswith("BENCH "))[6:])
    if figures["non_2xx"] or figures["socket_errors"]:
        raise BenchFailed(f"{server.name} {route} {mode}:\n{output}")
    if route == "poke":
        world.next_target = figures["last_target"] + 1
        if world.next_target > world.targets:
            raise BenchFailed("poke ran past the seeded targets")
    figures["rps"] = figures["requests"] / (figures["duration_us"] / 1e6)
    figures["tree_cpu_us"] = used / max(1, figures["requests"]) * 1e6
    print(
        f"{server.name} {route} {mode}: {figures['rps']:.0f} req/s, p50 {figures['p50_us'] / 1000:.2f} ms, "
        f"p99 {figures['p99_us'] / 1000:.2f} ms, CPU {figures['tree_cpu_us'] / 1000:.2f} ms/req",
        flush=True,
    )
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
    only = [name.strip() for name in os.environ.get("SERVERS_ONLY", "").split(";") if name.strip()]
    names = only or [*GUNICORN, *GRANIAN]
    # Never a poked pair twice: targets for every poke window at up to 3,000 req/s.
    world = World(started, 3000 * (ROUNDS * len(names) * len(MODES) * SECONDS + len(names) * WARMUP_SECONDS))
    # The first candidate serves on the port the provider redirects to, for the cookie's sign-in.
    servers = {
        name: start(started, name, world.env, world.app_port if index == 0 else free_port())
        for index, name in enumerate(names)
    }
    world.sign_in_through(servers[names[0]][1])
    for server, base in servers.values():
        for route in ROUTES:
            window(world, server, base, route, "keep-alive", WARMUP_SECONDS)
    results = {name: {route: {mode: [] for mode in MODES} for route in ROUTES} for name in names}
    load = [os.getloadavg()[0]]
    for round_number in range(ROUNDS):
        order = names[round_number % len(names) :] + names[: round_number % len(names)]
        for route in ROUTES:
            for name in order:
                for mode in MODES if round_number % 2 == 0 else reversed(MODES):
                    server, base = servers[name]
                    results[name][route][mode].append(window(world, server, base, route, mode, SECONDS))
        load.append(os.getloadavg()[0])
    out = ROOT / "bench" / "results"
    out.mkdir(exist_ok=True)
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
