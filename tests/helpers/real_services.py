"""Real parts for the integration and browser suites: redis-server on a private port (unless
TEST_REDIS_URL or REDIS_URL names one), the dev identity provider (oidc-provider) and the app under
gunicorn. Plain builders, and the session-scoped fixtures the suites' conftests take in."""

import json
import os
import secrets
import subprocess
import sys
import time
from dataclasses import dataclass, field

import pytest

from app.extensions import make_redis
from dev import oidc_driver
from dev.otlp_receiver import Receiver
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
from tests.helpers.log_capture import remember_secrets
from tests.helpers.settings import app_env

DEMO_USERS = ROOT / "dev" / "demo-users.json"
# Each demo account's subject at the dev provider (the `sub` its ID tokens carry), by login.
DEMO_SUBJECTS = {
    account["login"]: account["sub"] for account in json.loads((ROOT / "dev" / "idp" / "accounts.json").read_text())
}
LOGIN_CLIENTS = "profile-poke-web,profile-poke-web-short,profile-poke-web-limited"
OPAQUE_CLIENT = "profile-poke-web-opaque"  # the dev provider's login client with opaque access tokens
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
        response = oidc_driver.user_tokens(self.issuer, client_id, self.redirect_uri(), username, PASSWORD, **kwargs)
        remember_secrets(*(response.get(name) for name in ("access_token", "refresh_token", "id_token")))
        return response

    def user_token(self, username: str) -> str:
        """An access token for `username`, reused across tests while it has a minute left."""
        cached = self._tokens.get(username)
        if cached is None or cached[1] < time.time() + 60:
            response = self.user_tokens(username)
            cached = (response["access_token"], time.time() + response["expires_in"])
            self._tokens[username] = cached
        return cached[0]

    def app_token(self, client_id: str = "profile-poke-service", scope: str | None = None) -> str:
        token = oidc_driver.app_token(self.issuer, client_id, self.secret, scope)["access_token"]
        remember_secrets(token)
        return token

    def stats(self) -> dict:
        return oidc_driver.stats(self.base)

    def reset_stats(self) -> None:
        oidc_driver.reset_stats(self.base)


def introspection_settings(provider: "Idp") -> dict:
    """Settings that validate access tokens by introspection at `provider`, its opaque client a login client."""
    return {
        "ACCESS_TOKEN_VALIDATION": "introspection",
        "INTROSPECTION_CLIENT_ID": "profile-poke-service",
        "INTROSPECTION_CLIENT_SECRET": provider.secret,
        "LOGIN_CLIENT_IDS": f"{LOGIN_CLIENTS},{OPAQUE_CLIENT}",
    }


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


def delete_prefix(url: str, prefix: str) -> None:
    client = make_redis(url, socket_timeout=5)
    for key in client.scan_iter(match=f"{prefix}*", count=500):
        client.delete(key)
    client.close()


def integration_env(idp: Idp, redis_url: str, index: int = 0, **overrides) -> dict:
    """The environment of an app instance that talks to the real Redis and the real provider."""
    settings = {"REDIS_URL": redis_url, "OIDC_REDIRECT_URI": idp.redirect_uri(index), "LOGIN_CLIENT_IDS": LOGIN_CLIENTS}
    return app_env(idp.issuer, **{**settings, **overrides})


def import_demo_users(app) -> None:
    result = app.test_cli_runner().invoke(args=["users", "import", str(DEMO_USERS)])
    assert result.exit_code == 0, result.output


@dataclass
class LiveApp:
    url: str
    env: dict
    log_path: object


def start_live_app(env: dict, port: int, workdir, workers: int | None = 2) -> tuple:
    """The app under gunicorn on `port` with `env`, demo users imported by the real CLI."""
    subprocess.run(
        [sys.executable, "-m", "flask", "--app", "wsgi", "users", "import", str(DEMO_USERS)],
        env={**os.environ, **env},
        cwd=ROOT,
        check=True,
        capture_output=True,
    )
    log_path = workdir / f"app-{port}.log"
    server = start_gunicorn(port, env=env, log_path=log_path, workers=workers)
    return server, LiveApp(f"http://127.0.0.1:{port}", env, log_path)


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


@pytest.fixture(scope="session")
def idp(workdir):
    server, provider = start_own_idp(workdir, [free_port() for _ in range(3)])
    yield provider
    server.stop()


@pytest.fixture(scope="session")
def live_app(idp, redis_url, workdir):
    """The app under gunicorn (2 workers x 4 threads) with the short-lived-token login client."""
    # More threads than production's default, so races between and within workers get a real chance.
    env = integration_env(idp, redis_url, 1, OIDC_CLIENT_ID="profile-poke-web-short", GUNICORN_THREADS="4")
    server, live = start_live_app(env, idp.app_ports[1], workdir)
    yield live
    server.stop()
    delete_prefix(redis_url, live.env["REDIS_KEY_PREFIX"])


@pytest.fixture(scope="session")
def otlp_receiver():
    """A real OTLP/HTTP receiver decoding the protobuf the apps under test export (dev/otlp_receiver.py)."""
    receiver = Receiver().start()
    yield receiver
    receiver.stop()


@pytest.fixture
def redis(redis_url):
    client = make_redis(redis_url, socket_timeout=5)
    yield client
    client.close()
