"""What each piece of a request costs, in process: `python -m bench.studies.request_path` (prints a table).

The app as production runs it (metrics on in multiprocess mode, the access log on, hiredis) against a
real redis-server and the dev provider, called as `app.wsgi_app(environ, start_response)` with no
server. Two passes per route, alternated over `ROUNDS` rounds:
- the whole request, CPU time of this process (time.process_time) over `REQUESTS` requests;
- the same requests with each piece wrapped in a timer (thread CPU time; the timer's own cost,
  measured on an empty function, is taken off) and the Redis round trips and metric writes counted.
Medians over the rounds, in µs per request. `BENCH_REQUESTS` and `BENCH_ROUNDS` change the sizes."""

import contextlib
import io
import json
import os
import statistics
import sys
import tempfile
import time
from collections import Counter, defaultdict
from functools import wraps
from urllib.parse import urlsplit

REQUESTS = int(os.environ.get("BENCH_REQUESTS", "4000"))
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "5"))
USER, PASSWORD = "alice", "demo"
LOOPBACK = {"REMOTE_ADDR": "127.0.0.1", "REMOTE_PORT": "50000"}
ROUTES = ("bare_flask", "public_profile", "own_profile_bearer", "own_profile_cookie", "poke")


def main() -> None:
    metrics_dir = tempfile.mkdtemp(prefix="request-path-metrics-")
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = metrics_dir  # before prometheus_client is first imported
    with services() as (redis_url, issuer, app_port):
        app, routes = prepared(redis_url, issuer, app_port)
        results = measure(app, routes)
    print(json.dumps(results, indent=1))
    print(table(results))


def services():
    """A private redis-server and dev provider (access tokens good for an hour: a run on a loaded
    machine outlasts the default), stopped on the way out: (Redis URL, issuer, the app's port)."""
    from ..servers import redis_and_provider  # here: PROMETHEUS_MULTIPROC_DIR is set first

    return redis_and_provider(IDP_ACCESS_TOKEN_TTL="3600")


def prepared(redis_url: str, issuer: str, app_port: int):
    """The app, signed-in credentials and one environ factory per route."""
    import secrets

    import requests
    from flask import Flask
    from werkzeug.test import EnvironBuilder

    from app import create_app
    from app.cli import users_cli  # noqa: F401  (the import command below)
    from config import Config
    from dev import oidc_driver
    from dev.services import local_app_env

    from ..world import seed_targets

    bare = Flask("bare")  # the yardstick: a route that returns a small JSON object and nothing else
    bare.get("/")(lambda: {"hello": "world"})

    base = f"http://127.0.0.1:{app_port}/"
    env = local_app_env(
        issuer,
        base,
        redis_url,
        METRICS_TOKEN=secrets.token_urlsafe(32),
        LOG_LEVEL="INFO",
        # Settings to measure a feature's cost by its absence: '{"LOG_LEVEL": "WARNING"}' (no access log)
        # or '{"METRICS_TOKEN": ""}' (no metrics).
        **json.loads(os.environ.get("BENCH_APP_ENV", "{}")),
    )
    app = create_app(Config(env))
    runner = app.test_cli_runner()
    imported = runner.invoke(args=["users", "import", "dev/demo-users.json"])
    assert imported.exit_code == 0, imported.output
    seed_targets(redis_url, Config(env).REDIS_KEY_PREFIX, REQUESTS * ROUNDS * 2 + 1000)
    token = oidc_driver.user_tokens(issuer, env["OIDC_CLIENT_ID"], env["OIDC_REDIRECT_URI"], USER, PASSWORD)
    bearer = {"Authorization": f"Bearer {token['access_token']}"}
    client = app.test_client()
    with requests.Session() as http:
        start = client.get("/auth/login")
        callback = oidc_driver.login_at_idp(http, start.headers["Location"], USER, PASSWORD)
    parts = urlsplit(callback)
    done = client.get(f"{parts.path}?{parts.query}")
    assert done.status_code == 302, done.text
    cookie = client.get_cookie(app.config["SESSION_COOKIE_NAME"]).value
    cookie_headers = {"Cookie": f"{app.config['SESSION_COOKIE_NAME']}={cookie}", "X-CSRF": "1"}

    def fixed(path, headers=None, flask_app=app):
        environ = EnvironBuilder(path=path, headers=headers or {}, base_url=base, environ_base=LOOPBACK).get_environ()
        return lambda _: dict(environ)

    pokes = iter(range(1, 10**9))

    def poke(_):
        body = json.dumps({"username": f"t{next(pokes):07d}"}).encode()
        environ = EnvironBuilder(
            path="/api/v1/pokes",
            method="POST",
            headers=bearer,
            data=body,
            content_type="application/json",
            base_url=base,
            environ_base=LOOPBACK,
        ).get_environ()
        return environ

    routes = {
        "bare_flask": (bare, fixed("/")),
        "public_profile": (app, fixed("/api/v1/users/bob")),
        "own_profile_bearer": (app, fixed("/api/v1/me/profile", bearer)),
        "own_profile_cookie": (app, fixed("/api/v1/me/profile", cookie_headers)),
        "poke": (app, poke),
    }
    for name, (flask_app, make) in routes.items():  # every route answers 200 before it is measured
        status = call(flask_app, make(0))
        assert status.startswith("200"), (name, status)
    return app, routes


