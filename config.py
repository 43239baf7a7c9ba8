"""Settings, read once from the environment. Names of the variables are part of the interface."""

import os
import re
from collections.abc import Mapping
from urllib.parse import parse_qsl, urlsplit

from limits import parse_many

ACR_VALUE = re.compile(r"[\x21\x23-\x5b\x5d-\x7e]+")  # visible ASCII but the quote and the backslash


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


def _window(value: str, name: str) -> str:
    """A single fixed-window limit such as '30 per minute' (not a list of them)."""
    limits = parse_many(_rate_limit(value, name))
    if len(limits) != 1 or limits[0].amount < 1:
        raise ConfigError(f"{name} must be one rate limit such as '30 per minute', not {value!r}")
    return value


def _per_second(value: str) -> float:
    [limit] = parse_many(value)
    return limit.amount / limit.get_expiry()


def _endpoint_url(value: str, name: str) -> str | None:
    if not value:
        return None
    parts = urlsplit(value)
    if parts.scheme not in ("https", "http") or not parts.netloc:
        raise ConfigError(f"{name} must be an absolute https URL, not {value!r}")
    return value


def _redis_url(value: str) -> str:
    """REDIS_URL, its Sentinel form checked: `redis+sentinel://[:password@]host:port[,host:port]/service_name[/db]`."""
    parts = urlsplit(value)
    if parts.scheme not in ("redis+sentinel", "rediss+sentinel"):
        return value
    service, _, db = parts.path.strip("/").partition("/")
    hosts = [host.partition(":") for host in parts.netloc.rpartition("@")[2].split(",")]
    if (
        not service
        or not (db == "" or db.isdigit())
        or not all(name and _is_port(port or "26379") for name, _, port in hosts)
    ):
        raise ConfigError(
            f"REDIS_URL must be {parts.scheme}://[:password@]host:port[,host:port]/service_name[/db] for a "
            f"Sentinel-managed Redis, not {parts.scheme}://{parts.netloc.rpartition('@')[2]}{parts.path}"
        )
    return value


def _is_port(value: str) -> bool:
    return value.isdigit() and 0 < int(value) < 65536


def _traces_url(env: Mapping[str, str]) -> str | None:
    """Where the standard OTEL_* variables send traces over OTLP/HTTP; None when they ask for none."""
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true" or env.get("OTEL_TRACES_EXPORTER") == "none":
        return None
    if env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"):
        return env["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"]
    base = env.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").rstrip("/")
    return f"{base}/v1/traces" if base else None


def _base_url(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}/"


def _origins(values: list[str], name: str) -> list[str]:
    """Origins such as https://api.example.com[:port]: a scheme and a host, no path, query or user."""
    for value in values:
        parts = urlsplit(value)
        extra = parts.username or parts.path.strip("/") or parts.query or parts.fragment
        if parts.scheme not in ("https", "http") or not parts.hostname or extra:
            raise ConfigError(f"{name} must list origins such as https://api.example.com, not {value!r}")
    return [value.rstrip("/") for value in values]


