"""How config.py checks the value of a setting: a flag, a non-negative number, a rate limit, an absolute
URL, a list of origins, acr values, URL-encoded parameters, a Sentinel REDIS_URL; ConfigError names the
variable that is wrong."""

import re
from urllib.parse import parse_qsl, urlsplit

from limits import parse_many

ACR_VALUE = re.compile(r"[\x21\x23-\x5b\x5d-\x7e]+")  # visible ASCII but the quote and the backslash


class ConfigError(RuntimeError):
    """A setting is missing or malformed; the message names the variable."""


def flag(value: str, name: str) -> bool:
    """`value` read as true or false (1/0, true/false, yes/no, on/off)."""
    lowered = value.strip().lower()
    if lowered in {"1", "true", "yes", "on"}:
        return True
    if lowered in {"0", "false", "no", "off"}:
        return False
    raise ConfigError(f"{name} must be true or false, not {value!r}")


def number(value: str, name: str, kind=int):
    """`value` as a number of `kind`, never negative."""
    try:
        found = kind(value)
    except ValueError:
        raise ConfigError(f"{name} must be a number, not {value!r}") from None
    if found < 0:
        raise ConfigError(f"{name} must not be negative")
    return found


def rate_limit(value: str, name: str) -> str:
    """`value` when it is a rate limit (or several) as Flask-Limiter reads them, such as '20 per minute'."""
    try:
        parse_many(value)
    except ValueError:
        raise ConfigError(f"{name} must be a rate limit such as '20 per minute', not {value!r}") from None
    return value


def window(value: str, name: str) -> str:
    """A single fixed-window limit such as '30 per minute' (not a list of them)."""
    limits = parse_many(rate_limit(value, name))
    if len(limits) != 1 or limits[0].amount < 1:
        raise ConfigError(f"{name} must be one rate limit such as '30 per minute', not {value!r}")
    return value


def per_second(value: str) -> float:
    """The requests per second a window() allows."""
    [limit] = parse_many(value)
    return limit.amount / limit.get_expiry()


def endpoint_url(value: str, name: str) -> str | None:
    """`value` when it is an absolute http(s) URL; None when it is empty."""
    if not value:
        return None
    parts = urlsplit(value)
    if parts.scheme not in ("https", "http") or not parts.netloc:
        raise ConfigError(f"{name} must be an absolute https URL, not {value!r}")
    return value


def base_url(url: str) -> str:
    """The origin of `url`, with a trailing slash."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}/"


def origins(values: list[str], name: str) -> list[str]:
    """Origins such as https://api.example.com[:port]: a scheme and a host, no path, query or user."""
    for value in values:
        parts = urlsplit(value)
        extra = parts.username or parts.path.strip("/") or parts.query or parts.fragment
        if parts.scheme not in ("https", "http") or not parts.hostname or extra:
            raise ConfigError(f"{name} must list origins such as https://api.example.com, not {value!r}")
    return [value.rstrip("/") for value in values]


def acr_values(value: str, name: str) -> tuple[str, ...]:
    """The space-separated acr values of `value`."""
    values = tuple(value.split())
    # They are sent in a quoted WWW-Authenticate parameter (RFC 9470 3) and in URLs.
    if any(not ACR_VALUE.fullmatch(acr) for acr in values):
        raise ConfigError(f"{name} must be space-separated acr values of printable characters, no quotes")
    return values


def url_params(value: str, name: str) -> dict[str, str]:
    """The parameters of `value`, URL-encoded as in a query."""
    try:
        return dict(parse_qsl(value, strict_parsing=bool(value)))
    except ValueError:
        raise ConfigError(f"{name} must be URL-encoded parameters, such as audience=https%3A%2F%2Fapi") from None


def redis_url(value: str) -> str:
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
