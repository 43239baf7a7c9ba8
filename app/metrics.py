"""What the service counts for Prometheus: each series, the vocabulary of its labels, and the calls
that count, which do nothing until app.metrics_endpoint starts counting (only with a METRICS_TOKEN).

Labels are route templates, methods, statuses, endpoint names and outcomes: never a username, a token
or a raw path.
"""

import time
from contextlib import contextmanager

import requests
from authlib.integrations.base_client import OAuthError
from flask import g, request
from prometheus_client import Counter, Histogram

METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
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
# Why a DPoP request was refused, the one list of them: each check of app.tokens.dpop and dpop_jwt, and the guard's
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

_enabled = False
_series: dict[tuple, object] = {}  # (metric, labels) -> child: .labels() takes a lock on every call


def start_counting(known: dict[Counter, list[tuple]] | None = None) -> None:
    """Count from now on in this process, every label set of KNOWN_LABELS and `known` (those a module
    above this one owns, such as the audit vocabulary) at 0: a series exists before its first event."""
    global _enabled
    _enabled = True
    for metric, label_sets in {**KNOWN_LABELS, **(known or {})}.items():
        for labels in label_sets:
            _child(metric, *labels)  # at 0; in multiprocess mode this writes the worker's 0 to its file


def count_request(response):
    """Count and time the request `response` answers (an after_request hook)."""
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
