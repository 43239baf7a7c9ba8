"""The service's own scopes, the only ones the API enforces. Each protected view declares once which
setting names its scope (PROFILE_SCOPE, POKE_SCOPE); the guard and the OpenAPI document both read it."""

from flask import current_app

SCOPE_SETTING = "scope_setting"  # the attribute a protected view carries


def declare_scope(view, setting: str):
    """Mark `view` as needing the scope that the configuration value `setting` names."""
    setattr(view, SCOPE_SETTING, setting)
    return view


def declared_scope(view) -> str | None:
    """The scope `view` needs under this app's configuration, None for a public view."""
    setting = getattr(view, SCOPE_SETTING, None)
    return current_app.config[setting] if setting else None
