"""Redis unreachable: 503 `unavailable` within the socket timeout, and recovery without a restart."""

import time

import pytest

from app import create_app
from config import Config
from dev.services import free_port, start_redis
from tests.integration.conftest import import_demo_users, integration_env

pytestmark = pytest.mark.integration


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
            assert response.json["error"]["code"] == "unavailable"
        else:
            assert "storage is unavailable" in response.get_data(as_text=True)
    refused = client.post("/api/v1/pokes", json={"username": "bob"}, headers=token)
    assert refused.status_code == 503

    server = start_redis(port, workdir=workdir / "faulty-redis")
    try:
        import_demo_users(app)  # the restarted server kept nothing on disk
        assert client.get("/api/v1/me/profile", headers=token).status_code == 200
    finally:
        server.stop()