class Config:
    """Every setting of the service, from `env` (the process environment by default)."""

    def __init__(self, env: Mapping[str, str] | None = None):
        env = os.environ if env is None else env
        self._env = env

        # Identity provider and login client
        # Compared character for character with `iss`: a trailing slash (Auth0's) is part of it.
        self.OIDC_ISSUER_URL = self._required("OIDC_ISSUER_URL")
        self.OIDC_CLIENT_ID = self._required("OIDC_CLIENT_ID")
        self.OIDC_REDIRECT_URI = self._required("OIDC_REDIRECT_URI")
        self.BASE_URL = _base_url(self.OIDC_REDIRECT_URI)
        self.OIDC_POST_LOGOUT_REDIRECT_URI = env.get("OIDC_POST_LOGOUT_REDIRECT_URI") or self.BASE_URL
        self.PROFILE_SCOPE = env.get("PROFILE_SCOPE") or "svc:profile.private"
        self.POKE_SCOPE = env.get("POKE_SCOPE") or "svc:interact.poke"
        self.OIDC_SCOPES = env.get("OIDC_SCOPES") or f"openid {self.PROFILE_SCOPE} {self.POKE_SCOPE}"
        self.OIDC_AUTH_PARAMS = self._params("OIDC_AUTH_PARAMS")
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
        self.OIDC_INTROSPECTION_ENDPOINT = _endpoint_url(
            env.get("OIDC_INTROSPECTION_ENDPOINT", ""), "OIDC_INTROSPECTION_ENDPOINT"
        )
        self.OIDC_REVOCATION_ENDPOINT = _endpoint_url(
            env.get("OIDC_REVOCATION_ENDPOINT", ""), "OIDC_REVOCATION_ENDPOINT"
        )

        # Access tokens the API accepts
        self.API_AUDIENCE = env.get("API_AUDIENCE") or "profile-poke-api"
        self.LOGIN_CLIENT_IDS = self._list("LOGIN_CLIENT_IDS") or [self.OIDC_CLIENT_ID]
        self.TOKEN_LEEWAY = min(self._number("TOKEN_LEEWAY", "60"), 60)
        self.API_CLIENT_IDS = self._list("API_CLIENT_IDS")
        self.TOKEN_SUBJECT_CLAIM = env.get("TOKEN_SUBJECT_CLAIM") or None
        self.TOKEN_SCOPE_CLAIM = env.get("TOKEN_SCOPE_CLAIM") or None
        self.TOKEN_USERNAME_CLAIM = env.get("TOKEN_USERNAME_CLAIM") or None
        self.LINK_UNCLAIMED_PROFILES = _flag(env.get("LINK_UNCLAIMED_PROFILES", "false"), "LINK_UNCLAIMED_PROFILES")
        self.ACCESS_TOKEN_VALIDATION = env.get("ACCESS_TOKEN_VALIDATION") or "jwt"
        if self.ACCESS_TOKEN_VALIDATION not in ("jwt", "introspection"):
            raise ConfigError("ACCESS_TOKEN_VALIDATION must be jwt or introspection")
        self.INTROSPECTION_CLIENT_ID = env.get("INTROSPECTION_CLIENT_ID") or None
        self.INTROSPECTION_CLIENT_SECRET = env.get("INTROSPECTION_CLIENT_SECRET") or None
        self.INTROSPECTION_CACHE_TTL = self._number("INTROSPECTION_CACHE_TTL", "60", float)
        # Junk tokens must not turn into provider calls: refusals are remembered, unknown tokens bounded.
        self.INTROSPECTION_REFUSAL_TTL = self._number("INTROSPECTION_REFUSAL_TTL", "30", float)
        self.RATE_LIMIT_INTROSPECTION = _window(
            env.get("RATE_LIMIT_INTROSPECTION") or "30 per minute", "RATE_LIMIT_INTROSPECTION"
        )
        self.RATE_LIMIT_INTROSPECTION_TOTAL = _window(
            env.get("RATE_LIMIT_INTROSPECTION_TOTAL") or "600 per minute", "RATE_LIMIT_INTROSPECTION_TOTAL"
        )
        # Each IPv4 /24 and IPv6 /56, and twice that each IPv6 /48 (app/store/token_checks.py).
        self.RATE_LIMIT_INTROSPECTION_NETWORK = _window(
            env.get("RATE_LIMIT_INTROSPECTION_NETWORK") or "60 per minute", "RATE_LIMIT_INTROSPECTION_NETWORK"
        )
        if _per_second(self.RATE_LIMIT_INTROSPECTION) > _per_second(self.RATE_LIMIT_INTROSPECTION_TOTAL):
            # One address alone could then spend the whole bound and turn everyone's new tokens into 503s.
            raise ConfigError("RATE_LIMIT_INTROSPECTION must not allow more than RATE_LIMIT_INTROSPECTION_TOTAL")
        # Sender-constrained tokens (RFC 9449): the DPoP scheme, and server nonces in its proofs.
        self.DPOP = _flag(env.get("DPOP", "on"), "DPOP")
        self.DPOP_NONCE = _flag(env.get("DPOP_NONCE", "off"), "DPOP_NONCE")
        self.RATE_LIMIT_DPOP_PROOFS = _window(
            env.get("RATE_LIMIT_DPOP_PROOFS") or "600 per minute", "RATE_LIMIT_DPOP_PROOFS"
        )
        # Where clients reach the API: a proof's htu names one of them, never a host the request sent.
        self.PUBLIC_ORIGINS = _origins(self._list("PUBLIC_ORIGINS"), "PUBLIC_ORIGINS") or [self.BASE_URL.rstrip("/")]
        if self.ACCESS_TOKEN_VALIDATION == "introspection" and not (
            self.INTROSPECTION_CLIENT_ID and self.INTROSPECTION_CLIENT_SECRET
        ):
            raise ConfigError("INTROSPECTION_CLIENT_ID and INTROSPECTION_CLIENT_SECRET are required for introspection")

        # Step-up (RFC 9470) for sensitive actions: acceptable acr values, oldest acceptable sign-in.
        self.STEP_UP_ACR = self._acr_values("STEP_UP_ACR")
        self.STEP_UP_MAX_AGE = self._number("STEP_UP_MAX_AGE", "") if env.get("STEP_UP_MAX_AGE") else None
        # The challenge sends browsers to /auth/login?acr_values=<STEP_UP_ACR>: a value the login refuses
        # would be a step-up no user can meet.
        unreachable = [acr for acr in self.STEP_UP_ACR if acr not in self.LOGIN_ACR_VALUES]
        if unreachable:
            raise ConfigError(f"STEP_UP_ACR names {' '.join(unreachable)}, which LOGIN_ACR_VALUES must list too")

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
        if self.LOGIN_STATE_TTL < 1:
            raise ConfigError("LOGIN_STATE_TTL must be at least 1")
        self.RATE_LIMIT_LOGIN = _rate_limit(env.get("RATE_LIMIT_LOGIN") or "30 per minute", "RATE_LIMIT_LOGIN")
        self.RATE_LIMIT_EXCHANGE = _rate_limit(env.get("RATE_LIMIT_EXCHANGE") or "10 per minute", "RATE_LIMIT_EXCHANGE")
        # Each IPv4 /24 and IPv6 /56, and twice that each IPv6 /48 (app.extensions.init_limiter): many
        # addresses of one network must not multiply the pushes and exchanges one address may ask for.
        self.RATE_LIMIT_LOGIN_NETWORK = _window(
            env.get("RATE_LIMIT_LOGIN_NETWORK") or "300 per minute", "RATE_LIMIT_LOGIN_NETWORK"
        )
        self.RATE_LIMIT_EXCHANGE_NETWORK = _window(
            env.get("RATE_LIMIT_EXCHANGE_NETWORK") or "100 per minute", "RATE_LIMIT_EXCHANGE_NETWORK"
        )

        # Redis
        self.REDIS_URL = _redis_url(env.get("REDIS_URL") or "redis://localhost:6379/0")
        self.REDIS_KEY_PREFIX = env.get("REDIS_KEY_PREFIX", "pp:")
        self.REDIS_SOCKET_TIMEOUT = self._number("REDIS_SOCKET_TIMEOUT", "1", float)
        self.REDIS_TLS_VERIFY = _flag(env.get("REDIS_TLS_VERIFY", "true"), "REDIS_TLS_VERIFY")
        # The longest a write a failover must not lose waits for a replica to confirm it (0: never waits).
        self.REDIS_WAIT_TIMEOUT_MS = self._number("REDIS_WAIT_TIMEOUT_MS", "100")

        # Process
        self.PROXY_HOPS = self._number("PROXY_HOPS", "0")
        self.PROXY_FORWARDS_HOST = _flag(env.get("PROXY_FORWARDS_HOST", "false"), "PROXY_FORWARDS_HOST")
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

    def _acr_values(self, name: str) -> tuple[str, ...]:
        values = tuple(self._env.get(name, "").split())
        # They are sent in a quoted WWW-Authenticate parameter (RFC 9470 3) and in URLs.
        if any(not ACR_VALUE.fullmatch(value) for value in values):
            raise ConfigError(f"{name} must be space-separated acr values of printable characters, no quotes")
        return values

    def _list(self, name: str) -> list[str]:
        return [item.strip() for item in self._env.get(name, "").split(",") if item.strip()]

    def _params(self, name: str) -> dict[str, str]:
        try:
            return dict(parse_qsl(self._env.get(name, ""), strict_parsing=bool(self._env.get(name))))
        except ValueError:
            raise ConfigError(f"{name} must be URL-encoded parameters, such as audience=https%3A%2F%2Fapi") from None

    def _number(self, name: str, default: str, kind=int):
        return _number(self._env.get(name) or default, name, kind)
