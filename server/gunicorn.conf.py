"""gunicorn settings, Heroku style: PORT and WEB_CONCURRENCY from the environment, logs on stdout."""

import math
import multiprocessing
import os
import shutil
import tempfile
from pathlib import Path

from server import gthread_worker


def _seconds(name: str, default: str) -> float:
    """A positive number of seconds from the environment; start-up stops, naming the variable, otherwise."""
    value = os.environ.get(name) or default
    try:
        seconds = float(value)
    except ValueError:
        seconds = math.nan
    if not 0 < seconds < math.inf:
        raise SystemExit(f"{name} must be a positive number of seconds, not {value!r}")
    return seconds


bind = f"0.0.0.0:{os.environ.get('PORT', '8000')}"
workers = int(os.environ.get("WEB_CONCURRENCY") or multiprocessing.cpu_count() + 1)
# Chosen by measurement (python -m bench.studies.levers, bench.studies.hang and bench.studies.keepalive on 2
# shared cores; figures in docs/performance.md "Server choice" and "Server levers", where gunicorn's C
# parser, a shorter switch interval, fewer threads, more workers, Python 3.13 and ASGI servers moved no
# figure beyond the noise, and uWSGI's router, the one lever that did, is weighed). Threads keep a
# worker serving while some of its requests wait on the identity provider (eight sessions refreshing
# against a provider that hangs 5 s must not stall bearer calls: 3 x 2 threads and sync workers did).
# With keep-alive clients this config spent 5-18 % less CPU per request than keep-alive off and served
# 1.1-1.5 x its req/s. gevent cost 1.3-2 x gthread's CPU per request and holds a stop for the whole
# graceful_timeout while connections sit idle (20 s against 3.5-9 s). granian spent the least CPU
# (0.8-1.4 ms against 1.6-1.8 ms a request) but closes idle connections after 30 s (60 s at most),
# before Heroku's router does.
threads = int(os.environ.get("GUNICORN_THREADS", "8"))
# gthread_worker.py: gunicorn's gthread worker where a request reaches a thread only once it has all
# arrived (its request line and headers within REQUEST_HEADER_TIMEOUT, its body within
# REQUEST_BODY_TIMEOUT; gunicorn's own let 8 stalled clients stop a worker), the 2 s lingering close
# of a `Connection: close` answer waits on the poller (on the main loop each client that kept its
# socket open stalled the whole worker), and a stop never waits on a blocked thread. With one thread
# too: gunicorn's sync worker would let one slow client hold the worker until `timeout`.
worker_class = gthread_worker.with_deadlines(
    header_timeout=_seconds("REQUEST_HEADER_TIMEOUT", "10"), body_timeout=_seconds("REQUEST_BODY_TIMEOUT", "10")
)
timeout = 30
graceful_timeout = 20
# Heroku's Router 2.0 keeps connections to the dyno alive and closes them after 90 s idle: the app must
# not close first, or the router may send a request on a connection the app is closing.
keepalive = 100
# A gthread worker stops accepting once it holds worker_connections connections, idle ones included,
# and its idle limit (worker_connections - threads) is checked when a request starts, so concurrent
# requests can all park: a small cap (12 was tried) filled with idle connections and stalled every new
# connection for the whole keep-alive timeout. gunicorn's default leaves room for the router's pool.
worker_connections = 1000
# Each worker its own listening socket (SO_REUSEPORT), so the kernel spreads new connections over the
# workers: on one shared socket a gthread worker accepts greedily, and with keep-alive one worker held
# every connection of a benchmark (CPU split 100/0) while the other sat idle.
reuse_port = True
# The app writes one JSON line per request itself (app/logs.py); gunicorn adds only its own events.
accesslog = None
errorlog = "-"
# gunicorn's own lines (a failed request's, a malformed request line, an access log) without query strings.
logger_class = "server.gunicorn_logger.Logger"
loglevel = os.environ.get("GUNICORN_LOG_LEVEL", "info")
# Forwarded headers are trusted only from the configured proxies (Heroku's router: FORWARDED_ALLOW_IPS=*).
forwarded_allow_ips = os.environ.get("FORWARDED_ALLOW_IPS", "127.0.0.1")
# Of those, only the scheme, and only from the header Heroku's router sets itself: it passes a
# client's X-Forwarded-Ssl or X-Forwarded-Protocol on unchanged (gunicorn's default trusts both).
secure_scheme_headers = {"X-FORWARDED-PROTO": "https"}
# No header may set SCRIPT_NAME or PATH_INFO (gunicorn's default lets a trusted forwarder, so with
# FORWARDED_ALLOW_IPS=* any client, move the app: /x/metrics answered as /metrics); header names with
# an underscore are dropped.
forwarder_headers = ""
header_map = "drop"
# Several instances may share a host (tests, benchmarks); none needs gunicorn's runtime control socket.
control_socket_disable = True


def on_starting(server):
    """Give this master's workers an empty PROMETHEUS_MULTIPROC_DIR (a private one unless set), so
    /metrics sums every worker and never counts a previous run."""
    directory = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
    if not directory:
        directory = tempfile.mkdtemp(prefix="profile-poke-metrics-")
        server.metrics_dir_owned = directory
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = directory
    for stale in Path(directory).glob("*.db"):
        stale.unlink()


def child_exit(server, worker):
    """Drop a dead worker's live-gauge files; its counters stay in the sums."""
    # Imported here, not at the top: prometheus_client picks its storage when first imported, and
    # the master must not import it before on_starting has set the directory the workers inherit.
    from prometheus_client import multiprocess

    multiprocess.mark_process_dead(worker.pid)


def on_exit(server):
    """Remove the metrics directory this master created."""
    owned = getattr(server, "metrics_dir_owned", None)
    if owned:
        shutil.rmtree(owned, ignore_errors=True)


def post_worker_init(worker):
    """Log at start-up each provider endpoint the configured mode needs and nothing names, with its
    setting (here rather than in create_app, so `flask users` commands and tests never wait on it)."""
    from app.health import check_endpoints_in_background

    check_endpoints_in_background(worker.wsgi)


def worker_exit(server, worker):
    """Send this worker's last spans before it goes (nothing to do with tracing off). Tracing itself is
    set up by create_app, which runs in each worker after the fork: the exporter thread is the worker's."""
    from app.tracing import stop_exporting

    stop_exporting()
