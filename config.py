"""Settings, read once from the environment. Names of the variables are part of the interface."""

import os
from collections.abc import Mapping
from urllib.parse import urlsplit

from limits import parse_many

DEFAULT_SCOPES = "openid svc:profile.private svc:interact.poke"


class ConfigError(RuntimeError):
    """A setting is missing or malformed; the message names the variable."""


def _flag(value: str, name: str) -> bool:
    lowered = value.strip().lower()
    if lowered in {"1", "true", "yes", "on"}:
        return True
    if lowered in {"0", "false", "no", "off"}:
        return False
    raise ConfigError(f"{name} must be true or false, not {value!r}")


def _number(value: str, name: str, kind=int):
    try:
        number = kind(value)
    except ValueError:
        raise ConfigError(f"{name} must be a number, not {value!r}") from None
    if number < 0:
        raise ConfigError(f"{name} must not be negative")
    return number


def _rate_limit(value: str, name: str) -> str:
    try:
        parse_many(value)
    except ValueError:
        raise ConfigError(f"{name} must be a rate limit such as '20 per minute', not {value!r}") from None
    return value


def _base_url(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}/"


class Config:
    """Every setting of the service, from `env` (the process environment by default)."""

    def __init__(self, env: Mapping[str, str] | None = None):
        env = os.environ if env is None else env
        self._env = env

        # Identity provider and login client
        self.OIDC_ISSUER_URL = self._required("OIDC_ISSUER_URL").rstrip("/")
        self.OIDC_CLIENT_ID = self._required("OIDC_CLIENT_ID")
        self.OIDC_REDIRECT_URI = self._required("OIDC_REDIRECT_URI")
        self.BASE_URL = _base_url(self.OIDC_REDIRECT_URI)
        self.OIDC_POST_LOGOUT_REDIRECT_URI = env.get("OIDC_POST_LOGOUT_REDIRECT_URI") or self.BASE_URL
        self.OIDC_SCOPES = env.get("OIDC_SCOPES") or DEFAULT_SCOPES
        self.EXCHANGE_REDIRECT_URIS = self._list("EXCHANGE_REDIRECT_URIS") or [self.BASE_URL]
        self.IDP_TIMEOUT = self._number("IDP_TIMEOUT", "5", float)
        self.DISCOVERY_TTL = self._number("DISCOVERY_TTL", "3600")
        self.JWKS_REFETCH_INTERVAL = self._number("JWKS_REFETCH_INTERVAL", "30", float)

        # Access tokens the API accepts
        self.API_AUDIENCE = env.get("API_AUDIENCE") or "profile-poke-api"
        self.LOGIN_CLIENT_IDS = self._list("LOGIN_CLIENT_IDS") or [self.OIDC_CLIENT_ID]
        self.TOKEN_LEEWAY = min(self._number("TOKEN_LEEWAY", "60"), 60)

        # Browser sessions
        self.SECRET_KEY = self._required("SECRET_KEY")
        if len(self.SECRET_KEY) < 32:
            raise ConfigError("SECRET_KEY must be at least 32 characters of random text")
        self.SECRET_KEY_FALLBACKS = self._list("SECRET_KEY_FALLBACKS")
        self.SESSION_COOKIE_SECURE = _flag(env.get("SESSION_COOKIE_SECURE", "true"), "SESSION_COOKIE_SECURE")
        self.SESSION_COOKIE_NAME = "__Host-session" if self.SESSION_COOKIE_SECURE else "pp_session"
        self.LOGIN_COOKIE_NAME = "__Host-login" if self.SESSION_COOKIE_SECURE else "pp_login"
        self.SESSION_COOKIE_HTTPONLY = True
        self.SESSION_COOKIE_SAMESITE = "Lax"
        self.SESSION_IDLE_TIMEOUT = self._number("SESSION_IDLE_TIMEOUT", "1800")
        self.SESSION_MAX_AGE = self._number("SESSION_MAX_AGE", "28800")
        self.LOGIN_STATE_TTL = min(self._number("LOGIN_STATE_TTL", "600"), 600)
        self.RATE_LIMIT_LOGIN = _rate_limit(env.get("RATE_LIMIT_LOGIN") or "30 per minute", "RATE_LIMIT_LOGIN")
        self.RATE_LIMIT_EXCHANGE = _rate_limit(env.get("RATE_LIMIT_EXCHANGE") or "10 per minute", "RATE_LIMIT_EXCHANGE")

        # Redis
        self.REDIS_URL = env.get("REDIS_URL") or "redis://localhost:6379/0"
        self.REDIS_KEY_PREFIX = env.get("REDIS_KEY_PREFIX", "pp:")
        self.REDIS_SOCKET_TIMEOUT = self._number("REDIS_SOCKET_TIMEOUT", "1", float)
        self.REDIS_TLS_VERIFY = _flag(env.get("REDIS_TLS_VERIFY", "true"), "REDIS_TLS_VERIFY")

        # Process
        self.PROXY_HOPS = self._number("PROXY_HOPS", "0")
        self.MAX_CONTENT_LENGTH = self._number("MAX_CONTENT_LENGTH", "65536")
        self.LOG_LEVEL = env.get("LOG_LEVEL", "INFO").upper()
        self.METRICS_TOKEN = env.get("METRICS_TOKEN") or None

    def _required(self, name: str) -> str:
        value = self._env.get(name, "").strip()
        if not value:
            raise ConfigError(f"{name} is required; see .env.example")
        return value

    def _list(self, name: str) -> list[str]:
        return [item.strip() for item in self._env.get(name, "").split(",") if item.strip()]

    def _number(self, name: str, default: str, kind=int):
        return _number(self._env.get(name) or default, name, kind)
