"""The /api/v1 routes: thin views over the guard, the store and the poke rules."""

from flask import Blueprint, jsonify

from ..errors import UnknownUser
from ..extensions import services
from ..metrics import poke_observed
from ..prefixes import API_PREFIX
from ..store.profiles import normalize_username
from .guard import current_user, current_username, optional_principal
from .openapi import openapi_document
from .pokes import poke
from .schemas import OwnProfileEnvelopeSchema, PublicProfileSchema
from .scopes import poke_scope, profile_scope

bp = Blueprint("api", __name__, url_prefix=API_PREFIX)

PRIVATE = {"Cache-Control": "no-store"}
# Schema instances are built once: building one per request costs more than the Redis round trip.
PUBLIC_PROFILE = PublicProfileSchema()
OWN_PROFILE = OwnProfileEnvelopeSchema()


@bp.get("/users/<path:username>")
def public_profile(username: str):
    optional_principal()
    normalized = normalize_username(username)
    profile = services().store.profiles.get_public(normalized) if normalized else None
    if profile is None or profile.disabled:
        raise UnknownUser(username)
    return PUBLIC_PROFILE.dump(profile), 200, {"Cache-Control": "no-cache"}


@bp.get("/me/profile")
def own_profile():
    profile = current_user(profile_scope())
    return OWN_PROFILE.dump({"data": profile}), 200, PRIVATE


@bp.post("/pokes")
def create_poke():
    poker = current_username(poke_scope())
    with poke_observed():
        poke(poker=poker)
    return {"success": True}, 200, PRIVATE


@bp.get("/openapi.json")
def openapi():
    return jsonify(openapi_document())
