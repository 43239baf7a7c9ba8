"""The three routes in FastAPI, as a team would write them in an afternoon: async views, redis-py's
asyncio client with hiredis, PyJWT on every request. Served by uvicorn with 2 workers:
`uvicorn --factory bench.peers.fastapi_peer:create_app --workers 2`."""

import os

import redis.asyncio as redis
from fastapi import FastAPI, Header, Request
from fastapi.responses import JSONResponse, PlainTextResponse
from pydantic import BaseModel

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


class PokeRequest(BaseModel):
    username: str


def create_app(env=None) -> FastAPI:
    """The peer over the Redis and provider that `env` (default: the process environment) names."""
    settings = Settings.from_env(env if env is not None else os.environ)
    store = redis.Redis.from_url(settings.redis_url)
    tokens = TokenChecker(settings)
    app = FastAPI(openapi_url=None, docs_url=None, redoc_url=None)

    @app.exception_handler(Refused)
    async def refused(request: Request, error: Refused):
        return JSONResponse(error.body, error.status, NO_STORE)

    async def username_of(authorization: str | None, scope: str) -> str:
        sub = tokens.subject(authorization, scope)
        username = await store.get(settings.subject_key(sub))
        if username is None:
            raise Refused(403, {"error": {"code": "forbidden", "message": "this account has no profile"}})
        return username.decode()

    @app.get("/api/v1/users/{username}")
    async def public_profile(username: str):
        body = public_body(await store.hmget(settings.user_key(username.lower()), PUBLIC_FIELDS))
        if body is None:
            return PlainTextResponse("user not found", 404)
        return JSONResponse(body, headers={"Cache-Control": "no-cache"})

    @app.get("/api/v1/me/profile")
    async def own_profile(authorization: str | None = Header(default=None)):
        username = await username_of(authorization, settings.profile_scope)
        return JSONResponse(own_body(await store.hgetall(settings.user_key(username))), headers=NO_STORE)

    @app.post("/api/v1/pokes")
    async def poke(body: PokeRequest, authorization: str | None = Header(default=None)):
        poker = await username_of(authorization, settings.poke_scope)
        target = poke_target(body.model_dump())
        if target == poker:
            raise Refused(400, {"success": False, "error": "cannot poke yourself"})
        if await store.hget(settings.user_key(target), "disabled") in (None, b"1"):
            raise Refused(400, {"success": False, "error": f"user not found: {target}"})
        key = settings.cooldown_key(poker, target)
        if not await store.set(key, "1", nx=True, ex=COOLDOWN_SECONDS):
            raise cooldown_refusal(await store.ttl(key))
        return JSONResponse({"success": True}, headers=NO_STORE)

    return app