def call(flask_app, environ) -> str:
    """One request through the WSGI app; its status line."""
    seen = []
    body = flask_app.wsgi_app(environ, lambda status, headers, exc_info=None: seen.append(status))
    for _ in body:
        pass
    if hasattr(body, "close"):
        body.close()
    return seen[0]


@contextlib.contextmanager
def quiet_stdout():
    """The access log (one os.write to fd 1 per request) goes to /dev/null while measuring."""
    sys.stdout.flush()
    saved = os.dup(1)
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)
    try:
        yield
    finally:
        os.dup2(saved, 1)
        os.close(saved)
        os.close(null)


def whole(flask_app, make, requests: int) -> float:
    """CPU µs per request of `requests` requests (environs built outside the timed loop)."""
    environs = [make(i) for i in range(requests)]
    started = time.process_time()
    statuses = [call(flask_app, environ) for environ in environs]
    spent = time.process_time() - started
    failed = [status for status in statuses if not status.startswith("200")]
    if failed:
        raise RuntimeError(f"{len(failed)} of {requests} requests failed, e.g. {failed[0]}")
    return spent / requests * 1e6


def measure(app, routes) -> dict:
    totals, pieces, counts = defaultdict(list), defaultdict(lambda: defaultdict(list)), defaultdict(dict)
    with quiet_stdout():
        for flask_app, make in routes.values():  # warm-up
            whole(flask_app, make, 500)
        for _ in range(ROUNDS):
            for name, (flask_app, make) in routes.items():
                totals[name].append(whole(flask_app, make, REQUESTS))
            for name, (flask_app, make) in routes.items():
                if flask_app is not app:
                    continue
                with Pieces(app) as timer:
                    whole(flask_app, make, REQUESTS)
                for piece, ns in timer.ns.items():
                    pieces[name][piece].append(ns / REQUESTS / 1000)
                counts[name] = {key: value / REQUESTS for key, value in timer.calls.items()}
    return {
        name: {
            "total_us": round(statistics.median(values), 1),
            "spread_us": [round(min(values), 1), round(max(values), 1)],
            "pieces_us": {piece: round(statistics.median(v), 1) for piece, v in pieces.get(name, {}).items()},
            "per_request": counts.get(name, {}),
        }
        for name, values in totals.items()
    }


