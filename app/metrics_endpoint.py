"""GET /metrics behind METRICS_TOKEN, and counting switched on with it: without the token nothing is
counted and /metrics does not exist (404). Under gunicorn the values live in PROMETHEUS_MULTIPROC_DIR
(gunicorn.conf.py sets it up), so one scrape sums every worker's file.
"""

import glob
import hmac
import os
from collections.abc import Callable
from contextlib import suppress

import redis
from flask import Blueprint, Flask, Response, current_app, request
from prometheus_client import REGISTRY, CollectorRegistry, Counter, generate_latest, multiprocess
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from .metrics import count_redis_error, count_request, start_counting

MMAP_HEADER_BYTES = 8  # a worker's metrics file starts with its used length and padding
NO_STORE = {"Cache-Control": "no-store"}

bp = Blueprint("metrics", __name__)


def init_metrics(
    app: Flask, *, active_sessions: Callable[[], int], known: dict[Counter, list[tuple]] | None = None
) -> None:
    """Count requests and serve /metrics, when the app has a METRICS_TOKEN; `active_sessions` counts
    the live browser sessions at scrape time; `known` adds label sets a module above app.metrics owns
    (the audit vocabulary), to start at 0 with its KNOWN_LABELS."""
    if not app.config.get("METRICS_TOKEN"):
        return
    start_counting(known)
    app.extensions["metrics_sessions"] = _SessionsRegistry(active_sessions)
    app.register_blueprint(bp)
    app.after_request(count_request)


@bp.get("/metrics")
def metrics():
    """The metrics of every worker and the active-session count, to a caller with the METRICS_TOKEN."""
    expected = f"Bearer {current_app.config['METRICS_TOKEN']}".encode()
    if not hmac.compare_digest(request.headers.get("Authorization", "").encode(), expected):
        return Response(
            "unauthorized\n", 401, {**NO_STORE, "WWW-Authenticate": 'Bearer realm="metrics"'}, content_type="text/plain"
        )
    body = generate_latest(_registry()) + generate_latest(current_app.extensions["metrics_sessions"])
    return Response(body, 200, NO_STORE, content_type=CONTENT_TYPE_LATEST)


def _registry():
    if "PROMETHEUS_MULTIPROC_DIR" not in os.environ:
        return REGISTRY
    registry = CollectorRegistry()
    _WrittenFilesCollector(registry)  # sums the files every worker wrote
    return registry


class _WrittenFilesCollector(multiprocess.MultiProcessCollector):
    """The multiprocess sum, skipping a worker's file that is still being created: prometheus_client
    makes it before sizing it, and reading it empty fails the whole scrape (client_python #1199)."""

    def collect(self):
        files = []
        for path in glob.glob(os.path.join(self._path, "*.db")):
            with suppress(OSError):  # also gone: a dead worker's file removed meanwhile
                if os.path.getsize(path) >= MMAP_HEADER_BYTES:
                    files.append(path)
        return self.merge(files, accumulate=True)


class _SessionsRegistry:
    """The active-session gauge, read from Redis at scrape time (one cheap round trip)."""

    def __init__(self, active_sessions: Callable[[], int]):
        self._active_sessions = active_sessions

    def collect(self):
        try:
            active = self._active_sessions()
        except redis.RedisError as error:
            count_redis_error(error)
            return
        gauge = GaugeMetricFamily("pp_active_sessions", "Browser sessions alive now (from Redis).")
        gauge.add_metric([], active)
        yield gauge
