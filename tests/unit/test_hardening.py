"""Small hardening rules, fast: HSTS, nested JSON, return_to length, msgpack-only session records,
rate-limit and out-of-memory answers (fakeredis; the real Redis versions are integration tests)."""

import logging
import pickle
from urllib.parse import parse_qs, urlsplit

import pytest
import redis as redis_py

from app import create_app
from app.auth.flow import safe_return_to
from app.sessions.interface import MsgpackOnly
from config import Config, ConfigError
from tests.helpers.settings import CSRF, app_env

HSTS = "max-age=63072000; includeSubDomains"


@pytest.mark.parametrize("secure", [True, False])
def test_hsts_is_on_every_response_exactly_when_cookies_are_secure(stub_issuer, fake_redis, secure):
    app = create_app(Config(app_env(stub_issuer.issuer, SESSION_COOKIE_SECURE=str(secure).lower())), redis=fake_redis)
    client = app.test_client()
    for path in ("/", "/api/v1/users/nobody", "/auth/session", "/static/demo.js", "/healthz", "/nowhere"):
        response = client.get(path, base_url="https://localhost")
        assert response.headers.get("Strict-Transport-Security") == (HSTS if secure else None), path


def test_deeply_nested_json_to_exchange_is_a_400_without_a_traceback(unit_client, caplog):
    caplog.set_level(logging.DEBUG)
    body = "[" * 30_000 + "]" * 30_000  # inside MAX_CONTENT_LENGTH
    response = unit_client.post("/auth/exchange", data=body, headers={**CSRF, "Content-Type": "application/json"})
    assert response.status_code == 400
    assert response.json["error"] == {
        "code": "invalid_request",
        "message": "invalid exchange request: JSON nested too deeply",
    }
    assert "Traceback" not in caplog.text and "RecursionError" not in caplog.text


def test_a_return_to_longer_than_512_characters_falls_back_to_the_root():
    assert safe_return_to("/" + "a" * 511) == "/" + "a" * 511
    assert safe_return_to("/" + "a" * 512) == "/"


def test_the_session_serializer_never_unpickles():
    class Boom:
        def __reduce__(self):
            return (pytest.fail, ("pickle.loads ran attacker code",))

    serializer = MsgpackOnly()
    assert serializer.decode(pickle.dumps(Boom())) is None
    assert serializer.decode(b'{"user": "mallory"}') is None  # JSON, which Flask-Session would also take
    assert serializer.decode(serializer.encode({"user": "alice"})) == {"user": "alice"}


def test_rate_limits_are_validated_at_start(stub_issuer):
    with pytest.raises(ConfigError, match="RATE_LIMIT_LOGIN must be a rate limit"):
        Config(app_env(stub_issuer.issuer, RATE_LIMIT_LOGIN="lots"))


def test_too_many_sign_in_starts_get_a_429_page_with_retry_after(stub_issuer, fake_redis):
    app = create_app(Config(app_env(stub_issuer.issuer, RATE_LIMIT_LOGIN="2 per minute")), redis=fake_redis)
    client = app.test_client()
    assert [client.get("/auth/login").status_code for _ in range(2)] == [302, 302]
    refused = client.get("/auth/login")
    assert refused.status_code == 429
    assert 0 < int(refused.headers["Retry-After"]) <= 60
    assert "too many requests from this address" in refused.get_data(as_text=True)
    assert refused.headers["Cache-Control"] == "no-store"


def test_redis_out_of_memory_is_a_503_not_a_500(unit_app, fake_redis, monkeypatch):
    def refuse(*args, **kwargs):
        raise redis_py.exceptions.OutOfMemoryError("command not allowed when used memory > 'maxmemory'.")

    client = unit_app.test_client()
    state = parse_qs(urlsplit(client.get("/auth/login").headers["Location"]).query)["state"][0]
    monkeypatch.setattr(fake_redis, "set", refuse)
    response = client.get("/auth/callback", query_string={"state": state, "code": "a-code"})  # it claims the state
    assert response.status_code == 503
    assert response.headers["Retry-After"] == "5"
    assert "storage is full" in response.get_data(as_text=True)


def test_the_default_rate_limits_are_30_sign_ins_and_10_exchanges_a_minute_and_ten_times_that_a_network(stub_issuer):
    env = {k: v for k, v in app_env(stub_issuer.issuer).items() if not k.startswith("RATE_LIMIT_")}
    config = Config(env)
    assert (config.RATE_LIMIT_LOGIN, config.RATE_LIMIT_EXCHANGE) == ("30 per minute", "10 per minute")
    assert (config.RATE_LIMIT_LOGIN_NETWORK, config.RATE_LIMIT_EXCHANGE_NETWORK) == ("300 per minute", "100 per minute")


@pytest.mark.parametrize("setting", ["RATE_LIMIT_LOGIN_NETWORK", "RATE_LIMIT_EXCHANGE_NETWORK"])
def test_a_network_rate_limit_is_one_window_because_a_48_gets_twice_it(stub_issuer, setting):
    with pytest.raises(ConfigError, match=f"{setting} must be one rate limit"):
        Config(app_env(stub_issuer.issuer, **{setting: "300 per minute; 1000 per hour"}))
