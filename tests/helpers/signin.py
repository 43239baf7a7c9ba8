"""Signing in through the real provider, and what a session stored in Redis (its tokens unsealed with
the cookie, as the app does)."""

import time
from urllib.parse import parse_qs, urlsplit

import requests

from app.sessions.interface import session_ref
from app.store.keys import Keys
from dev import oidc_driver
from tests.helpers.log_capture import remember_secrets
from tests.helpers.login_cookies import cookie_value, login_cookie, opened_sign_in, state_of
from tests.helpers.real_services import PASSWORD
from tests.helpers.sealed import opened_token_set
from tests.helpers.settings import SESSION_COOKIE

REFRESH_MARGIN = 60


def sign_in(base_url: str, username: str, *, return_to: str = "/") -> requests.Session:
    """A requests session signed in to a live app through the real redirects and login form."""
    http = requests.Session()
    start = http.get(f"{base_url}/auth/login", params={"return_to": return_to}, allow_redirects=False, timeout=10)
    assert start.status_code == 302
    callback = oidc_driver.login_at_idp(http, start.headers["Location"], username, PASSWORD)
    assert urlsplit(callback).path == "/auth/callback"
    remember_secrets(*_code_and_state(callback))
    done = http.get(callback, allow_redirects=False, timeout=10)
    assert done.status_code == 302, done.text
    remember_secrets(*http.cookies.get_dict().values())
    return http


def _code_and_state(callback_url: str) -> list[str]:
    query = parse_qs(urlsplit(callback_url).query)
    return [*query.get("code", []), *query.get("state", [])]


def start_login(client, return_to: str | None = None) -> str:
    """GET /auth/login on an in-process client; returns the provider URL it redirects to."""
    response = client.get("/auth/login", query_string={"return_to": return_to} if return_to else None)
    assert response.status_code == 302, response.get_data(as_text=True)
    return response.headers["Location"]


def callback_path(callback_url: str) -> str:
    parts = urlsplit(callback_url)
    return f"{parts.path}?{parts.query}"


def signed_in_client(app, username: str, http: requests.Session | None = None, *, client=None):
    """An in-process test client signed in as `username` through the real provider, with `http` as the
    browser's side at the provider; with `client`, that browser signs in again (a new session replaces
    its current one)."""
    client = client or app.test_client()
    authorize = start_login(client)
    callback = oidc_driver.login_at_idp(http or requests.Session(), authorize, username, PASSWORD)
    remember_secrets(*_code_and_state(callback))
    opened_sign_in(app.config, state_of(callback), login_cookie(client, state_of(callback)))  # its verifier is a secret
    response = client.get(callback_path(callback))
    assert response.status_code == 302, response.get_data(as_text=True)
    remember_secrets(cookie_value(client, app.config["SESSION_COOKIE_NAME"]))
    return client


def stored_session_tokens(app, client) -> dict | None:
    """The token set the app keeps in Redis for the session of an in-process `client`."""
    cookie = cookie_value(client, app.config["SESSION_COOKIE_NAME"])
    redis = app.extensions["profile_poke"].store.redis
    raw = redis.get(Keys(app.config["REDIS_KEY_PREFIX"]).token_set(session_ref(app.config["SECRET_KEY"], cookie)))
    return _remembered(opened_token_set(raw, app.config["SECRET_KEY"], cookie))


def token_key(env: dict, cookie: str) -> str:
    """The Redis key of the token set of the session whose cookie is `cookie`."""
    return f"{env['REDIS_KEY_PREFIX']}tokens:{session_ref(env['SECRET_KEY'], cookie)}"


def stored_tokens(redis, env: dict, http: requests.Session) -> dict | None:
    """The token set stored for the live session `http` holds, or None."""
    cookie = http.cookies[SESSION_COOKIE]
    return _remembered(opened_token_set(redis.get(token_key(env, cookie)), env["SECRET_KEY"], cookie))


def _remembered(record: dict | None) -> dict | None:
    if record:
        remember_secrets(*(record.get(name) for name in ("access_token", "refresh_token", "id_token")))
    return record


def wait_until_refresh_is_due(record: dict) -> None:
    """Sleeps until the next cookie call will refresh the tokens of `record`."""
    time.sleep(max(0.0, record["expires_at"] - REFRESH_MARGIN - time.time() + 0.5))
