"""Start and stop the local processes the service runs beside: redis-server, the dev identity
provider and gunicorn. Used by `make dev` (dev/run.py) and by the test fixtures."""

import ctypes
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import requests

ROOT = Path(__file__).resolve().parent.parent
PR_SET_PDEATHSIG = 1
IDP_DIR = ROOT / "dev" / "idp"


@contextmanager
def supervised() -> Iterator[list["Process"]]:
    """A list to put started processes in; leaving the block (Ctrl-C and SIGTERM raise
    KeyboardInterrupt inside it) stops every one of them, newest first."""
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, _interrupt)
    started: list[Process] = []
    try:
        yield started
    finally:
        for process in reversed(started):
            process.stop()


def _interrupt(*_) -> None:
    raise KeyboardInterrupt


class StartFailed(RuntimeError):
    """A process did not become ready in time; the message carries the end of its log."""


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def free_cluster_port() -> int:
    """A free port P whose cluster bus port P + 10000 is free too (Redis needs P <= 55535)."""
    while True:
        port = secrets.randbelow(25_000) + 20_000
        if all(_is_free(candidate) for candidate in (port, port + 10_000)):
            return port


def _is_free(port: int) -> bool:
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


class Process:
    """A child process with its output in a log file, stopped by process id."""

    def __init__(self, name: str, argv: list[str], *, log_path: Path | None, env: dict | None = None, cwd=None):
        """Start `argv`; its output goes to `log_path`, or to this process's stdout when None."""
        self.name = name
        self.log_path = log_path
        self._log = None
        if log_path is not None:
            log_path.parent.mkdir(parents=True, exist_ok=True)
            self._log = open(log_path, "ab")  # noqa: SIM115 - closed in stop()
        self.popen = subprocess.Popen(
            argv,
            preexec_fn=_die_with_parent,
            stdout=self._log,
            stderr=subprocess.STDOUT if self._log else None,
            env={**os.environ, **(env or {})},
            cwd=cwd or ROOT,
            start_new_session=True,
        )

    @property
    def pid(self) -> int:
        return self.popen.pid

    def alive(self) -> bool:
        return self.popen.poll() is None

    def wait_until(self, ready, timeout: float = 30.0) -> None:
        """Poll `ready()` until it is true; StartFailed if the process dies or time runs out."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self.alive():
                raise StartFailed(f"{self.name} exited with {self.popen.returncode}:\n{self.tail()}")
            try:
                if ready():
                    return
            except Exception:
                pass
            time.sleep(0.1)
        self.stop()
        raise StartFailed(f"{self.name} was not ready after {timeout}s:\n{self.tail()}")

    def stop(self, timeout: float = 10.0) -> None:
        """SIGTERM the process group, then SIGKILL what is left."""
        if self.alive():
            try:
                os.killpg(self.popen.pid, signal.SIGTERM)
                self.popen.wait(timeout)
            except subprocess.TimeoutExpired:
                os.killpg(self.popen.pid, signal.SIGKILL)
                self.popen.wait()
            except ProcessLookupError:
                pass
        if self._log:
            self._log.close()

    def tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except (OSError, AttributeError):
            return ""


def _die_with_parent() -> None:
    """In the child: get SIGTERM if the process that started it dies, even by SIGKILL (Linux), so a
    killed test run or launcher leaves no server behind."""
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def start_redis(port: int, *, workdir: Path, extra_args: tuple[str, ...] = ()) -> Process:
    """A throwaway redis-server on 127.0.0.1:`port` that keeps nothing on disk."""
    binary = shutil.which("redis-server")
    if binary is None:
        raise StartFailed("redis-server is not installed (make installs Debian's redis-server package)")
    workdir.mkdir(parents=True, exist_ok=True)
    argv = [
        binary,
        "--port",
        str(port),
        "--bind",
        "127.0.0.1",
        "--save",
        "",
        "--appendonly",
        "no",
        "--dir",
        str(workdir),
        *extra_args,
    ]
    process = Process(f"redis:{port}", argv, log_path=workdir / f"redis-{port}.log")
    process.wait_until(lambda: _redis_ping(port))
    return process


def start_redis_cluster(
    ports: list[int], *, workdir: Path, replicas: int = 0, node_timeout_ms: int = 2000, extra_args: tuple[str, ...] = ()
) -> list[Process]:
    """A real Redis Cluster on `ports`, slots assigned, state ok: the first len(ports) / (1 + replicas) ports
    are masters, the rest `replicas` replicas of each (in sync before this returns)."""
    nodes = [
        start_cluster_node(port, workdir=workdir, node_timeout_ms=node_timeout_ms, extra_args=extra_args)
        for port in ports
    ]
    try:
        subprocess.run(
            [
                "redis-cli",
                "--cluster",
                "create",
                *(f"127.0.0.1:{port}" for port in ports),
                "--cluster-replicas",
                str(replicas),
                "--cluster-yes",
            ],
            check=True,
            capture_output=True,
            timeout=60,
        )
        nodes[0].wait_until(lambda: all(_cluster_ok(port) for port in ports) and all(in_sync(port) for port in ports))
    except BaseException:
        for node in nodes:
            node.stop()
        raise
    return nodes


def start_cluster_node(
    port: int, *, workdir: Path, node_timeout_ms: int = 2000, extra_args: tuple[str, ...] = ()
) -> Process:
    """One cluster-enabled redis-server; started again on the same port and `workdir`, it rejoins its cluster."""
    config = ("--cluster-enabled", "yes", "--cluster-config-file", f"nodes-{port}.conf")
    timeout = ("--cluster-node-timeout", str(node_timeout_ms))
    return start_redis(port, workdir=workdir, extra_args=(*config, *timeout, *extra_args))


def in_sync(port: int) -> bool:
    """Whether the node on `port` is a master, or a replica whose link to its master is up."""
    info = subprocess.run(["redis-cli", "-p", str(port), "info", "replication"], capture_output=True, text=True).stdout
    return "role:master" in info or "master_link_status:up" in info


def _cluster_ok(port: int) -> bool:
    info = subprocess.run(["redis-cli", "-p", str(port), "cluster", "info"], capture_output=True, text=True).stdout
    return "cluster_state:ok" in info


def _redis_ping(port: int) -> bool:
    with socket.create_connection(("127.0.0.1", port), timeout=0.5) as conn:
        conn.sendall(b"PING\r\n")
        return conn.recv(16).startswith(b"+PONG")


def start_idp(port: int, *, env: dict, log_path: Path) -> Process:
    """The dev identity provider on 127.0.0.1:`port`, ready once discovery answers."""
    issuer = idp_issuer(port)
    process = Process(
        f"idp:{port}",
        ["node", str(IDP_DIR / "server.js")],
        log_path=log_path,
        env={"IDP_HOST": "127.0.0.1", "IDP_PORT": str(port), **env},
    )
    process.wait_until(lambda: requests.get(f"{issuer}/.well-known/openid-configuration", timeout=1).ok, timeout=60)
    return process


def idp_issuer(port: int) -> str:
    return f"http://127.0.0.1:{port}/realms/dev"


def local_app_env(issuer: str, app_base: str, redis_url: str, **settings: str) -> dict:
    """The settings of an app served on loopback at `app_base` over `issuer` and `redis_url`, with a new
    SECRET_KEY; `settings` are added, or win over these."""
    return {
        "OIDC_ISSUER_URL": issuer,
        "OIDC_CLIENT_ID": "profile-poke-web",
        "OIDC_REDIRECT_URI": f"{app_base.rstrip('/')}/auth/callback",
        "SESSION_COOKIE_SECURE": "false",
        "REDIS_URL": redis_url,
        "SECRET_KEY": secrets.token_urlsafe(48),
        **settings,
    }


def gunicorn_argv(port: int, options=(), app: str = "wsgi:app") -> list[str]:
    """The command that serves `app` under server/gunicorn.conf.py plus `options` on 127.0.0.1:`port`."""
    config = ["--config", str(ROOT / "server" / "gunicorn.conf.py"), "--bind", f"127.0.0.1:{port}"]
    return [sys.executable, "-m", "gunicorn", *config, *options, app]


def start_gunicorn(port: int, *, env: dict, log_path: Path | None = None, workers: int | None = 2) -> Process:
    """The app under gunicorn with the production config, on 127.0.0.1:`port`, ready once it answers;
    `workers=None` keeps the config's own worker count."""
    argv = gunicorn_argv(port, ["--workers", str(workers)] if workers else [])
    process = Process(f"app:{port}", argv, log_path=log_path, env=env)
    process.wait_until(lambda: requests.get(f"http://127.0.0.1:{port}/api/v1/openapi.json", timeout=1).ok)
    return process
