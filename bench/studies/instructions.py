"""Instructions per request, counted by valgrind's callgrind, which the machine's load does not move:
`python -m bench.studies.instructions [python ...]` runs, under each interpreter given (default: this
one), the app in process as bench/studies/request_path.py sets it up (real Redis and provider, metrics
and access log on) and counts the instructions of INSTRUCTIONS_REQUESTS requests per route after as many
warm-up ones (collection switched on around the measured loop only). It counts this process's Python
and C code, not the kernel (socket calls) nor Redis. Prints a table.

`python -m bench.studies.instructions --server [gunicorn options]` counts the whole request under
gunicorn instead: gunicorn.conf.py with one worker runs under callgrind, and one keep-alive client
sends INSTRUCTIONS_REQUESTS requests per route one after another, counted in the worker (its poller,
threads, parser and the app), so the server's share shows beside the app's.

`python -m bench.studies.instructions --parser` times gunicorn's parsers instead, by CPU time in
alternating rounds (callgrind's valgrind 3.19 cannot run gunicorn_h1c's SSE4.2 instructions): one
bearer request parsed by the pure-Python parser and by gunicorn_h1c's, where it is installed."""

import io
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from dev.services import ROOT

REQUESTS = int(os.environ.get("INSTRUCTIONS_REQUESTS", "100"))
PARSES = 5000
CALLGRIND = ["valgrind", "--tool=callgrind", "--instr-atstart=no"]


def collecting(on: bool) -> None:
    """Switch callgrind's collection in this process on or off."""
    subprocess.run(
        ["callgrind_control", "-i", "on" if on else "off", str(os.getpid())], check=True, capture_output=True
    )


def counted(label: str, run, count: int, results: dict) -> None:
    """Run `run()` once to warm up, then once collected; what callgrind counts is divided by `count`
    once the process ends (the harness reads each dump)."""
    run()
    collecting(True)
    run()
    collecting(False)
    subprocess.run(["callgrind_control", "-d", label, str(os.getpid())], check=True, capture_output=True)
    results[label] = count


def parse_requests(mode: str) -> callable:
    """PARSES parses of one bearer request by gunicorn's parser in `mode` (python or fast)."""
    from gunicorn.config import Config
    from gunicorn.http.parser import RequestParser

    config = Config()
    config.set("http_parser", mode)
    raw = (
        b"GET /api/v1/me/profile HTTP/1.1\r\nHost: 127.0.0.1:8000\r\nUser-Agent: bench\r\nAccept: */*\r\n"
        b"Authorization: Bearer " + b"x" * 900 + b"\r\n\r\n"
    )

    def run():
        for _ in range(PARSES):
            request = next(RequestParser(config, [raw], ("127.0.0.1", 5000)))
            assert request.path == "/api/v1/me/profile"

    return run


def parsers() -> None:
    """CPU µs per parse of each parser, 7 alternating rounds, lowest and median."""
    import statistics
    import time

    runs = {mode: parse_requests(mode) for mode in ("python", "fast")}
    spent = {mode: [] for mode in runs}
    for _ in range(7):
        for mode, run in runs.items():
            started = time.process_time()
            run()
            spent[mode].append((time.process_time() - started) * 1e6 / PARSES)
    for mode, values in spent.items():
        print(f"{mode}: {min(values):.1f} µs per parse (median {statistics.median(values):.1f})")


def inside() -> None:
    """Under callgrind: set the app up, count each route, write the counts to stdout."""
    from bench.studies import request_path

    os.environ["PROMETHEUS_MULTIPROC_DIR"] = tempfile.mkdtemp(prefix="instructions-metrics-")
    results = {}
    with request_path.services() as (redis_url, issuer, app_port):
        _, routes = request_path.prepared(redis_url, issuer, app_port)
        with request_path.quiet_stdout():
            for name, (flask_app, make) in routes.items():
                environs = [make(i) for i in range(2 * REQUESTS)]
                batches = iter((environs[:REQUESTS], environs[REQUESTS:]))

                def run(flask_app=flask_app, batches=batches):
                    for environ in next(batches):
                        request_path.call(flask_app, environ)

                counted(name, run, REQUESTS, results)
    print("COUNTS " + json.dumps(results), flush=True)


