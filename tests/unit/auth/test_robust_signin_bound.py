"""Beyond the bound on sign-ins in progress, a new sign-in gets the 503 page with `Retry-After`,
never a 500, and leaves nothing behind (issue 19, point 5)."""

import pytest

from app import create_app
from config import Config, ConfigError
from tests.helpers.log_capture import LineCapture
from tests.helpers.pages import error_page_message
from tests.helpers.settings import app_env

FULL = "too many sign-ins are in progress; please try again shortly"


@pytest.fixture
def app(stub_issuer, fake_redis):
    return create_app(Config(app_env(stub_issuer.issuer, MAX_PENDING_SIGNINS="2")), redis=fake_redis)


def test_a_sign_in_beyond_the_bound_gets_the_503_page_with_retry_after(app, fake_redis):
    assert [app.test_client().get("/auth/login").status_code for _ in range(2)] == [302, 302]
    keys = sorted(fake_redis.scan_iter(match="*login*"))
    refused = app.test_client().get("/auth/login")
    assert (refused.status_code, error_page_message(refused)) == (503, FULL)
    assert 599 <= int(refused.headers["Retry-After"]) <= 600
    assert "Set-Cookie" not in refused.headers
    assert sorted(fake_redis.scan_iter(match="*login*")) == keys


def test_the_bound_on_sign_ins_in_progress_is_at_least_one():
    with pytest.raises(ConfigError, match="MAX_PENDING_SIGNINS must be at least 1"):
        Config(app_env("https://issuer.example", MAX_PENDING_SIGNINS="0"))


def test_a_sign_in_beyond_the_bound_is_one_rate_limit_audit_event(app):
    app.test_client().get("/auth/login")
    app.test_client().get("/auth/login")
    capture = LineCapture().attach("audit")
    try:
        assert app.test_client().get("/auth/login", environ_base={"REMOTE_ADDR": "203.0.113.9"}).status_code == 503
    finally:
        capture.detach("audit")
    [event] = capture.events()
    assert (event["event"], event["reason"], event["remote"]) == ("ratelimit.hit", "signins_total", "203.0.113.9")
