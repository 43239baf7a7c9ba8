"""The servers the levers study compares, each a way to serve the same app (wsgi:app) with the same
settings as far as the server allows: gunicorn.conf.py's (through gunicorn_levers.py), keep-alive 100 s.

Interpreters: "shipped" is the service's own virtualenv; "3.11" and "3.13" are virtualenvs the study
builds under .dev/levers/ from LEVERS_PYTHON_311 / LEVERS_PYTHON_313 (pyenv's by default) with
requirements.txt and requirements-levers.txt (the C parser, a2wsgi, uvicorn, uWSGI, granian)."""

import hashlib
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from dev.services import ROOT

HERE = Path(__file__).resolve().parent
VENVS = ROOT / ".dev" / "levers"
PYENV = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
INTERPRETERS = {
    "3.11": os.environ.get("LEVERS_PYTHON_311", str(PYENV / "3.11.7" / "bin" / "python")),
    "3.13": os.environ.get("LEVERS_PYTHON_313", str(PYENV / "3.13.0" / "bin" / "python")),
}
CONFIG = ["--config", str(HERE / "gunicorn_levers.py")]
ASGI_APP = "bench.studies.levers.asgi_app:app"
KEEPALIVE_S = "100"


@dataclass(frozen=True)
class Candidate:
    """How to serve the app: `server` (gunicorn, uvicorn, uwsgi, granian), its options, the interpreter,
    and environment variables for the server (LEVER_SWITCH_INTERVAL, LEVER_ASGI_THREADS)."""

    server: str
    options: tuple = ()
    python: str = "shipped"
    env: dict = field(default_factory=dict)

    def argv(self, port: int) -> list[str]:
        """The command serving the app on 127.0.0.1:`port`."""
        python = python_of(self.python)
        bind = f"127.0.0.1:{port}"
        if self.server == "gunicorn":
            return [python, "-m", "gunicorn", *CONFIG, "--bind", bind, *self.options, "wsgi:app"]
        if self.server == "gunicorn asgi":
            return [
                python,
                "-m",
                "gunicorn",
                *CONFIG,
                "--bind",
                bind,
                "--worker-class",
                "asgi",
                *self.options,
                ASGI_APP,
            ]
        if self.server == "uvicorn":
            return [
                *(python, "-m", "uvicorn", ASGI_APP, "--host", "127.0.0.1", "--port", str(port)),
                *("--loop", "uvloop", "--http", "httptools", "--timeout-keep-alive", KEEPALIVE_S),
                *("--no-access-log", "--log-level", "warning", *self.options),
            ]
        if self.server == "uwsgi":
            return [
                *(str(Path(python).with_name("uwsgi")), "--home", str(Path(python).parents[1])),
                *("--master", "--http", bind, "--http-keepalive"),
                *("--http-timeout", KEEPALIVE_S, "--module", "wsgi:app", "--lazy-apps", "--enable-threads"),
                *("--disable-logging", "--die-on-term", "--need-app", "--pythonpath", str(ROOT), *self.options),
            ]
        return [
            *(python, "-m", "granian", "--interface", "wsgi", "--host", "127.0.0.1", "--port", str(port)),
            *("--no-ws", "--log-level", "warning", *self.options, "wsgi:app"),
        ]

    def environment(self) -> dict:
        """What the server needs beyond the app's settings: a metrics directory where gunicorn.conf.py's
        hook does not make one."""
        extra = dict(self.env)
        if not self.server.startswith("gunicorn"):
            extra["PROMETHEUS_MULTIPROC_DIR"] = tempfile.mkdtemp(prefix="levers-metrics-")
        return extra


def gthread(workers: int = 3, threads: int = 8, *extra: str, python: str = "shipped", **env: str) -> Candidate:
    return Candidate("gunicorn", ("--workers", str(workers), "--threads", str(threads), *extra), python, env)


CANDIDATES = {
    "shipped (gthread 3 x 8)": gthread(),
    "C parser": gthread(3, 8, "--http-parser", "fast", python="3.11"),
    "switch interval 1 ms": gthread(LEVER_SWITCH_INTERVAL="0.001"),
    "switch interval 0.2 ms": gthread(LEVER_SWITCH_INTERVAL="0.0002"),
    "3 x 4 threads": gthread(3, 4),
    "3 x 2 threads": gthread(3, 2),
    "4 x 8": gthread(4, 8),
    "6 x 2": gthread(6, 2),
    "quiet loop (heartbeat, parent check once a second)": gthread(
        3, 8, "--worker-class", "bench.studies.levers.workers.QuietLoop"
    ),
    "C parser + 1 ms": gthread(3, 8, "--http-parser", "fast", python="3.11", LEVER_SWITCH_INTERVAL="0.001"),
    "Python 3.13": gthread(python="3.13"),
    "C parser + 1 ms + 3.13": gthread(3, 8, "--http-parser", "fast", python="3.13", LEVER_SWITCH_INTERVAL="0.001"),
    "gunicorn ASGI worker 3, a2wsgi 8 threads": Candidate("gunicorn asgi", ("--workers", "3"), "3.11"),
    "uvicorn 3, a2wsgi 8 threads": Candidate("uvicorn", ("--workers", "3"), "3.11"),
    "uWSGI router, 3 x 8": Candidate("uwsgi", ("--processes", "3", "--threads", "8"), "3.11"),
    "granian 2 x 8 (out: idle close <= 60 s)": Candidate(
        "granian", ("--workers", "2", "--blocking-threads", "8"), "3.11"
    ),
}


def python_of(name: str) -> str:
    """The interpreter `name` stands for, its virtualenv built on first use and brought up to date
    whenever requirements.txt or requirements-levers.txt changed."""
    if name == "shipped":
        return str(ROOT / ".venv" / "bin" / "python")
    venv = VENVS / f"py{name}"
    python = venv / "bin" / "python"
    requirements = (ROOT / "requirements.txt", HERE / "requirements-levers.txt")
    wanted = hashlib.sha256(b"".join(path.read_bytes() for path in requirements)).hexdigest()
    marker = venv / ".installed"
    if not marker.exists() or marker.read_text() != wanted:
        print(f"installing into {venv}", file=sys.stderr, flush=True)
        if not python.exists():
            subprocess.run([INTERPRETERS[name], "-m", "venv", str(venv)], check=True)
        for path in requirements:
            pip = [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "-r", str(path)]
            subprocess.run(pip, check=True)
        marker.write_text(wanted)
    return str(python)
