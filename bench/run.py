"""`make bench`: each API route under wrk, as a ratio to a bare Flask route (bench/ceiling.py) served by
the same gunicorn config in the same run; writes bench/results/latest.json and latest.md."""

import json
import math
import os
import runpy
import secrets
import shutil
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import redis
import requests

from app.store.keys import Keys
from app.store.profiles import Profile, Profiles
from config import Config
from dev import oidc_driver
from dev.services import ROOT, Process, StartFailed, free_port, idp_issuer, start_idp, start_redis, supervised

BENCH = ROOT / "bench"
RESULTS = BENCH / "results"
STATE = ROOT / ".dev" / "bench"
SECONDS = int(os.environ.get("BENCH_SECONDS", "10"))
CONNECTIONS = int(os.environ.get("BENCH_CONNECTIONS", "16"))
CONF = runpy.run_path(str(ROOT / "gunicorn.conf.py"))  # the production settings, WEB_CONCURRENCY included
WORKERS = str(CONF["workers"])
WRK_THREADS = 2
WARMUP_SECONDS = 2
USER, PASSWORD = "alice", "demo"
# Route -> lowest acceptable ratio to the ceiling, in the order the routes are measured.
TARGETS = {"public_profile": 0.65, "own_profile_bearer": 0.55, "own_profile_cookie": 0.45, "poke": 0.50}
P99_OVER_P50 = 3
SPLIT_NOTE = "gthread workers accept keep-alive connections greedily, and such a run gets less than half the req/s."


class BenchFailed(RuntimeError):
    """A run produced errors, so its figures mean nothing."""


def start_server(started: list, name: str, app: str, port: int, ready_path: str, env: dict) -> Process:
    """`app` under the production gunicorn config on 127.0.0.1:`port`, returned once it answers."""
    argv = [sys.executable, "-m", "gunicorn", "--config", str(ROOT / "gunicorn.conf.py"),
            "--bind", f"127.0.0.1:{port}", app]  # fmt: skip
    process = Process(name, argv, log_path=STATE / f"{name}.log", env=env)
    started.append(process)
    process.wait_until(lambda: requests.get(f"http://127.0.0.1:{port}/{ready_path}", timeout=1).ok)
    return process


