"""Platform probes, the request log line, and forwarded headers trusted only as configured."""

import json

import pytest

from app import create_app
from app.extensions import make_redis
from config import Config
from tests.helpers.settings import app_env


def test_healthz_and_readyz_answer_when_everything_is_up(unit_client):
    assert unit_client.get("/healthz").json == {"status": "ok"}
    ready = unit_client.get("/readyz")
    assert (ready.status_code, ready.json) == (200, {"status": "ready", "redis": "ok", "identity_provider": "ok"})


def test_readyz_fails_when_the_provider_cannot_be_reached(fake_redis):
    app = create_app(Config(app_env("http://127.0.0.1:1/realms/none", IDP_TIMEOUT="0.5")), redis=fake_redis)
    ready = app.test_client().get("/readyz")
    assert (ready.status_code, ready.json["identity_provider"]) == (503, "unavailable")


def log_lines(capfd) -> list[dict]:
    return [json.loads(line) for line in capfd.readouterr().out.splitlines() if line.startswith("{")]


@pytest.mark.parametrize(("hops", "remote"), [("0", "127.0.0.1"), ("1", "203.0.113.7")])
def test_forwarded_for_is_trusted_only_for_the_configured_hops(stub_issuer, fake_redis, capfd, hops, remote):
    app = create_app(Config(app_env(stub_issuer.issuer, PROXY_HOPS=hops, LOG_LEVEL="INFO")), redis=fake_redis)
    app.test_client().get("/healthz", headers={"X-Forwarded-For": "203.0.113.7", "X-Request-ID": "req-42"})
    (line,) = [entry for entry in log_lines(capfd) if entry.get("path") == "/healthz"]
    assert line["remote"] == remote
    assert line["request_id"] == "req-42"
    assert {"method", "status", "duration_ms", "user"} <= set(line)


def test_a_request_id_is_made_when_none_is_given(unit_client):
    assert len(unit_client.get("/healthz").headers["X-Request-ID"]) == 32


@pytest.mark.parametrize(("verify", "expected"), [(True, "required"), (False, "none")])
def test_tls_certificate_verification_is_configurable(verify, expected):
    client = make_redis("rediss://:secret@127.0.0.1:1/0", socket_timeout=0.1, tls_verify=verify)
    assert client.connection_pool.connection_kwargs.get("ssl_cert_reqs", "required") == expected
    assert client.connection_pool.connection_class.__name__ == "SSLConnection"
