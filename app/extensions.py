"""The app's long-lived collaborators: one Redis client, the provider, token checks, the login client."""

from dataclasses import dataclass

import redis
from flask import current_app


@dataclass
class Services:
    store: "object"
    provider: "object"
    access_tokens: "object"
    login_client: "object"


def make_redis(url: str, *, socket_timeout: float):
    """A redis-py client for `url` whose every call gives up after `socket_timeout` seconds."""
    return redis.Redis.from_url(
        url,
        socket_timeout=socket_timeout,
        socket_connect_timeout=socket_timeout,
        health_check_interval=30,
    )


def services() -> Services:
    """The collaborators of the app handling the current request."""
    return current_app.extensions["profile_poke"]
