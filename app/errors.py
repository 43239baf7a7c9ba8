"""Exceptions of the domain, and the one place that turns each into the contract's body and headers."""

import logging
import time
from collections.abc import Callable
from functools import partial

import redis
from flask import Flask, current_app, jsonify, render_template, request
from flask_limiter import RateLimitExceeded
from werkzeug.exceptions import HTTPException

from .prefixes import API_PREFIX, AUTH_PREFIX

USERS_PREFIX = f"{API_PREFIX}/users/"
REALM = "profile-poke"
RETRY_AFTER_UNAVAILABLE = "5"
SESSION_ENDED = "the session has ended; sign in again"

log = logging.getLogger(__name__)


class ApiError(Exception):
    """An error answered with the JSON envelope `{"error": {"code", "message"}}`."""

    status = 500
    code = "internal_error"

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message

    def headers(self) -> dict[str, str]:
        return {}


class _BearerError(ApiError):
    """A 401 or 403, which always carries `WWW-Authenticate: Bearer` (RFC 6750 section 3)."""

    def challenge(self) -> str:
        return f'Bearer realm="{REALM}"'

    def headers(self) -> dict[str, str]:
        return {"WWW-Authenticate": self.challenge()}


class Unauthorized(_BearerError):
    """No credentials on a route that needs them: the challenge has no error attribute."""

    status, code = 401, "unauthorized"


class InvalidToken(_BearerError):
    status, code = 401, "invalid_token"

    def challenge(self) -> str:
        return f'Bearer realm="{REALM}", error="invalid_token", error_description="{self.message}"'


class InsufficientScope(_BearerError):
    status, code = 403, "insufficient_scope"

    def __init__(self, scope: str):
        super().__init__(f"scope {scope} required")
        self.scope = scope

    def challenge(self) -> str:
        return f'Bearer realm="{REALM}", error="insufficient_scope", scope="{self.scope}"'


class SessionEnded(Unauthorized):
    """The browser session behind a cookie is gone (ended, expired, or its tokens refused)."""

    def __init__(self):
        super().__init__(SESSION_ENDED)


class Forbidden(_BearerError):
    """Valid credentials that may not do this: an application token, a disabled account, no CSRF header."""

    status, code = 403, "forbidden"

    def challenge(self) -> str:
        return f'Bearer realm="{REALM}", error_description="{self.message}"'


class Unavailable(ApiError):
    status, code = 503, "unavailable"

    def headers(self) -> dict[str, str]:
        return {"Retry-After": RETRY_AFTER_UNAVAILABLE}


class NotFound(ApiError):
    status, code = 404, "not_found"


class BadLogoutToken(Exception):
    """A back-channel logout token that is refused: 400 `{"error": "invalid_request", ...}`."""


class ProviderUnavailable(Exception):
    """The identity provider could not be reached or answered nonsense."""


class UnknownUser(Exception):
    """GET /users/{username} for a user that does not exist: the contract's plain-text 404."""


class PokeFailed(Exception):
    """A refused poke, answered with the contract's `{"success": false, "error": ...}` body."""

    status = 400

    def __init__(self, message: str, status: int = 400, retry_after: int | None = None, outcome: str = "invalid"):
        super().__init__(message)
        self.message, self.status, self.retry_after = message, status, retry_after
        self.outcome = outcome  # what the metrics count it as: invalid, self, unknown_target or cooldown


class LoginFailed(Exception):
    """A browser sign-in step that cannot go on; shown as a page, or JSON to a fetch."""

    def __init__(self, message: str, status: int = 400, code: str = "login_failed"):
        super().__init__(message)
        self.message, self.status, self.code = message, status, code


def _envelope(status: int, code: str, message: str, headers=None):
    return jsonify(error={"code": code, "message": message}), status, headers or {}


def _wants_page() -> bool:
    return request.method == "GET" and request.path in {f"{AUTH_PREFIX}/login", f"{AUTH_PREFIX}/callback"}


def handle_api_error(error: ApiError):
    return _envelope(error.status, error.code, error.message, error.headers())


def handle_bad_logout_token(error: BadLogoutToken):
    # Back-Channel Logout 1.0 section 2.8: an OAuth-style error body, not the API envelope.
    return jsonify(error="invalid_request", error_description=str(error)), 400, {"Cache-Control": "no-store"}


def handle_unknown_user(error: UnknownUser):
    return "user not found\n", 404, {"Content-Type": "text/plain; charset=utf-8"}


def handle_poke_failed(error: PokeFailed):
    headers = {"Retry-After": str(error.retry_after)} if error.retry_after else {}
    return jsonify(success=False, error=error.message), error.status, headers


def handle_login_failed(error: LoginFailed):
    if _wants_page():
        return render_template("auth_error.html", message=error.message), error.status
    return _envelope(error.status, error.code, error.message)


REDIS_DOWN = (
    redis.ConnectionError,
    redis.TimeoutError,
    redis.exceptions.ClusterError,
    redis.exceptions.RedisClusterException,
)


def is_out_of_memory(error: BaseException) -> bool:
    """Redis refusing a write under `maxmemory` (`-OOM`, also when it comes back from a script)."""
    return isinstance(error, redis.exceptions.OutOfMemoryError) or (
        isinstance(error, redis.ResponseError) and "command not allowed when used memory" in str(error)
    )


def handle_redis_down(error: Exception, *, count: Callable[[Exception], None]):
    count(error)
    log.warning("redis unavailable: %s", type(error).__name__)
    return _unavailable("the service's storage is unavailable")


def handle_redis_refusal(error: redis.ResponseError, *, count: Callable[[Exception], None]):
    if is_out_of_memory(error):
        count(error)
        log.warning("redis refused a write: out of memory")
        return _unavailable("the service's storage is full; try again later")
    return handle_unexpected(error)


def handle_rate_limited(error: RateLimitExceeded):
    message = "too many requests from this address; try again later"
    breached = current_app.extensions["rate_limiter"].current_limit
    headers = {"Retry-After": str(max(1, int(breached.reset_at - time.time())) if breached else 60)}
    if _wants_page():
        return render_template("auth_error.html", message=message), 429, headers
    return _envelope(429, "too_many_requests", message, headers)


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
    if is_out_of_memory(getattr(error, "original_exception", None)):
        return handle_redis_refusal(error.original_exception, count=count)
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
