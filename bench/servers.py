"""What `make bench` serves and how: the service under gunicorn.conf.py, the plain Flask peer under
the same settings, the FastAPI peer under uvicorn, each in its own virtualenv; and a private Redis and
provider for one-off studies."""

import os
import secrets
import shlex
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import requests

from dev.services import ROOT, Process, free_port, gunicorn_argv, idp_issuer, start_idp, start_redis

from .load import BenchFailed

STATE = ROOT / ".dev" / "bench"
PEER_VENVS = {"flask": ROOT / "bench" / ".venv-flask", "fastapi": ROOT / "bench" / ".venv-fastapi"}
# Extra gunicorn options for the service and the Flask peer alike, to compare server settings on this
# table before shipping them in gunicorn.conf.py: BENCH_GUNICORN="--worker-class gevent --workers 2".
EXTRA_GUNICORN = shlex.split(os.environ.get("BENCH_GUNICORN", ""))
UVICORN_COMMON = ["--workers", "2", "--no-access-log", "--log-level", "warning"]
# The FastAPI peer's configurations: uvicorn's pure-Python loop and parser, and its fast ones.
UVICORN_CONFIGS = {
    "FastAPI (uvicorn h11)": ["--loop", "asyncio", "--http", "h11"],
    "FastAPI (uvicorn httptools+uvloop)": ["--loop", "uvloop", "--http", "httptools"],
}
SERVICE = "service"
FLASK_PEER = "plain Flask"


@dataclass
class Server:
    """One implementation being measured: its name, its base URL and its process (the root of its tree)."""

    name: str
    base: str
    process: Process


def peer_python(kind: str) -> str:
    """The Python of a peer's virtualenv; BenchFailed when `make bench` has not built it."""
    python = PEER_VENVS[kind] / "bin" / "python"
    if not python.exists():
        raise BenchFailed(f"{python} is missing: `make bench` builds the peers' virtualenvs")
    return str(python)


def start(started: list, name: str, argv: list[str], env: dict, port: int, ready_path: str) -> Server:
    """`argv` with `env`, logging to .dev/bench/, returned once GET `ready_path` answers 200."""
    log = STATE / f"{name.replace(' ', '-').replace('(', '').replace(')', '')}.log"
    process = Process(name, argv, log_path=log, env=env)
    started.append(process)
    base = f"http://127.0.0.1:{port}"
    process.wait_until(lambda: requests.get(f"{base}{ready_path}", timeout=1).ok, timeout=60)
    return Server(name, base, process)


def start_service(started: list, env: dict, name: str = SERVICE) -> Server:
    """The service as shipped: gunicorn.conf.py (plus BENCH_GUNICORN), metrics on."""
    port = free_port()
    return start(started, name, gunicorn_argv(port, EXTRA_GUNICORN), env, port, "/api/v1/openapi.json")


def start_flask_peer(started: list, env: dict) -> Server:
    """The plain Flask peer under gunicorn.conf.py's settings (bench/peers/gunicorn_settings.py)."""
    port = free_port()
    argv = [
        peer_python("flask"),
        "-m",
        "gunicorn",
        "--config",
        str(ROOT / "bench" / "peers" / "gunicorn_settings.py"),
        "--bind",
        f"127.0.0.1:{port}",
        *EXTRA_GUNICORN,
        "bench.peers.flask_peer:create_app()",
    ]
    return start(started, FLASK_PEER, argv, env, port, "/api/v1/users/alice")


def start_fastapi_peer(started: list, env: dict, name: str) -> Server:
    """The FastAPI peer under uvicorn with 2 workers, in the configuration `name` names."""
    port = free_port()
    argv = [
        peer_python("fastapi"),
        "-m",
        "uvicorn",
        "--factory",
        "bench.peers.fastapi_peer:create_app",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        *UVICORN_COMMON,
        *UVICORN_CONFIGS[name],
    ]
    return start(started, name, argv, env, port, "/api/v1/users/alice")


@contextmanager
def redis_and_provider(**idp_settings: str) -> Iterator[tuple[str, str, int]]:
    """A private redis-server and dev provider (with `idp_settings`) for a one-off measurement, stopped
    on the way out: (the Redis URL, the provider's issuer, the port of the app whose redirects the
    provider accepts)."""
    with tempfile.TemporaryDirectory() as workdir:
        redis_port, idp_port, app_port = free_port(), free_port(), free_port()
        redis_server = start_redis(redis_port, workdir=Path(workdir))
        base = f"http://127.0.0.1:{app_port}/"
        try:
            idp = start_idp(
                idp_port,
                log_path=Path(workdir) / "idp.log",
                env={
                    "IDP_API_CLIENT_SECRET": secrets.token_urlsafe(24),
                    "IDP_REDIRECT_URIS": f"{base}auth/callback",
                    "IDP_POST_LOGOUT_REDIRECT_URIS": base,
                    **idp_settings,
                },
            )
            try:
                yield f"redis://127.0.0.1:{redis_port}/0", idp_issuer(idp_port), app_port
            finally:
                idp.stop()
        finally:
            redis_server.stop()
