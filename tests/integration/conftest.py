"""Real parts, started once per test session: redis-server on a private port (unless TEST_REDIS_URL
or REDIS_URL names one), the dev identity provider (oidc-provider) and, for the suites that need a
real HTTP server, the app under gunicorn."""

import json
import os
import secrets
import subprocess
import sys
import time
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import pytest
import requests

from app import create_app
from app.auth.sessions import session_ref
from app.extensions import make_redis
from app.store.keys import Keys
from config import Config
from dev import oidc_driver
from dev.services import (
    ROOT,
    free_cluster_port,
    free_port,
    idp_issuer,
    start_gunicorn,
    start_idp,
    start_redis,
    start_redis_cluster,
)
from tests.conftest import app_env

pytestmark = pytest.mark.integration

DEMO_USERS = ROOT / "dev" / "demo-users.json"
LOGIN_CLIENTS = "profile-poke-web,profile-poke-web-short,profile-poke-web-limited"
PASSWORD = "demo"


@dataclass
class Idp:
    issuer: str
    base: str
    secret: str
    app_ports: list[int]
    _tokens: dict = field(default_factory=dict)

    def redirect_uri(self, index: int = 0) -> str:
        return f"http://127.0.0.1:{self.app_ports[index]}/auth/callback"

    def user_tokens(self, username: str, client_id: str = "profile-poke-web", **kwargs) -> dict:
        """A fresh token response for `username`, through the real code + PKCE flow."""
        return oidc_driver.user_tokens(self.issuer, client_id, self.redirect_uri(), username, PASSWORD, **kwargs)

    def user_token(self, username: str) -> str:
        """An access token for `username`, reused across tests while it has a minute left."""
        cached = self._tokens.get(username)
        if cached is None or cached[1] < time.time() + 60:
            response = self.user_tokens(username)
            cached = (response["access_token"], time.time() + response["expires_in"])
            self._tokens[username] = cached
        return cached[0]

    def app_token(self, client_id: str = "profile-poke-service", scope: str | None = None) -> str:
        return oidc_driver.app_token(self.issuer, client_id, self.secret, scope)["access_token"]

    def stats(self) -> dict:
        return oidc_driver.stats(self.base)

    def reset_stats(self) -> None:
        oidc_driver.reset_stats(self.base)


@pytest.fixture(scope="session")
def workdir(tmp_path_factory):
    return tmp_path_factory.mktemp("services")


@pytest.fixture(scope="session")
def redis_url(workdir, request):
    """A single redis-server, or with --redis-cluster a three-master Redis Cluster, on private ports."""
    given = os.environ.get("TEST_REDIS_URL") or os.environ.get("REDIS_URL")
    if given:
        yield given
        return
    if request.config.getoption("--redis-cluster"):
        ports = [free_cluster_port() for _ in range(3)]
        nodes = start_redis_cluster(ports, workdir=workdir / "cluster")
        yield f"redis+cluster://127.0.0.1:{ports[0]},127.0.0.1:{ports[1]}/"
        for node in nodes:
            node.stop()
        return
    port = free_port()
    server = start_redis(port, workdir=workdir / "redis")
    yield f"redis://127.0.0.1:{port}/0"
    server.stop()


def start_own_idp(workdir, app_ports: list[int], **overrides) -> tuple:
    """A dev identity provider that accepts the apps on `app_ports`; returns (process, Idp)."""
    bases = [f"http://127.0.0.1:{port}/" for port in app_ports]
    secret = secrets.token_urlsafe(24)
    port = free_port()
    env = {
        "IDP_API_CLIENT_SECRET": secret,
        "IDP_REDIRECT_URIS": ",".join([f"{base}auth/callback" for base in bases] + bases),
        "IDP_POST_LOGOUT_REDIRECT_URIS": ",".join(bases),
        **overrides,
    }
    server = start_idp(port, env=env, log_path=workdir / f"idp-{port}.log")
    return server, Idp(idp_issuer(port), f"http://127.0.0.1:{port}", secret, app_ports)


@pytest.fixture(scope="session")
def idp(workdir):
    server, provider = start_own_idp(workdir, [free_port() for _ in range(3)])
    yield provider
    server.stop()


def _delete_prefix(url: str, prefix: str) -> None:
    client = make_redis(url, socket_timeout=5)
    for key in client.scan_iter(match=f"{prefix}*", count=500):
        client.delete(key)
    client.close()


def integration_env(idp: Idp, redis_url: str, index: int = 0, **overrides) -> dict:
    """The environment of an app instance that talks to the real Redis and the real provider."""
    settings = {"REDIS_URL": redis_url, "OIDC_REDIRECT_URI": idp.redirect_uri(index), "LOGIN_CLIENT_IDS": LOGIN_CLIENTS}
    return app_env(idp.issuer, **{**settings, **overrides})  # fmt: skip


