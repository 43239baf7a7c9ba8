"""Reading a pending sign-in from its browser's sealed login cookie, as the app does. Apart from
tests.helpers.signin, which signs in through the real provider (dev.oidc_driver): the fast tests that
use these run under `make mutation` too, whose copy of the tree holds no dev/."""

from urllib.parse import parse_qs, urlsplit

from app.auth.pending import Pending, PendingSignIns
from tests.helpers.log_capture import remember_secrets
from tests.helpers.settings import SESSION_COOKIE


def state_of(url: str) -> str:
    """The `state` in the query of `url` (a front-channel authorization URL or a callback)."""
    return parse_qs(urlsplit(url).query)["state"][0]


def pending_sign_ins(config) -> PendingSignIns:
    """The pending sign-ins of an app with `config` (its Config or its environment), as it reads them."""
    secure = str(config.get("SESSION_COOKIE_SECURE", "true")).lower() in {"1", "true", "yes", "on"}
    fallbacks = config.get("SECRET_KEY_FALLBACKS") or []
    return PendingSignIns(
        config["SECRET_KEY"],
        fallbacks.split(",") if isinstance(fallbacks, str) else list(fallbacks),
        cookie_prefix=config.get("LOGIN_COOKIE_NAME") or ("__Host-login" if secure else "pp_login"),
        ttl_seconds=600,
    )


def login_cookie_name(config, state: str) -> str:
    """The name of the cookie that keeps the pending sign-in of `state`."""
    return pending_sign_ins(config).cookie_name(state)


def login_cookie(client, state: str) -> dict:
    """The login cookie an in-process `client` holds for `state`, as {name: value} (empty if none)."""
    name = login_cookie_name(client.application.config, state)
    value = cookie_value(client, name)
    return {name: value} if value is not None else {}


def opened_sign_in(config, state: str, cookies) -> Pending:
    """The pending sign-in of `state` that `cookies` (a browser's) keep, opened as the app does."""
    pending = pending_sign_ins(config).opened(state, cookies)
    remember_secrets(pending.verifier)
    return pending


def cookie_value(client, name: str = SESSION_COOKIE) -> str | None:
    cookie = client.get_cookie(name)
    return cookie.value if cookie else None