def under(python: str) -> dict:
    """Instructions per request by route (and parse) under `python`."""
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "callgrind.out"
        argv = [*CALLGRIND, f"--callgrind-out-file={out}", python, "-m", "bench.studies.instructions", "--inside"]
        output = subprocess.run(argv, cwd=ROOT, check=True, stdout=subprocess.PIPE, text=True).stdout
        counts = json.loads(next(line for line in output.splitlines() if line.startswith("COUNTS "))[7:])
        totals = {}
        for dump in Path(folder).glob("callgrind.out*"):
            text = dump.read_text(errors="replace")
            trigger = next((line for line in text.splitlines() if line.startswith("desc: Trigger: dump ")), "")
            total = next((int(line.split()[1]) for line in text.splitlines() if line.startswith("totals:")), 0)
            name = trigger.removeprefix("desc: Trigger: dump ")
            if name in counts:
                totals[name] = total / counts[name]
        return totals


def served(folder: str, options: list[str], env: dict | None = None) -> dict[str, Path]:
    """Run gunicorn (one worker, `options` after the shipped config) under callgrind, writing its dumps
    into `folder`; send INSTRUCTIONS_REQUESTS counted requests per route; each route's dump of the worker
    with its request count, as {label: (dump path, count)}."""
    import requests

    from dev.services import Process, free_port, gunicorn_argv, supervised

    from ..cpu import process_tree
    from ..world import ROUTES, World

    with supervised() as started:
        world = World(started, 1)
        port = free_port()
        argv = [*CALLGRIND, "--trace-children=yes", f"--callgrind-out-file={folder}/callgrind.%p"]
        argv += gunicorn_argv(port, ["--workers", "1", *options])
        server_env = {**world.service_env, **(env or {})}
        server = Process("gunicorn under callgrind", argv, log_path=Path(folder) / "server.log", env=server_env)
        started.append(server)
        base = f"http://127.0.0.1:{port}"
        server.wait_until(lambda: requests.get(f"{base}/api/v1/openapi.json", timeout=30).ok, timeout=600)
        worker = process_tree(server.pid)[-1]
        counts = {}
        with requests.Session() as http:
            for route in ROUTES:
                window = world.window(type("Server", (), {"base": base})(), route, False)
                target = iter(range(window.poke_from or 0, 10**9))

                def send(n, window=window, target=target, route=route):
                    for _ in range(n):
                        body = json.dumps({"username": f"t{next(target):07d}"}) if window.poke_from else None
                        method = "POST" if body else "GET"
                        headers = {**window.headers, **({"Content-Type": "application/json"} if body else {})}
                        answer = http.request(method, window.url, data=body, headers=headers, timeout=60)
                        assert answer.ok, (route, answer.status_code, answer.text)

                send(REQUESTS)
                subprocess.run(["callgrind_control", "-i", "on", str(worker)], check=True, capture_output=True)
                send(REQUESTS)
                subprocess.run(["callgrind_control", "-i", "off", str(worker)], check=True, capture_output=True)
                label = route.replace(" ", "_").replace(",", "")
                subprocess.run(["callgrind_control", "-d", label, str(worker)], check=True, capture_output=True)
                counts[label] = REQUESTS
                if window.poke_from:
                    world.next_target = next(target)
    dumps = {}
    for dump in Path(folder).glob(f"callgrind.{worker}*"):
        name = dump_trigger(dump)
        if name in counts:
            dumps[name] = (dump, counts[name])
    return dumps


def dump_trigger(dump: Path) -> str:
    """The label a dump was triggered with."""
    with dump.open(errors="replace") as lines:
        trigger = next((line for line in lines if line.startswith("desc: Trigger: dump ")), "")
    return trigger.removeprefix("desc: Trigger: dump ").strip()


def dump_total(dump: Path) -> int:
    """The instructions a dump counted."""
    with dump.open(errors="replace") as lines:
        return next((int(line.split()[1]) for line in lines if line.startswith("totals:")), 0)


def server(options: list[str]) -> None:
    """Instructions per request in one gunicorn worker under callgrind, by route."""
    with tempfile.TemporaryDirectory() as folder:
        for name, (dump, count) in served(folder, options).items():
            print(f"{name}: {dump_total(dump) / count / 1000:,.0f}k instructions per request in the worker")


def main(pythons: list[str]) -> None:
    rows = {python: under(python) for python in pythons or [sys.executable]}
    names = list(next(iter(rows.values())))
    out = io.StringIO()
    out.write("| per request | " + " | ".join(pythons or [sys.executable]) + " |\n")
    out.write("|---|" + "--:|" * len(rows) + "\n")
    for name in names:
        out.write(f"| {name} | " + " | ".join(f"{row.get(name, 0) / 1000:,.0f}k" for row in rows.values()) + " |\n")
    print(out.getvalue())


if __name__ == "__main__":
    if sys.argv[1:] == ["--inside"]:
        inside()
    elif sys.argv[1:] == ["--parser"]:
        parsers()
    elif sys.argv[1:2] == ["--server"]:
        server(sys.argv[2:])
    else:
        main(sys.argv[1:])