def import_demo_users(app) -> None:
    result = app.test_cli_runner().invoke(args=["users", "import", str(DEMO_USERS)])
    assert result.exit_code == 0, result.output


@pytest.fixture
def make_app(idp, redis_url):
    """Builds in-process apps over the real Redis and provider, each under its own key prefix."""
    prefixes = []

    def build(**overrides):
        env = integration_env(idp, redis_url, **overrides)
        prefixes.append(env["REDIS_KEY_PREFIX"])
        app = create_app(Config(env))
        import_demo_users(app)
        return app

    yield build
    for prefix in prefixes:
        _delete_prefix(redis_url, prefix)


@pytest.fixture
def app(make_app):
    return make_app()


@pytest.fixture
def client(app):
    return app.test_client()


@pytest.fixture
def redis(redis_url):
    client = make_redis(redis_url, socket_timeout=5)
    yield client
    client.close()


@pytest.fixture
def keys_of(redis):
    """Every key an app instance has in Redis."""

    def keys(app) -> list[str]:
        prefix = app.config["REDIS_KEY_PREFIX"]
        return sorted(key.decode() for key in redis.scan_iter(match=f"{prefix}*"))

    return keys


@dataclass
class LiveApp:
    url: str
    env: dict
    log_path: object


def start_live_app(env: dict, port: int, workdir, workers: int | None = 2) -> tuple:
    """The app under gunicorn on `port` with `env`, demo users imported by the real CLI."""
    subprocess.run(
        [sys.executable, "-m", "flask", "--app", "wsgi", "users", "import", str(DEMO_USERS)],
        env={**os.environ, **env}, cwd=ROOT, check=True, capture_output=True,
    )  # fmt: skip
    log_path = workdir / f"app-{port}.log"
    server = start_gunicorn(port, env=env, log_path=log_path, workers=workers)
    return server, LiveApp(f"http://127.0.0.1:{port}", env, log_path)


@pytest.fixture(scope="session")
def live_app(idp, redis_url, workdir):
    """The app under gunicorn (2 workers x 4 threads) with the short-lived-token login client."""
    # More threads than production's default, so races between and within workers get a real chance.
    env = integration_env(idp, redis_url, 1, OIDC_CLIENT_ID="profile-poke-web-short", GUNICORN_THREADS="4")
    server, live = start_live_app(env, idp.app_ports[1], workdir)
    yield live
    server.stop()
    _delete_prefix(redis_url, live.env["REDIS_KEY_PREFIX"])


def sign_in(base_url: str, username: str, *, return_to: str = "/") -> requests.Session:
    """A requests session signed in to a live app through the real redirects and login form."""
    http = requests.Session()
    start = http.get(f"{base_url}/auth/login", params={"return_to": return_to}, allow_redirects=False, timeout=10)
    assert start.status_code == 302
    callback = oidc_driver.login_at_idp(http, start.headers["Location"], username, PASSWORD)
    assert urlsplit(callback).path == "/auth/callback"
    done = http.get(callback, allow_redirects=False, timeout=10)
    assert done.status_code == 302, done.text
    return http


def start_login(client, return_to: str | None = None) -> str:
    """GET /auth/login on an in-process client; returns the provider URL it redirects to."""
    response = client.get("/auth/login", query_string={"return_to": return_to} if return_to else None)
    assert response.status_code == 302, response.get_data(as_text=True)
    return response.headers["Location"]


def callback_path(callback_url: str) -> str:
    parts = urlsplit(callback_url)
    return f"{parts.path}?{parts.query}"


def signed_in_client(app, username: str, http: requests.Session | None = None):
    """An in-process test client signed in as `username` through the real provider."""
    client = app.test_client()
    authorize = start_login(client)
    callback = oidc_driver.login_at_idp(http or requests.Session(), authorize, username, PASSWORD)
    response = client.get(callback_path(callback))
    assert response.status_code == 302, response.get_data(as_text=True)
    return client


def cookie_value(client, name: str) -> str | None:
    cookie = client.get_cookie(name)
    return cookie.value if cookie else None


def stored_session_tokens(app, client) -> dict | None:
    """The token set the app keeps in Redis for the session of an in-process `client`."""
    cookie = cookie_value(client, app.config["SESSION_COOKIE_NAME"])
    redis = app.extensions["profile_poke"].store.redis
    raw = redis.get(Keys(app.config["REDIS_KEY_PREFIX"]).token_set(session_ref(app.config["SECRET_KEY"], cookie)))
    return json.loads(raw) if raw else None
