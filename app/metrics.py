"""Prometheus metrics: what the service counts, and GET /metrics behind METRICS_TOKEN.

Under gunicorn the values live in PROMETHEUS_MULTIPROC_DIR (gunicorn.conf.py sets it up), so one
scrape sums every worker. Labels are route templates, methods, statuses, endpoint names and
outcomes: never a username, a token or a raw path. Without METRICS_TOKEN nothing is counted and
/metrics does not exist (404).
"""

import glob
import hmac
import os
import time
from collections.abc import Callable
from contextlib import contextmanager, suppress

import redis
import requests
from authlib.integrations.base_client import OAuthError
from flask import Blueprint, Flask, Response, current_app, g, request
from prometheus_client import REGISTRY, CollectorRegistry, Counter, Histogram, generate_latest, multiprocess
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.exposition import CONTENT_TYPE_LATEST

MMAP_HEADER_BYTES = 8  # a worker's metrics file starts with its used length and padding

METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
NO_STORE = {"Cache-Control": "no-store"}
UNMATCHED = "unmatched"  # the route label of a request no URL rule matched (never its path)

# Its _count is the request count by route template, method and status: one metric, one write less.
DURATION = Histogram(
    "pp_http_request_duration_seconds",
    "HTTP requests and their duration by route template, method and status.",
    ["route", "method", "status"],
)
REFRESHES = Counter("pp_refreshes", "Browser-session token refreshes at the provider by outcome.", ["outcome"])
IDP_REQUESTS = Counter(
    "pp_idp_requests", "Calls to the identity provider by endpoint and outcome.", ["endpoint", "outcome"]
)
IDP_DURATION = Histogram(
    "pp_idp_request_duration_seconds", "Duration of identity-provider calls.", ["endpoint", "outcome"]
)
REDIS_ERRORS = Counter("pp_redis_errors", "Redis failures answered with 503, by exception class.", ["error"])
POKES = Counter("pp_pokes", "Poke attempts by outcome.", ["outcome"])
UNCONFIRMED_WRITES = Counter("pp_redis_unconfirmed_writes", "Writes no replica confirmed in time, by kind.", ["write"])
DPOP_REFUSALS = Counter("pp_dpop_refusals", "DPoP requests refused, by the check that failed.", ["reason"])
AUDIT_EVENTS = Counter(
    "pp_audit_events", "Audit events (see docs/operations.md) by event and reason.", ["event", "reason"]
)
REFRESH_OUTCOMES = {"ok": "refreshed", "refused": "rejected", "timeout": "failed", "error": "failed"}
# Why a DPoP request was refused, the one list of them: each check of app.tokens.dpop, and the guard's
# `downgrade` (a bound token sent as Bearer) and `unbound` (the DPoP scheme with a token bound to no key).
DPOP_REFUSAL_REASONS = (
    *("count", "malformed", "typ", "alg", "jwk", "signature", "htm", "htu", "iat", "jti", "ath", "jkt"),
    *("nonce", "replay", "downgrade", "unbound"),
)
# Every label value each counter knows of: all start at 0 when a process starts, so a series exists
# (and rate() sees it) before its first event.
KNOWN_LABELS = {
    REFRESHES: [(outcome,) for outcome in sorted(set(REFRESH_OUTCOMES.values()))],
    IDP_REQUESTS: [
        (endpoint, outcome)
        for endpoint in (
            *("discovery", "server_metadata", "jwks", "token", "par", "revocation", "introspection", "userinfo"),
        )
        for outcome in REFRESH_OUTCOMES
    ],
    REDIS_ERRORS: [("ConnectionError",), ("TimeoutError",), ("OutOfMemoryError",)],
    UNCONFIRMED_WRITES: [(write,) for write in ("session", "refresh", "poke")],
    POKES: [(outcome,) for outcome in ("poked", "invalid", "self", "unknown_target", "cooldown", "denied", "error")],
    DPOP_REFUSALS: [(reason,) for reason in DPOP_REFUSAL_REASONS],
}

bp = Blueprint("metrics", __name__)
_enabled = False
_series: dict[tuple, object] = {}  # (metric, labels) -> child: .labels() takes a lock on every call


