"""The environment of an app under test, and the names tests must use as the app does: the session
cookie and the CSRF header, read from the app's own configuration and constant."""

import secrets

from app.security import CSRF_HEADER
from config import Config


def app_env(issuer: str, **overrides) -> dict:
    """The environment of an app instance under test."""
    env = {
        "OIDC_ISSUER_URL": issuer,
        "OIDC_CLIENT_ID": "profile-poke-web",
        "OIDC_REDIRECT_URI": "http://127.0.0.1:8000/auth/callback",
        "SECRET_KEY": secrets.token_urlsafe(32),
        "SESSION_COOKIE_SECURE": "false",
        "REDIS_KEY_PREFIX": f"test-{secrets.token_hex(4)}:",
        "LOG_LEVEL": "WARNING",
        # Many tests sign in from 127.0.0.1 within a minute; the limits have tests of their own.
        "RATE_LIMIT_LOGIN": "10000 per minute",
        "RATE_LIMIT_EXCHANGE": "10000 per minute",
        "RATE_LIMIT_LOGIN_NETWORK": "10000 per minute",
        "RATE_LIMIT_EXCHANGE_NETWORK": "10000 per minute",
    }
    env.update({name: str(value) for name, value in overrides.items()})
    return env


def session_cookie_name(*, secure: bool = False) -> str:
    """The session cookie's name as the app configures it, over plain HTTP (tests) or HTTPS."""
    env = app_env("http://issuer.invalid", SESSION_COOKIE_SECURE=str(secure).lower())
    return Config(env).SESSION_COOKIE_NAME


SESSION_COOKIE = session_cookie_name()
CSRF = {CSRF_HEADER: "1"}
