"""Faults: Redis stopped or slowed, the identity provider gone. Only 503 `unavailable`, within the
configured timeouts, and recovery without a restart."""

import threading
import time

import pytest
import redis as redis_py
import requests

from app import create_app
from config import Config
from dev import oidc_driver
from dev.services import free_port, start_redis
from tests.helpers.pages import error_page_message
from tests.helpers.real_services import PASSWORD, import_demo_users, integration_env, start_own_idp
from tests.helpers.settings import SESSION_COOKIE
from tests.helpers.signin import callback_path, start_login

pytestmark = pytest.mark.integration
STORAGE_DOWN = {"code": "unavailable", "message": "the service's storage is unavailable"}


def test_redis_down_is_a_503_within_the_timeout_and_recovery_needs_no_restart(workdir, idp):
    port = free_port()
    server = start_redis(port, workdir=workdir / "faulty-redis")
    app = create_app(Config(integration_env(idp, f"redis://127.0.0.1:{port}/0", REDIS_SOCKET_TIMEOUT="0.5")))
    import_demo_users(app)
    client = app.test_client()
    token = {"Authorization": f"Bearer {idp.user_token('alice')}"}
    assert client.get("/api/v1/me/profile", headers=token).status_code == 200

    server.stop()
    for path in ("/api/v1/me/profile", "/api/v1/users/bob", "/auth/login"):
        started = time.monotonic()
        response = client.get(path, headers=token)
        assert time.monotonic() - started < 2
        assert response.status_code == 503
        assert response.headers["Retry-After"]
        if path.startswith("/api/"):
            assert response.json["error"] == STORAGE_DOWN
        else:
            assert error_page_message(response) == STORAGE_DOWN["message"]
    refused = client.post("/api/v1/pokes", json={"username": "bob"}, headers=token)
    assert (refused.status_code, refused.json["error"]) == (503, STORAGE_DOWN)
    ready = client.get("/readyz")
    assert (ready.status_code, ready.json["redis"]) == (503, "unavailable")
    client.set_cookie(SESSION_COOKIE, "some-session")  # /auth routes open the session before any view runs
    broken = client.get("/auth/session")
    assert (broken.status_code, broken.json["error"]) == (503, STORAGE_DOWN)
    assert broken.headers["Cache-Control"] == "no-store"
    assert "frame-ancestors 'none'" in broken.headers["Content-Security-Policy"]

    server = start_redis(port, workdir=workdir / "faulty-redis")
    try:
        import_demo_users(app)  # the restarted server kept nothing on disk
        assert client.get("/api/v1/me/profile", headers=token).status_code == 200
    finally:
        server.stop()


def test_slow_redis_costs_at_most_the_socket_timeout(workdir, idp):
    port = free_port()
    server = start_redis(port, workdir=workdir / "slow-redis", extra_args=("--enable-debug-command", "yes"))
    try:
        app = create_app(Config(integration_env(idp, f"redis://127.0.0.1:{port}/0", REDIS_SOCKET_TIMEOUT="0.5")))
        import_demo_users(app)
        client = app.test_client()
        assert client.get("/api/v1/users/bob").status_code == 200
        sleeper = threading.Thread(target=lambda: redis_py.Redis(port=port).execute_command("DEBUG", "SLEEP", "3"))
        sleeper.start()
        time.sleep(0.2)
        started = time.monotonic()
        response = client.get("/api/v1/users/bob")
        elapsed = time.monotonic() - started
        sleeper.join()
        assert (response.status_code, response.json["error"]) == (503, STORAGE_DOWN)
        assert elapsed < 1.5
        assert client.get("/api/v1/users/bob").status_code == 200
    finally:
        server.stop()


def test_with_the_provider_gone_bearer_calls_work_from_cached_keys_and_sign_in_fails_clearly(workdir, redis_url):
    server, provider = start_own_idp(workdir, [1])
    try:
        app = create_app(Config(integration_env(provider, redis_url)))
        import_demo_users(app)
        client = app.test_client()
        seen, unseen = provider.user_token("alice"), provider.user_tokens("bob")["access_token"]
        assert client.get("/api/v1/me/profile", headers={"Authorization": f"Bearer {seen}"}).status_code == 200
        callback = oidc_driver.login_at_idp(requests.Session(), start_login(client), "carol", PASSWORD)
    finally:
        server.stop()
    assert client.get("/api/v1/me/profile", headers={"Authorization": f"Bearer {unseen}"}).status_code == 200
    failed = client.get(callback_path(callback))  # the code exchange cannot reach the provider
    assert failed.status_code == 503
    assert "identity provider is unavailable" in failed.get_data(as_text=True)
    assert client.get("/auth/session").json == {"authenticated": False}
    fresh = create_app(Config(integration_env(provider, redis_url, IDP_TIMEOUT="1"))).test_client()
    page = fresh.get("/auth/login")  # no discovery document cached: nowhere to send the browser
    assert page.status_code == 503
    assert "identity provider is unavailable" in page.get_data(as_text=True)
