"""The one place that turns each exception of app.errors into the contract's body and headers."""

import json
import logging
import sys
import time
from collections.abc import Callable
from functools import partial

import redis
from flask import Flask, current_app, jsonify, render_template, request
from flask_limiter import RateLimitExceeded
from werkzeug.exceptions import HTTPException

from .addresses import NETWORK_SCOPE
from .audit import audit
from .errors import (
    RETRY_AFTER_UNAVAILABLE,
    ApiError,
    BadLogoutToken,
    LoginFailed,
    PokeFailed,
    ProviderUnavailable,
    TokenChecksExhausted,
    TooManyDpopProofs,
    TooManyTokenChecks,
    Unavailable,
    UnknownUser,
)
from .prefixes import API_PREFIX, AUTH_PREFIX
from .redis_failures import REDIS_DOWN, is_failover_refusal, is_out_of_memory

USERS_PREFIX = f"{API_PREFIX}/users/"
LAST_RESORT_BODY = json.dumps({"error": {"code": "internal_error", "message": "something went wrong"}}).encode()

log = logging.getLogger(__name__)


def _envelope(status: int, code: str, message: str, headers=None, members=None):
    return jsonify(error={"code": code, "message": message, **(members or {})}), status, headers or {}


def _wants_page() -> bool:
    return request.method == "GET" and request.path in {f"{AUTH_PREFIX}/login", f"{AUTH_PREFIX}/callback"}


def handle_api_error(error: ApiError):
    if _wants_page():
        return render_template("auth_error.html", message=error.message), error.status, error.headers()
    return _envelope(error.status, error.code, error.message, error.headers(), error.members())


def handle_bad_logout_token(error: BadLogoutToken):
    audit("backchannel.refused", reason=error.reason, sub=error.sub)
    # Back-Channel Logout 1.0 section 2.8: an OAuth-style error body, not the API envelope.
    return jsonify(error="invalid_request", error_description=str(error)), 400, {"Cache-Control": "no-store"}


def handle_unknown_user(error: UnknownUser):
    return "user not found\n", 404, {"Content-Type": "text/plain; charset=utf-8"}


def handle_poke_failed(error: PokeFailed):
    headers = {"Retry-After": str(error.retry_after)} if error.retry_after else {}
    return jsonify(success=False, error=error.message), error.status, headers


def handle_login_failed(error: LoginFailed):
    audit("signin.failed", reason=error.reason, sub=error.sub, user=error.user)
    if _wants_page():
        return render_template("auth_error.html", message=error.message), error.status
    return _envelope(error.status, error.code, error.message)


def handle_redis_down(error: Exception, *, count: Callable[[Exception], None]):
    count(error)
    log.warning("redis unavailable: %s", type(error).__name__)
    return _unavailable("the service's storage is unavailable")


def handle_redis_refusal(error: redis.ResponseError, *, count: Callable[[Exception], None]):
    if is_failover_refusal(error):
        return handle_redis_down(error, count=count)
    if is_out_of_memory(error):
        count(error)
        log.warning("redis refused a write: out of memory")
        return _unavailable("the service's storage is full; try again later")
    return handle_unexpected(error)


def handle_rate_limited(error: RateLimitExceeded):
    view = (request.endpoint or "unknown").rpartition(".")[2]
    by_network = error.limit.scope == NETWORK_SCOPE
    audit("ratelimit.hit", reason=f"{view}_network" if by_network else view, route=_route())
    message = f"too many requests from this {'network' if by_network else 'address'}; try again later"
    breached = current_app.extensions["rate_limiter"].current_limit
    headers = {"Retry-After": str(max(1, int(breached.reset_at - time.time())) if breached else 60)}
    if _wants_page():
        return render_template("auth_error.html", message=message), 429, headers
    return _envelope(429, "too_many_requests", message, headers)


# The bounds beyond Flask-Limiter's: provider calls about unknown tokens, per client (429) and in
# total (503), and DPoP proofs per key (429).
BOUNDS = {
    TooManyTokenChecks: "token_checks",
    TokenChecksExhausted: "token_checks_total",
    TooManyDpopProofs: "dpop_proofs",
}


