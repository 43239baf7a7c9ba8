"""Process and readiness probes for the platform: /healthz (the process answers) and /readyz
(Redis answers and the identity provider's discovery is cached or reachable)."""

from flask import Blueprint

from .errors import REDIS_DOWN, ProviderUnavailable
from .extensions import services

bp = Blueprint("health", __name__)
NO_STORE = {"Cache-Control": "no-store"}


@bp.get("/healthz")
def healthz():
    return {"status": "ok"}, 200, NO_STORE


@bp.get("/readyz")
def readyz():
    checks = {"redis": _check_redis(), "identity_provider": _check_provider()}
    ready = all(state == "ok" for state in checks.values())
    return {"status": "ready" if ready else "not ready", **checks}, 200 if ready else 503, NO_STORE


def _check_redis() -> str:
    try:
        services().store.redis.ping()
    except REDIS_DOWN:
        return "unavailable"
    return "ok"


def _check_provider() -> str:
    try:
        services().provider.metadata()
    except ProviderUnavailable:
        return "unavailable"
    return "ok"