def init_metrics(
    app: Flask, *, active_sessions: Callable[[], int], known: dict[Counter, list[tuple]] | None = None
) -> None:
    """Count requests and serve /metrics, when the app has a METRICS_TOKEN; `active_sessions` counts
    the live browser sessions at scrape time; `known` adds label sets a module above this one owns
    (the audit vocabulary), to start at 0 with KNOWN_LABELS'."""
    global _enabled
    if not app.config.get("METRICS_TOKEN"):
        return
    _enabled = True
    for metric, label_sets in {**KNOWN_LABELS, **(known or {})}.items():
        for labels in label_sets:
            _child(metric, *labels)  # at 0; in multiprocess mode this writes the worker's 0 to its file
    app.extensions["metrics_sessions"] = _SessionsRegistry(active_sessions)
    app.register_blueprint(bp)
    app.after_request(_count_request)


def _count_request(response):
    # The request and g once each: every use of Flask's proxies looks up the context again.
    current = request._get_current_object()
    started = g._get_current_object().get("started")  # set by app.logs before every request
    rule, method = current.url_rule, current.method
    labels = (
        rule.rule if rule is not None else UNMATCHED,
        method if method in METHODS else "other",
        response.status_code,
    )
    _child(DURATION, *labels).observe(time.perf_counter() - started if started is not None else 0.0)
    return response


def _child(metric, *labels):
    """`metric.labels(*labels)`, remembered (every label set is bounded: templates and outcomes)."""
    child = _series.get((metric, labels))
    if child is None:
        child = _series.setdefault((metric, labels), metric.labels(*labels))
    return child


@contextmanager
def provider_call(endpoint: str, *, refresh: bool = False):
    """Count and time the identity-provider call made inside the block (a refresh, when `refresh`);
    the outcome is read from how the block ends: ok, refused (an OAuth error), timeout or error."""
    if not _enabled:
        yield
        return
    started, outcome = time.perf_counter(), "error"
    try:
        yield
        outcome = "ok"
    except OAuthError:
        outcome = "refused"
        raise
    except requests.Timeout:
        outcome = "timeout"
        raise
    finally:
        _child(IDP_REQUESTS, endpoint, outcome).inc()
        _child(IDP_DURATION, endpoint, outcome).observe(time.perf_counter() - started)
        if refresh:
            _child(REFRESHES, REFRESH_OUTCOMES[outcome]).inc()


def count_redis_error(error: Exception) -> None:
    """One Redis failure that the service answered with 503."""
    if _enabled:
        _child(REDIS_ERRORS, type(error).__name__).inc()


def count_unconfirmed_write(write: str) -> None:
    """One write a failover must not lose (`session`, `refresh`, `poke`) that no replica confirmed in time."""
    if _enabled:
        _child(UNCONFIRMED_WRITES, write).inc()


def count_audit_event(event: str, reason: str) -> None:
    """One audit event (app.audit), by its name and reason (a fixed code, never a user's words)."""
    if _enabled:
        _child(AUDIT_EVENTS, event, reason).inc()


def count_dpop_refusal(reason: str) -> None:
    """One DPoP request refused; `reason` is one of DPOP_REFUSAL_REASONS."""
    if _enabled:
        _child(DPOP_REFUSALS, reason).inc()


class poke_observed:  # lower case: used like a function, `with poke_observed():`
    """Count the poke decided inside the block by its outcome (a class, not a generator: it runs on
    every poke, and this costs a third as much)."""

    def __enter__(self):
        return self

    def __exit__(self, kind, error, traceback) -> bool:
        if _enabled:
            _child(POKES, "poked" if error is None else _poke_outcome(error)).inc()
        return False


def _poke_outcome(error: Exception) -> str:
    # A PokeFailed names its outcome, and an ApiError (a disabled account) has a code. Read by attribute:
    # this module is below app.errors and imports nothing of the app's.
    return getattr(error, "outcome", None) or ("denied" if hasattr(error, "code") else "error")


@bp.get("/metrics")
def metrics():
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
