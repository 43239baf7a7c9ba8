"""Settings, read once from the environment, under headings: the identity provider, the access tokens
the API accepts, step-up, browser sessions, Redis, the process. Names of the variables are part of the
interface; how each value is checked is config_values'."""

import os
from collections.abc import Mapping

from config_values import (
    ConfigError,
    acr_values,
    base_url,
    endpoint_url,
    flag,
    number,
    origins,
    per_second,
    rate_limit,
    redis_url,
    url_params,
    window,
)

__all__ = ["Config", "ConfigError"]


def _traces_url(env: Mapping[str, str]) -> str | None:
    """Where the standard OTEL_* variables send traces over OTLP/HTTP; None when they ask for none."""
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true" or env.get("OTEL_TRACES_EXPORTER") == "none":
        return None
    if env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"):
        return env["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"]
    base = env.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").rstrip("/")
    return f"{base}/v1/traces" if base else None


class Config:
    """Every setting of the service, from `env` (the process environment by default)."""

    def __init__(self, env: Mapping[str, str] | None = None):
        env = os.environ if env is None else env
        self._env = env
        self._identity_provider(env)
        self._access_tokens(env)
        self._step_up(env)
        self._browser_sessions(env)
        self._redis(env)
        self._process(env)

    def _identity_provider(self, env: Mapping[str, str]) -> None:
        """The identity provider, and the service as its login client."""
        # Compared character for character with `iss`: a trailing slash (Auth0's) is part of it.
        self.OIDC_ISSUER_URL = self._required("OIDC_ISSUER_URL")
        self.OIDC_CLIENT_ID = self._required("OIDC_CLIENT_ID")
        self.OIDC_REDIRECT_URI = self._required("OIDC_REDIRECT_URI")
        self.BASE_URL = base_url(self.OIDC_REDIRECT_URI)
        self.OIDC_POST_LOGOUT_REDIRECT_URI = env.get("OIDC_POST_LOGOUT_REDIRECT_URI") or self.BASE_URL
        self.PROFILE_SCOPE = env.get("PROFILE_SCOPE") or "svc:profile.private"
        self.POKE_SCOPE = env.get("POKE_SCOPE") or "svc:interact.poke"
        self.OIDC_SCOPES = env.get("OIDC_SCOPES") or f"openid {self.PROFILE_SCOPE} {self.POKE_SCOPE}"
        self.OIDC_AUTH_PARAMS = url_params(env.get("OIDC_AUTH_PARAMS", ""), "OIDC_AUTH_PARAMS")
        self.OIDC_PAR = (env.get("OIDC_PAR") or "auto").strip().lower()
        if self.OIDC_PAR not in ("auto", "require", "off"):
            raise ConfigError("OIDC_PAR must be auto, require or off")
        # The acr values a sign-in may ask for (GET /auth/login?acr_values=...); empty: none.
        self.LOGIN_ACR_VALUES = env.get("LOGIN_ACR_VALUES", "").replace(",", " ").split()
        # A name in the table of provider profiles (app/provider/vendors.py), checked where it is read.
        self.OIDC_PROVIDER_PROFILE = env.get("OIDC_PROVIDER_PROFILE") or "generic"
        self.EXCHANGE_REDIRECT_URIS = self._list("EXCHANGE_REDIRECT_URIS") or [self.BASE_URL]
        self.IDP_TIMEOUT = self._number("IDP_TIMEOUT", "5", float)
        self.DISCOVERY_TTL = self._number("DISCOVERY_TTL", "3600")
        self.JWKS_REFETCH_INTERVAL = self._number("JWKS_REFETCH_INTERVAL", "30", float)
        self.JWKS_MAX_AGE = self._number("JWKS_MAX_AGE", "600", float)
        # Used only when neither discovery nor the RFC 8414 metadata lists them.
        self.OIDC_INTROSPECTION_ENDPOINT = endpoint_url(
            env.get("OIDC_INTROSPECTION_ENDPOINT", ""), "OIDC_INTROSPECTION_ENDPOINT"
        )
        self.OIDC_REVOCATION_ENDPOINT = endpoint_url(
            env.get("OIDC_REVOCATION_ENDPOINT", ""), "OIDC_REVOCATION_ENDPOINT"
        )

    def _access_tokens(self, env: Mapping[str, str]) -> None:
        """The access tokens the API accepts: audience, clients, claims, validation, DPoP."""
        self.API_AUDIENCE = env.get("API_AUDIENCE") or "profile-poke-api"
        self.LOGIN_CLIENT_IDS = self._list("LOGIN_CLIENT_IDS") or [self.OIDC_CLIENT_ID]
        self.TOKEN_LEEWAY = min(self._number("TOKEN_LEEWAY", "60"), 60)
        self.API_CLIENT_IDS = self._list("API_CLIENT_IDS")
        self.TOKEN_SUBJECT_CLAIM = env.get("TOKEN_SUBJECT_CLAIM") or None
        self.TOKEN_SCOPE_CLAIM = env.get("TOKEN_SCOPE_CLAIM") or None
        self.TOKEN_USERNAME_CLAIM = env.get("TOKEN_USERNAME_CLAIM") or None
        self.LINK_UNCLAIMED_PROFILES = flag(env.get("LINK_UNCLAIMED_PROFILES", "false"), "LINK_UNCLAIMED_PROFILES")
        self.ACCESS_TOKEN_VALIDATION = env.get("ACCESS_TOKEN_VALIDATION") or "jwt"
        if self.ACCESS_TOKEN_VALIDATION not in ("jwt", "introspection"):
            raise ConfigError("ACCESS_TOKEN_VALIDATION must be jwt or introspection")
        self.INTROSPECTION_CLIENT_ID = env.get("INTROSPECTION_CLIENT_ID") or None
        self.INTROSPECTION_CLIENT_SECRET = env.get("INTROSPECTION_CLIENT_SECRET") or None
        self.INTROSPECTION_CACHE_TTL = self._number("INTROSPECTION_CACHE_TTL", "60", float)
        # Junk tokens must not turn into provider calls: refusals are remembered, unknown tokens bounded.
        self.INTROSPECTION_REFUSAL_TTL = self._number("INTROSPECTION_REFUSAL_TTL", "30", float)
        self.RATE_LIMIT_INTROSPECTION = window(
            env.get("RATE_LIMIT_INTROSPECTION") or "30 per minute", "RATE_LIMIT_INTROSPECTION"
        )
        self.RATE_LIMIT_INTROSPECTION_TOTAL = window(
            env.get("RATE_LIMIT_INTROSPECTION_TOTAL") or "600 per minute", "RATE_LIMIT_INTROSPECTION_TOTAL"
        )
        # Each IPv4 /24 and IPv6 /56, and twice that each IPv6 /48 (app/store/token_checks.py).
        self.RATE_LIMIT_INTROSPECTION_NETWORK = window(
            env.get("RATE_LIMIT_INTROSPECTION_NETWORK") or "60 per minute", "RATE_LIMIT_INTROSPECTION_NETWORK"
        )
        if per_second(self.RATE_LIMIT_INTROSPECTION) > per_second(self.RATE_LIMIT_INTROSPECTION_TOTAL):
            # One address alone could then spend the whole bound and turn everyone's new tokens into 503s.
            raise ConfigError("RATE_LIMIT_INTROSPECTION must not allow more than RATE_LIMIT_INTROSPECTION_TOTAL")
        # Sender-constrained tokens (RFC 9449): the DPoP scheme, and server nonces in its proofs.
        self.DPOP = flag(env.get("DPOP", "on"), "DPOP")
        self.DPOP_NONCE = flag(env.get("DPOP_NONCE", "off"), "DPOP_NONCE")
        self.RATE_LIMIT_DPOP_PROOFS = window(
            env.get("RATE_LIMIT_DPOP_PROOFS") or "600 per minute", "RATE_LIMIT_DPOP_PROOFS"
        )
        # Where clients reach the API: a proof's htu names one of them, never a host the request sent.
        self.PUBLIC_ORIGINS = origins(self._list("PUBLIC_ORIGINS"), "PUBLIC_ORIGINS") or [self.BASE_URL.rstrip("/")]
        if self.ACCESS_TOKEN_VALIDATION == "introspection" and not (
            self.INTROSPECTION_CLIENT_ID and self.INTROSPECTION_CLIENT_SECRET
        ):
            raise ConfigError("INTROSPECTION_CLIENT_ID and INTROSPECTION_CLIENT_SECRET are required for introspection")

    def _step_up(self, env: Mapping[str, str]) -> None:
        """Step-up (RFC 9470) for sensitive actions: acceptable acr values, oldest acceptable sign-in."""
        self.STEP_UP_ACR = acr_values(env.get("STEP_UP_ACR", ""), "STEP_UP_ACR")
        self.STEP_UP_MAX_AGE = self._number("STEP_UP_MAX_AGE", "") if env.get("STEP_UP_MAX_AGE") else None
        # The challenge sends browsers to /auth/login?acr_values=<STEP_UP_ACR>: a value the login refuses
        # would be a step-up no user can meet.
        unreachable = [acr for acr in self.STEP_UP_ACR if acr not in self.LOGIN_ACR_VALUES]
        if unreachable:
            raise ConfigError(f"STEP_UP_ACR names {' '.join(unreachable)}, which LOGIN_ACR_VALUES must list too")

    def _browser_sessions(self, env: Mapping[str, str]) -> None:
        """Browser sessions: the secret key, cookies, lifetimes, sign-in limits."""
        self.SECRET_KEY = self._required("SECRET_KEY")
        if len(self.SECRET_KEY) < 32:
            raise ConfigError("SECRET_KEY must be at least 32 characters of random text")
        self.SECRET_KEY_FALLBACKS = self._list("SECRET_KEY_FALLBACKS")
        self.SESSION_COOKIE_SECURE = flag(env.get("SESSION_COOKIE_SECURE", "true"), "SESSION_COOKIE_SECURE")
        self.SESSION_COOKIE_NAME = "__Host-session" if self.SESSION_COOKIE_SECURE else "pp_session"
        self.LOGIN_COOKIE_NAME = "__Host-login" if self.SESSION_COOKIE_SECURE else "pp_login"
        self.SESSION_COOKIE_HTTPONLY = True
        self.SESSION_COOKIE_SAMESITE = "Lax"
        self.SESSION_IDLE_TIMEOUT = self._number("SESSION_IDLE_TIMEOUT", "1800")
        self.SESSION_MAX_AGE = self._number("SESSION_MAX_AGE", "28800")
        self.LOGIN_STATE_TTL = min(self._number("LOGIN_STATE_TTL", "600"), 600)
        if self.LOGIN_STATE_TTL < 1:
            raise ConfigError("LOGIN_STATE_TTL must be at least 1")
        self.RATE_LIMIT_LOGIN = rate_limit(env.get("RATE_LIMIT_LOGIN") or "30 per minute", "RATE_LIMIT_LOGIN")
        self.RATE_LIMIT_EXCHANGE = rate_limit(env.get("RATE_LIMIT_EXCHANGE") or "10 per minute", "RATE_LIMIT_EXCHANGE")
        # Each IPv4 /24 and IPv6 /56, and twice that each IPv6 /48 (app.extensions.init_limiter): many
        # addresses of one network must not multiply the pushes and exchanges one address may ask for.
        self.RATE_LIMIT_LOGIN_NETWORK = window(
            env.get("RATE_LIMIT_LOGIN_NETWORK") or "300 per minute", "RATE_LIMIT_LOGIN_NETWORK"
        )
        self.RATE_LIMIT_EXCHANGE_NETWORK = window(
            env.get("RATE_LIMIT_EXCHANGE_NETWORK") or "100 per minute", "RATE_LIMIT_EXCHANGE_NETWORK"
        )

    def _redis(self, env: Mapping[str, str]) -> None:
        """Redis: where it is (one server, a Cluster or a Sentinel-managed set), the key prefix, timeouts, TLS,
        and how long a write a failover must not lose waits for a replica."""
        self.REDIS_URL = redis_url(env.get("REDIS_URL") or "redis://localhost:6379/0")
        self.REDIS_KEY_PREFIX = env.get("REDIS_KEY_PREFIX", "pp:")
        self.REDIS_SOCKET_TIMEOUT = self._number("REDIS_SOCKET_TIMEOUT", "1", float)
        self.REDIS_TLS_VERIFY = flag(env.get("REDIS_TLS_VERIFY", "true"), "REDIS_TLS_VERIFY")
        # The longest a write a failover must not lose waits for a replica to confirm it (0: never waits).
        self.REDIS_WAIT_TIMEOUT_MS = self._number("REDIS_WAIT_TIMEOUT_MS", "100")

    def _process(self, env: Mapping[str, str]) -> None:
        """The process: proxies, request size, logs, metrics and traces."""
        self.PROXY_HOPS = self._number("PROXY_HOPS", "0")
        self.PROXY_FORWARDS_HOST = flag(env.get("PROXY_FORWARDS_HOST", "false"), "PROXY_FORWARDS_HOST")
        self.MAX_CONTENT_LENGTH = self._number("MAX_CONTENT_LENGTH", "65536")
        self.LOG_LEVEL = env.get("LOG_LEVEL", "INFO").upper()
        self.METRICS_TOKEN = env.get("METRICS_TOKEN") or None
        # The SDK reads its other OTEL_* variables itself; without an endpoint nothing is set up at all.
        self.OTEL_TRACES_URL = _traces_url(env)
        # Unset, traces propagate as W3C traceparent only: the SDK's default would also forward a client's baggage.
        self.OTEL_PROPAGATORS = env.get("OTEL_PROPAGATORS", "").strip() or None

    def _required(self, name: str) -> str:
        value = self._env.get(name, "").strip()
        if not value:
            raise ConfigError(f"{name} is required; see .env.example")
        return value

    def _list(self, name: str) -> list[str]:
        return [item.strip() for item in self._env.get(name, "").split(",") if item.strip()]

    def _number(self, name: str, default: str, kind=int):
        return number(self._env.get(name) or default, name, kind)