class Pieces:
    """Wraps the pieces of a request in CPU timers (nested pieces are taken out of their parents) and
    counts Redis round trips and metric file writes, until the block ends."""

    def __init__(self, app):
        self.app = app
        self.ns = Counter()
        self.calls = Counter()
        self._undo = []
        self._stack = []
        self._overhead = _timer_overhead()

    def __enter__(self):
        import flask
        import redis
        from prometheus_client import mmap_dict
        from werkzeug.routing.map import MapAdapter

        from app.api import routes as api_routes
        from app.api import schemas

        app = self.app
        for registry, kind in ((app.before_request_funcs, "before"), (app.after_request_funcs, "after")):
            for blueprint, hooks in registry.items():
                for index, hook in enumerate(hooks):
                    label = f"{kind}: {getattr(hook, '__name__', hook)}" + (f" ({blueprint})" if blueprint else "")
                    self._replace(hooks, index, label)
        interface = app.session_interface
        self._patch(interface, "open_session", "session: open")
        self._patch(interface, "save_session", "session: save")
        self._patch(MapAdapter, "match", "werkzeug routing (match)")
        self._patch(flask.Flask, "make_response", "make_response (JSON encoding, Response)")
        self._patch(flask.Flask, "create_url_adapter", "url adapter")
        for name in ("PUBLIC_PROFILE", "OWN_PROFILE"):  # marshmallow schemas, before they were cut
            if hasattr(api_routes, name):
                self._patch(getattr(api_routes, name), "dump", "serialisation (schema dump)")
        for name in ("public_profile_body", "own_profile_body"):  # the bodies built by hand
            if hasattr(api_routes, name):
                self._patch(api_routes, name, "serialisation (schema dump)", module=True)
        self._patch(schemas, "poke_target", "poke body validation (schema load)", module=True)
        self._patch(redis.Redis, "execute_command", "redis round trip (Python)", count="redis round trips")
        self._patch(redis.client.Pipeline, "execute", "redis round trip (Python)", count="redis round trips")
        self._patch(mmap_dict.MmapedDict, "write_value", "metrics: mmap write", count="metric mmap writes")
        self._patch(os, "write", "access log: os.write", module=True)
        for view_name, view in list(app.view_functions.items()):
            if view_name.startswith("api."):
                app.view_functions[view_name] = self._timed(view, "view (guard, store, body)")
                self._undo.append(lambda n=view_name, v=view: app.view_functions.__setitem__(n, v))
        return self

    def __exit__(self, *_):
        for undo in reversed(self._undo):
            undo()

    def _replace(self, hooks, index, label):
        original = hooks[index]
        hooks[index] = self._timed(original, label)
        self._undo.append(lambda: hooks.__setitem__(index, original))

    def _patch(self, owner, attribute, label, count=None, module=False):
        if isinstance(owner, type):
            original = owner.__dict__[attribute]
            self._undo.append(lambda: setattr(owner, attribute, original))
        elif module:
            original = getattr(owner, attribute)
            self._undo.append(lambda: setattr(owner, attribute, original))
        else:  # an instance: its own attribute shadows the class's until deleted
            original = getattr(owner, attribute)
            self._undo.append(lambda: delattr(owner, attribute))
        setattr(owner, attribute, self._timed(original, label, count))

    def _timed(self, function, label, count=None):
        """`function` timed by this thread's CPU time (not the wall clock: other processes share the
        cores), less what one timing costs and less the pieces timed inside it."""
        clock, stack, ns, calls, overhead = time.thread_time_ns, self._stack, self.ns, self.calls, self._overhead

        @wraps(function)
        def timed(*args, **kwargs):
            if count:
                calls[count] += 1
            if stack and stack[-1][0] == label:  # a piece calling itself (a pipeline's execute_command)
                return function(*args, **kwargs)
            started = clock()
            stack.append([label, 0])
            try:
                return function(*args, **kwargs)
            finally:
                _, inner = stack.pop()
                spent = clock() - started
                ns[label] += spent - overhead - inner
                if stack:
                    stack[-1][1] += spent  # the parent loses this piece and its timing

        return timed


def _timer_overhead() -> int:
    """ns one timing adds (two reads of the thread's CPU clock, a system call here), best of 7."""
    clock = time.thread_time_ns
    best = None
    for _ in range(7):
        started = clock()
        for _ in range(10_000):
            a = clock()
            _ = clock() - a
        per = (clock() - started) // 10_000
        best = per if best is None else min(best, per)
    return best


def table(results: dict) -> str:
    lines = [f"{REQUESTS} requests x {ROUNDS} rounds, CPU µs per request (median, min-max of rounds)", ""]
    for name in ROUTES:
        figures = results[name]
        low, high = figures["spread_us"]
        lines.append(f"{name}: {figures['total_us']} µs ({low}-{high})")
        for piece, us in sorted(figures["pieces_us"].items(), key=lambda item: -item[1]):
            lines.append(f"    {us:7.1f}  {piece}")
        if figures["pieces_us"]:
            rest = figures["total_us"] - sum(figures["pieces_us"].values())
            lines.append(f"    {rest:7.1f}  the rest (Flask and werkzeug: environ, contexts, dispatch)")
        for key, value in figures["per_request"].items():
            lines.append(f"    {value:7.2f}  {key} per request")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.stdout = io.TextIOWrapper(sys.stdout.buffer, encoding="utf-8", line_buffering=True)
    main()
