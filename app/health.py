"""Process and readiness probes for the platform: /healthz (the process answers) and /readyz
(Redis answers, the identity provider's discovery is cached or reachable, and every endpoint the
configured mode needs is found); and the same endpoint check, logged once at start-up."""

import logging
import threading

from flask import Blueprint, Flask

from .errors import ProviderUnavailable
from .extensions import services
from .redis_failures import REDIS_DOWN

bp = Blueprint("health", __name__)
NO_STORE = {"Cache-Control": "no-store"}

log = logging.getLogger(__name__)


@bp.get("/healthz")
def healthz():
    """The process answers: 200 whatever Redis and the provider do."""
    return {"status": "ok"}, 200, NO_STORE


@bp.get("/readyz")
def readyz():
    """Ready for traffic: 200 when Redis, the provider and every endpoint the mode needs answer, else 503."""
    checks = {"redis": _check_redis(), "identity_provider": _check_provider()}
    ready = all(state == "ok" for state in checks.values())
    return {"status": "ready" if ready else "not ready", **checks}, 200 if ready else 503, NO_STORE


def check_endpoints_in_background(app: Flask) -> threading.Thread:
    """Reads the provider's documents off the start-up path (a slow provider must not hold a worker's
    boot) and logs an error naming the setting of each endpoint the mode needs and nothing names;
    an optional one missing (revocation) is logged as a warning by the provider itself."""

    def check():
        with app.app_context():
            provider = services().provider
            try:
                missing = provider.unresolved()
                provider.endpoint("revocation_endpoint")
            except ProviderUnavailable as error:
                log.warning("identity provider endpoints not checked at start-up: %s", error)
                return
            for error in missing:
                log.error("misconfigured: %s", error.message)

    thread = threading.Thread(target=check, name="endpoint-check", daemon=True)
    thread.start()
    return thread


def _check_redis() -> str:
    try:
        services().store.redis.ping()
    except REDIS_DOWN:
        return "unavailable"
    return "ok"


def _check_provider() -> str:
    provider = services().provider
    try:
        provider.metadata()
        missing = provider.unresolved()
    except ProviderUnavailable:
        return "unavailable"
    return "; ".join(error.message for error in missing) or "ok"
