"""The three routes in plain Flask, as a team would write them in an afternoon: PyJWT on every
request, redis-py with hiredis, one Redis command per step. Served by gunicorn with the service's
settings: `gunicorn -c bench/peers/gunicorn_settings.py 'bench.peers.flask_peer:create_app()'`."""

import os

import redis
from flask import Flask, request

from .common import (
    COOLDOWN_SECONDS,
    PUBLIC_FIELDS,
    Refused,
    Settings,
    TokenChecker,
    cooldown_refusal,
    own_body,
    poke_target,
    public_body,
)

NO_STORE = {"Cache-Control": "no-store"}


def create_app(env=None) -> Flask:
    """The peer over the Redis and provider that `env` (default: the process environment) names."""
    settings = Settings.from_env(env if env is not None else os.environ)
    store = redis.Redis.from_url(settings.redis_url)
    tokens = TokenChecker(settings)
    app = Flask(__name__)

    @app.errorhandler(Refused)
    def refused(error: Refused):
        return error.body, error.status, NO_STORE

    def username_of(scope: str) -> str:
        sub = tokens.subject(request.headers.get("Authorization"), scope)
        username = store.get(settings.subject_key(sub))
        if username is None:
            raise Refused(403, {"error": {"code": "forbidden", "message": "this account has no profile"}})
        return username.decode()

    @app.get("/api/v1/users/<username>")
    def public_profile(username: str):
        body = public_body(store.hmget(settings.user_key(username.lower()), PUBLIC_FIELDS))
        if body is None:
            return "user not found", 404, {"Content-Type": "text/plain"}
        return body, 200, {"Cache-Control": "no-cache"}

    @app.get("/api/v1/me/profile")
    def own_profile():
        username = username_of(settings.profile_scope)
        return own_body(store.hgetall(settings.user_key(username))), 200, NO_STORE

    @app.post("/api/v1/pokes")
    def poke():
        poker = username_of(settings.poke_scope)
        target = poke_target(request.get_json(silent=True))
        if target == poker:
            raise Refused(400, {"success": False, "error": "cannot poke yourself"})
        if store.hget(settings.user_key(target), "disabled") in (None, b"1"):
            raise Refused(400, {"success": False, "error": f"user not found: {target}"})
        key = settings.cooldown_key(poker, target)
        if not store.set(key, "1", nx=True, ex=COOLDOWN_SECONDS):
            raise cooldown_refusal(store.ttl(key))
        return {"success": True}, 200, NO_STORE

    return app
