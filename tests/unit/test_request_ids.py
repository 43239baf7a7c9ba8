"""X-Request-ID: a valid one (at most 200 ASCII letters, digits and `+ / = - _ .`) is kept, anything
else replaced; every response carries it, and so does every log and audit line of its request."""

import json
import uuid

import pytest

from app import create_app
from app.extensions import make_redis
from config import Config
from tests.helpers.settings import SESSION_COOKIE, app_env

MADE = 32  # hex characters of an id the app makes


def test_a_request_id_is_kept_when_valid(unit_client):
    for given in (str(uuid.uuid4()), "a" * 200, "Ab0+/=-_.", "req-42"):
        assert unit_client.get("/healthz", headers={"X-Request-ID": given}).headers["X-Request-ID"] == given


@pytest.mark.parametrize(
    "given",
    [
        pytest.param("a" * 201, id="201 characters"),
        pytest.param("has space", id="a space"),
        pytest.param("caf\u00e9-id", id="non-ASCII"),
        pytest.param("ok\r\nSet-Cookie: pwned=1", id="CRLF injection"),
        pytest.param("semi;colon", id="a semicolon"),
        pytest.param("", id="empty"),
    ],
)
def test_an_invalid_request_id_is_replaced_by_a_made_one(unit_app, given):
    response = unit_app.test_client().get("/healthz", environ_base={"HTTP_X_REQUEST_ID": given})
    made = response.headers["X-Request-ID"]
    assert made != given and len(made) == MADE and int(made, 16) >= 0
    assert "pwned" not in str(response.headers)


def app_with_failures(issuer: str, fake_redis, **settings):
    """An app whose /api/v1/explode fails unexpectedly (a 500) and whose login allows one a minute."""
    app = create_app(Config(app_env(issuer, RATE_LIMIT_LOGIN="1 per minute", **settings)), redis=fake_redis)

    @app.get("/api/v1/explode")
    def explode():
        raise RuntimeError("boom")

    return app


def without_redis(issuer: str, **settings):
    """A client of an app whose Redis refuses connections, holding a session cookie it cannot open."""
    app = create_app(
        Config(app_env(issuer, REDIS_SOCKET_TIMEOUT="0.5", **settings)),
        redis=make_redis("redis://127.0.0.1:1/0", socket_timeout=0.5),
    )
    client = app.test_client()
    client.set_cookie(SESSION_COOKIE, "a-session-cookie-that-cannot-be-opened")
    return client


def test_every_kind_of_response_carries_the_request_id(stub_issuer, fake_redis):
    client = app_with_failures(stub_issuer.issuer, fake_redis).test_client()
    assert client.get("/auth/login").status_code == 302
    down = without_redis(stub_issuer.issuer)
    answers = {
        "404 outside every blueprint": client.get("/no/such/page"),
        "404 under /api": client.get("/api/v1/nope"),
        "405": client.put("/healthz"),
        "500": client.get("/api/v1/explode"),
        "429": client.get("/auth/login"),
        "503 Redis down": down.get("/api/v1/users/bob"),
        "503 session cannot be opened": down.get("/auth/session"),
    }
    statuses = {name: response.status_code for name, response in answers.items()}
    assert statuses == {
        "404 outside every blueprint": 404,
        "404 under /api": 404,
        "405": 405,
        "500": 500,
        "429": 429,
        "503 Redis down": 503,
        "503 session cannot be opened": 503,
    }
    for name, response in answers.items():
        assert len(response.headers.get("X-Request-ID", "")) == MADE, name


@pytest.mark.parametrize("log_level", ["INFO", "WARNING"])
def test_a_given_request_id_comes_back_on_a_failure_whatever_the_log_level(
    stub_issuer, fake_redis, audit_lines, log_level
):
    client = app_with_failures(stub_issuer.issuer, fake_redis, LOG_LEVEL=log_level).test_client()
    assert client.get("/api/v1/explode", headers={"X-Request-ID": "kept-1"}).headers["X-Request-ID"] == "kept-1"
    # Opening the session fails before any before_request hook runs: the id is still the one given.
    unopened = without_redis(stub_issuer.issuer, LOG_LEVEL=log_level).get(
        "/auth/session", headers={"X-Request-ID": "kept-2"}
    )
    assert (unopened.status_code, unopened.headers["X-Request-ID"]) == (503, "kept-2")
    assert [line for line in audit_lines.lines if "finalizing failed" in line] == []  # saving no session is no error


def test_the_access_line_the_error_line_and_the_audit_line_carry_the_responses_id(
    stub_issuer, fake_redis, capfd, audit_lines
):
    client = app_with_failures(stub_issuer.issuer, fake_redis, LOG_LEVEL="INFO").test_client()
    failed = client.get("/api/v1/explode")
    client.get("/auth/login")
    limited = client.get("/auth/login", headers={"X-Request-ID": "heroku-abc.123"})
    assert (failed.status_code, limited.status_code) == (500, 429)
    stdout = [json.loads(line) for line in capfd.readouterr().out.splitlines() if line.startswith("{")]
    access = {entry["path"]: entry["request_id"] for entry in stdout if "path" in entry and entry["status"] >= 429}
    (error,) = [json.loads(line) for line in audit_lines.lines if json.loads(line)["message"] == "unexpected failure"]
    (event,) = audit_lines.events("ratelimit.hit")
    assert access["/api/v1/explode"] == error["request_id"] == failed.headers["X-Request-ID"]
    assert access["/auth/login"] == event["request_id"] == "heroku-abc.123"
    assert event["remote"] == error["remote"] == "127.0.0.1"
