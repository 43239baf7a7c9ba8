"""Poking: reading the request body, and the rules that decide whether a poke happens."""

import json

from flask import request
from werkzeug.exceptions import RequestEntityTooLarge

from ..errors import PokeFailed
from ..store import Store
from ..store.pokes import PokeResult
from ..store.profile_record import normalize_username
from .guard import require_enabled
from .schemas import poke_target

MAX_BODY_BYTES = 4096


def read_poke_target() -> str:
    """The target named by the request's JSON body; PokeFailed (400/413/415) when the body is wrong."""
    if request.mimetype != "application/json":
        raise PokeFailed("Content-Type must be application/json", status=415)
    if (request.content_length or 0) > MAX_BODY_BYTES:
        raise PokeFailed("request body is too large", status=413)
    try:
        raw = request.get_data(cache=False)
    except RequestEntityTooLarge:
        raise PokeFailed("request body is too large", status=413) from None
    if len(raw) > MAX_BODY_BYTES:
        raise PokeFailed("request body is too large", status=413)
    try:
        body = json.loads(raw)
    except (ValueError, RecursionError):
        raise PokeFailed("request body is not valid JSON") from None
    try:
        return poke_target(body)
    except ValueError as error:
        raise PokeFailed(str(error)) from None


def poke(store: Store, *, poker: str) -> None:
    """Poke the user the request body names on behalf of `poker`, or raise saying why not.

    The poker's account is read in the same round trip as the poke is decided; every refusal still
    follows the contract's order (app.api.guard.Guard.authorize: a disabled account hears 403 before
    anything about its body), so a poke decided for a disabled poker is withdrawn."""
    try:
        target = read_poke_target()
        username = normalize_username(target)
        if username == poker:
            raise PokeFailed("cannot poke yourself", outcome="self")
        if username is None:
            raise PokeFailed(f"user not found: {target}", outcome="unknown_target")
    except PokeFailed:
        require_enabled(store.profiles.get(poker))  # refused without Redis: the account check comes first
        raise
    profile, outcome = store.pokes.try_poke(poker, username)
    if profile is None or profile.disabled:
        if outcome.result is PokeResult.POKED:
            store.pokes.withdraw(poker, username)
        require_enabled(profile)
    if outcome.result is PokeResult.UNKNOWN_TARGET:
        raise PokeFailed(f"user not found: {target}", outcome="unknown_target")
    if outcome.result is PokeResult.ON_COOLDOWN:
        left = outcome.seconds_left
        raise PokeFailed(f"poke on cooldown ({format_duration(left)} remaining)", retry_after=left, outcome="cooldown")


def format_duration(seconds: int) -> str:
    """`seconds` as hours, minutes and seconds, every unit always present: 0h5m3s."""
    hours, rest = divmod(seconds, 3600)
    minutes, seconds = divmod(rest, 60)
    return f"{hours}h{minutes}m{seconds}s"