def worker_seconds(server: Process) -> dict[int, float]:
    """CPU seconds used so far by each gunicorn worker of `server`, by process id (Linux /proc)."""
    children = Path(f"/proc/{server.pid}/task/{server.pid}/children").read_text().split()
    stats = {int(pid): Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split() for pid in children}
    return {pid: (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK") for pid, fields in stats.items()}


def wrk(name: str, server: Process, url: str, seconds: int, headers=None, poke_from: int | None = None) -> dict:
    """Drive `url` with wrk for `seconds`; BenchFailed on any non-2xx response or socket error. Also
    returns how the server's CPU time split over its workers (`split`, in %)."""
    argv = ["wrk", f"-t{WRK_THREADS}", f"-c{CONNECTIONS}", f"-d{seconds}s", "--latency", "-s", str(BENCH / "wrk.lua")]
    for header, value in (headers or {}).items():
        argv += ["-H", f"{header}: {value}"]
    argv.append(url)
    if poke_from is not None:
        argv += ["--", str(poke_from), str(WRK_THREADS)]
    before = worker_seconds(server)
    output = subprocess.run(argv, cwd=ROOT, check=True, stdout=subprocess.PIPE, text=True).stdout
    used = [cpu - before.get(pid, 0) for pid, cpu in worker_seconds(server).items()]
    figures = json.loads(next(line for line in output.splitlines() if line.startswith("BENCH "))[6:])
    if figures["non_2xx"] or figures["socket_errors"]:
        raise BenchFailed(f"{name}: {figures['non_2xx']} non-2xx responses (e.g. {figures['bad_status']}), "
                          f"{figures['socket_errors']} socket errors:\n{output}")  # fmt: skip
    figures["rps"] = figures["requests"] / (figures["duration_us"] / 1e6)
    figures["split"] = "/".join(f"{100 * part / (sum(used) or 1):.0f}" for part in sorted(used, reverse=True))
    print(f"{name}: {figures['rps']:.0f} req/s, p50 {figures['p50_us'] / 1000:.2f} ms, "
          f"p99 {figures['p99_us'] / 1000:.2f} ms, worker CPU split {figures['split']} %", flush=True)  # fmt: skip
    return figures


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


def summary(figures: dict, ceiling_rps: float | None = None) -> dict:
    """req/s, p50 and p99 in ms, and the ratio to `ceiling_rps` when given."""
    result = {"rps": round(figures["rps"], 1), "p50_ms": figures["p50_us"] / 1000, "p99_ms": figures["p99_us"] / 1000}
    if ceiling_rps:
        result["ratio"] = round(figures["rps"] / ceiling_rps, 3)
    return result


def markdown(results: dict, ceilings: list[dict], splits: dict, machine: str) -> str:
    """The results as Markdown: the figures, then every target with met / not met."""
    lines = [
        "# Benchmark", "", machine, "",
        "| route | req/s | p50 ms | p99 ms | ratio | worker CPU split % |", "|---|--:|--:|--:|--:|--:|",
    ]  # fmt: skip
    rows = [("ceiling (mean)", results["ceiling"]), ("ceiling before", ceilings[0]), ("ceiling after", ceilings[1])]
    for name, row in rows + list(results["routes"].items()):
        figures = f"{row['rps']:.0f} | {row['p50_ms']:.2f} | {row['p99_ms']:.2f} | {row.get('ratio', 1):.2f}"
        lines.append(f"| {name} | {figures} | {splits.get(name, '')} |")
    lines += ["", f"A split of 100/0 means one worker took every connection: {SPLIT_NOTE}"]
    checks = []
    for name, goal in TARGETS.items():
        ratio = results["routes"][name]["ratio"]
        checks.append((f"{name}: ratio ≥ {goal:.2f}", f"{ratio:.2f}", ratio >= goal))
    checks.append(("idp_requests = 0", results["idp_requests"], results["idp_requests"] == 0))
    for name, row in results["routes"].items():
        spread = row["p99_ms"] / row["p50_ms"]
        checks.append((f"{name}: p99 ≤ {P99_OVER_P50} p50", f"{spread:.1f} p50", spread <= P99_OVER_P50))
    lines += ["", "| target | measured | met |", "|---|--:|---|"]
    lines += [f"| {name} | {value} | {'met' if ok else '**not met**'} |" for name, value, ok in checks]
    return "\n".join(lines) + "\n"


def run(started: list) -> None:
    """Start everything (into `started`), measure, write the results."""
    shutil.rmtree(STATE, ignore_errors=True)
    redis_port = free_port()
    started.append(start_redis(redis_port, workdir=STATE / "redis"))
    redis_url = f"redis://127.0.0.1:{redis_port}/0"
    app_port = free_port()
    base = f"http://127.0.0.1:{app_port}/"
    idp_port = free_port()
    idp_base = f"http://127.0.0.1:{idp_port}"
    started.append(start_idp(idp_port, log_path=STATE / "idp.log", env={
        "IDP_API_CLIENT_SECRET": secrets.token_urlsafe(32), "IDP_ACCESS_TOKEN_TTL": "3600",
        "IDP_REDIRECT_URIS": f"{base}auth/callback,{base}", "IDP_POST_LOGOUT_REDIRECT_URIS": base,
    }))  # fmt: skip
    env = {
        "OIDC_ISSUER_URL": idp_issuer(idp_port), "OIDC_CLIENT_ID": "profile-poke-web",
        "OIDC_REDIRECT_URI": f"{base}auth/callback", "SESSION_COOKIE_SECURE": "false",
        "REDIS_URL": redis_url, "SECRET_KEY": secrets.token_urlsafe(48), "WEB_CONCURRENCY": WORKERS,
    }  # fmt: skip
    subprocess.run([sys.executable, "-m", "flask", "--app", "wsgi", "users", "import", "dev/demo-users.json"],
                   env={**os.environ, **env}, cwd=ROOT, check=True)  # fmt: skip
    app = start_server(started, "app", "wsgi:app", app_port, "api/v1/openapi.json", env)
    ceiling_port = free_port()
    ceiling = start_server(started, "ceiling", "bench.ceiling:app", ceiling_port, "", {"WEB_CONCURRENCY": WORKERS})
    ceiling_url = f"http://127.0.0.1:{ceiling_port}/"

    token = oidc_driver.user_tokens(env["OIDC_ISSUER_URL"], env["OIDC_CLIENT_ID"], env["OIDC_REDIRECT_URI"],
                                    USER, PASSWORD)["access_token"]  # fmt: skip
    cookie = sign_in(base)
    routes = {
        "public_profile": (f"{base}api/v1/users/bob", {}),
        "own_profile_bearer": (f"{base}api/v1/me/profile", {"Authorization": f"Bearer {token}"}),
        "own_profile_cookie": (f"{base}api/v1/me/profile", {"Cookie": f"pp_session={cookie}", "X-CSRF": "1"}),
        "poke": (f"{base}api/v1/pokes", {"Authorization": f"Bearer {token}"}),
    }

    warm = wrk("ceiling warm-up", ceiling, ceiling_url, WARMUP_SECONDS)
    targets = max(100_000, math.ceil(warm["rps"] * (SECONDS + WARMUP_SECONDS) * 1.5))
    print(f"seeding {targets} poke targets", flush=True)
    seed_targets(redis_url, Config(env).REDIS_KEY_PREFIX, targets)
    next_target = 1
    for name, (url, headers) in routes.items():
        figures = wrk(f"{name} warm-up", app, url, WARMUP_SECONDS, headers, next_target if name == "poke" else None)
        next_target = max(next_target, figures["last_target"] + 1)

    oidc_driver.reset_stats(idp_base)
    measured = {"ceiling before": wrk("ceiling before", ceiling, ceiling_url, SECONDS)}
    for name, (url, headers) in routes.items():
        measured[name] = wrk(name, app, url, SECONDS, headers, next_target if name == "poke" else None)
    measured["ceiling after"] = wrk("ceiling after", ceiling, ceiling_url, SECONDS)
    idp_requests = idp_total(oidc_driver.stats(idp_base))
    if measured["poke"]["last_target"] > targets:
        raise BenchFailed(f"poke ran past the {targets} seeded targets")

    ceilings = [summary(measured["ceiling before"]), summary(measured["ceiling after"])]
    ceiling_rps = (measured["ceiling before"]["rps"] + measured["ceiling after"]["rps"]) / 2
    results = {
        "ceiling": {field: round((ceilings[0][field] + ceilings[1][field]) / 2, 3) for field in ceilings[0]},
        "routes": {name: summary(measured[name], ceiling_rps) for name in routes},
        "idp_requests": idp_requests,
    }
    machine = (
        f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC, {os.cpu_count()} cores, gunicorn {CONF['worker_class']} "
        f"{WORKERS} workers, {CONF['threads']} threads each (production config), "
        f"`wrk -t{WRK_THREADS} -c{CONNECTIONS} -d{SECONDS}s`, BENCH_SECONDS={SECONDS}, all on the same cores."
    )
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "latest.json").write_text(json.dumps(results, indent=2) + "\n")
    report = markdown(results, ceilings, {name: figures["split"] for name, figures in measured.items()}, machine)
    (RESULTS / "latest.md").write_text(report)
    print(report)


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
