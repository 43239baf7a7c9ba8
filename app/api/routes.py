"""The /api/v1 routes: thin views over the guard, the store and the poke rules."""

from functools import wraps

from flask import Blueprint, current_app, g, jsonify

from ..errors import UnknownUser
from ..extensions import services
from ..metrics import poke_observed
from ..openapi import openapi_document
from ..prefixes import API_PREFIX
from ..store.profile_record import normalize_username
from ..tokens.dpop import dpop_challenge
from .bodies import own_profile_body, public_profile_body
from .pokes import poke
from .scopes import declare_scope, declared_scope
from .step_up import needs_step_up, step_up_required

bp = Blueprint("api", __name__, url_prefix=API_PREFIX)

PRIVATE = {"Cache-Control": "no-store"}


def for_user_with_scope(setting: str):
    """The view serves a user whose credential carries the scope the setting `setting` names (and, for
    a view marked `@step_up_required` below it, whose sign-in meets the step-up policy); it is called
    with the app's services and the Caller. The OpenAPI document reads the same declarations."""

    def decorate(view):
        @wraps(view)
        def guarded(**kwargs):
            wired = services()  # once per request: the view gets them from here
            caller = wired.guard.authorize(declared_scope(guarded))
            if needs_step_up(guarded):
                wired.guard.stepped_up(caller)
            return view(wired, caller, **kwargs)

        return declare_scope(guarded, setting)

    return decorate


@bp.after_request
def challenge_dpop_clients(response):
    """With DPOP on, every 401 names the DPoP scheme too (RFC 9449 7.1), after the Bearer challenge."""
    if response.status_code == 401 and current_app.config["DPOP"]:
        response.headers.add("WWW-Authenticate", dpop_challenge(g.get("dpop_failure")))
    return response


@bp.get("/users/<path:username>")
def public_profile(username: str):
    """Anyone's public profile, to anyone (a sent token must be valid); 404 for no such enabled user."""
    wired = services()
    wired.guard.optional_principal()
    normalized = normalize_username(username)
    profile = wired.store.profiles.get_public(normalized) if normalized else None
    if profile is None or profile.disabled:
        raise UnknownUser(username)
    return public_profile_body(profile), 200, {"Cache-Control": "no-cache"}


@bp.get("/me/profile")
@for_user_with_scope("PROFILE_SCOPE")
def own_profile(wired, caller):
    """The caller's own profile, private stats included, when the account is enabled."""
    profile = wired.guard.enabled_profile(caller)
    return own_profile_body(profile), 200, PRIVATE


@bp.post("/pokes")
@for_user_with_scope("POKE_SCOPE")
@step_up_required
def create_poke(wired, caller):
    """The caller pokes the user the body names, at most once per target per cooldown."""
    with poke_observed():
        poke(wired.store, poker=caller.username)
    return {"success": True}, 200, PRIVATE


@bp.get("/openapi.json")
def openapi():
    """The OpenAPI 3.1 document of /api/v1 and /auth, for this app's settings."""
    return jsonify(openapi_document(current_app.view_functions))
