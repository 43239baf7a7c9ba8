"""The service's own scopes: the only ones the API enforces. Their names are configurable."""

from flask import current_app


def profile_scope() -> str:
    """The scope GET /me/profile needs (PROFILE_SCOPE)."""
    return current_app.config["PROFILE_SCOPE"]


def poke_scope() -> str:
    """The scope POST /pokes needs (POKE_SCOPE)."""
    return current_app.config["POKE_SCOPE"]