def handle_bound_reached(error: ApiError):
    audit("ratelimit.hit", reason=BOUNDS[type(error)], route=_route())
    return handle_api_error(error)


def _route() -> str | None:
    return request.url_rule.rule if request.url_rule is not None else None


def handle_provider_down(error: ProviderUnavailable):
    log.warning("identity provider unavailable: %s", error)
    return _unavailable("the identity provider is unavailable")


def _unavailable(message: str):
    if _wants_page():
        return render_template("auth_error.html", message=message), 503, {"Retry-After": RETRY_AFTER_UNAVAILABLE}
    return handle_api_error(Unavailable(message))


def handle_http_error(error: HTTPException, *, count: Callable[[Exception], None]):
    # A failure while Flask-Session opens or saves a session arrives wrapped in a 500.
    if isinstance(getattr(error, "original_exception", None), REDIS_DOWN):
        return handle_redis_down(error.original_exception, count=count)
    original = getattr(error, "original_exception", None)
    if is_out_of_memory(original) or is_failover_refusal(original):
        return handle_redis_refusal(original, count=count)
    if not request.path.startswith((API_PREFIX, AUTH_PREFIX)):
        return error
    if error.code == 404 and request.path.startswith(USERS_PREFIX) and request.method in {"GET", "HEAD"}:
        # A name the router cannot even match (a newline, say) is still just an unknown user.
        return handle_unknown_user(UnknownUser(request.path))
    code = (error.name or "error").lower().replace(" ", "_")
    headers = {"Allow": ", ".join(error.valid_methods)} if getattr(error, "valid_methods", None) else {}
    return _envelope(error.code or 500, code, error.description or error.name, headers)


def handle_unexpected(error: Exception):
    log.exception("unexpected failure")
    if _wants_page():
        return render_template("auth_error.html", message="something went wrong"), 500
    return _envelope(500, "internal_error", "something went wrong")


def register_error_handlers(app: Flask, *, count_redis_error: Callable[[Exception], None]) -> None:
    """Every exception to its response; `count_redis_error` hears of each Redis failure answered 503."""
    app.register_error_handler(ApiError, handle_api_error)
    for bound in BOUNDS:
        app.register_error_handler(bound, handle_bound_reached)
    app.register_error_handler(UnknownUser, handle_unknown_user)
    app.register_error_handler(BadLogoutToken, handle_bad_logout_token)
    app.register_error_handler(PokeFailed, handle_poke_failed)
    app.register_error_handler(LoginFailed, handle_login_failed)
    for exception in REDIS_DOWN:
        app.register_error_handler(exception, partial(handle_redis_down, count=count_redis_error))
    app.register_error_handler(redis.ResponseError, partial(handle_redis_refusal, count=count_redis_error))
    app.register_error_handler(ProviderUnavailable, handle_provider_down)
    app.register_error_handler(RateLimitExceeded, handle_rate_limited)
    app.register_error_handler(HTTPException, partial(handle_http_error, count=count_redis_error))
    app.register_error_handler(Exception, handle_unexpected)


class AnswerEveryRequest:
    """The outermost WSGI layer: what escapes every other one (a failing teardown, a middleware) is logged
    with the method and path and answered 500, so that the server never logs the request line (its query
    may hold a code or `state`) and the worker thread goes on serving."""

    def __init__(self, wsgi_app):
        self.wsgi_app = wsgi_app

    def __call__(self, environ, start_response):
        started = []

        def start(status, headers, exc_info=None):
            started.append(status)
            return start_response(status, headers) if exc_info is None else start_response(status, headers, exc_info)

        try:
            return self.wsgi_app(environ, start)
        except Exception:
            log.exception(
                "unexpected failure outside the app: %s %s", environ.get("REQUEST_METHOD"), environ.get("PATH_INFO")
            )
            headers = [
                ("Content-Type", "application/json"),
                ("Content-Length", str(len(LAST_RESORT_BODY))),
                ("Cache-Control", "no-store"),
            ]
            # PEP 3333: replacing a status already given (not yet sent) takes the exception along.
            start_response("500 INTERNAL SERVER ERROR", headers, *([sys.exc_info()] if started else []))
            return [LAST_RESORT_BODY]
