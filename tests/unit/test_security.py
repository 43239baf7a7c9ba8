"""The X-CSRF rule, in its one home and at each door it guards (API cookie calls, exchange, sign-out);
the headers every response carries, and `no-store` on the private ones."""

import sys
from urllib.parse import urlsplit

import pytest
from werkzeug.datastructures import Headers

from app import create_app
from app.extensions import services
from app.security import FixedHeaders, sent_csrf_header
from app.store.profile_record import Profile
from config import Config
from tests.helpers.settings import CSRF, app_env


@pytest.mark.parametrize(
    ("headers", "sent"),
    [
        ({"X-CSRF": "1"}, True),
        (Headers([("x-csrf", "1")]), True),
        ({}, False),
        ({"X-CSRF": "0"}, False),
        ({"X-CSRF": "true"}, False),
        ({"X-CSRF": "1 "}, False),
        ({"X-CSRF": ""}, False),
    ],
)
def test_only_x_csrf_1_counts(headers, sent):
    assert sent_csrf_header(headers) is sent


@pytest.fixture
def cookie_client(unit_app, unit_client):
    unit_client.set_cookie(unit_app.config["SESSION_COOKIE_NAME"], "some-session")
    return unit_client


def test_a_cookie_call_without_the_header_is_refused_before_the_session_is_read(cookie_client):
    response = cookie_client.get("/api/v1/me/profile")
    assert response.status_code == 403
    assert response.json["error"] == {
        "code": "forbidden",
        "message": "cookie-authenticated calls need the header X-CSRF: 1",
    }
    with_header = cookie_client.get("/api/v1/me/profile", headers=CSRF)
    assert with_header.status_code == 401
    assert with_header.json["error"]["message"] == "the session has ended; sign in again"


def test_the_code_exchange_needs_the_header(cookie_client):
    response = cookie_client.post("/auth/exchange", json={})
    assert response.status_code == 403
    assert response.json["error"]["message"] == "cookie-authenticated calls need the header X-CSRF: 1"
    assert cookie_client.post("/auth/exchange", json={}, headers=CSRF).status_code == 400


def test_sign_out_needs_the_header_or_a_same_origin_form(cookie_client):
    response = cookie_client.post("/auth/logout")
    assert response.status_code == 403
    assert response.json["error"]["message"] == "cookie-authenticated calls need the header X-CSRF: 1"


def test_every_response_carries_the_fixed_headers_with_the_providers_origin_in_form_action(stub_issuer, fake_redis):
    issuer = stub_issuer.issuer  # http://127.0.0.1:<port>/realms/...: the origin is scheme, host and port
    origin = "{0.scheme}://{0.netloc}".format(urlsplit(issuer))
    app = create_app(Config(app_env(issuer)), redis=fake_redis)
    for path in ("/", "/api/v1/users/nobody", "/nowhere"):
        headers = app.test_client().get(path).headers
        assert headers["Content-Security-Policy"] == (
            "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
            f"connect-src 'self'; form-action 'self' {origin}; frame-ancestors 'none'; "
            "base-uri 'none'; object-src 'none'"
        ), path
        assert headers["X-Frame-Options"] == "DENY", path
        assert headers["X-Content-Type-Options"] == "nosniff", path
        assert headers["Referrer-Policy"] == "no-referrer", path
        assert headers.getlist("X-Frame-Options") == ["DENY"], path  # appended once, never twice


@pytest.mark.parametrize(
    ("path", "cache_control"),
    [
        ("/auth/session", "no-store"),
        ("/api/v1/users/nobody", "no-store"),
        ("/nowhere", None),
        ("/authx", None),  # only the paths under the prefixes are private
        ("/api/v1", None),
        ("/", "no-cache"),  # a view's own Cache-Control is kept
    ],
)
def test_no_store_goes_on_private_paths_only_and_never_over_a_views_own(unit_client, path, cache_control):
    assert unit_client.get(path).headers.get("Cache-Control") == cache_control


def test_the_fixed_headers_pass_an_error_on_to_the_server_with_the_response():
    started = []

    def failing_app(environ, start_response):
        try:
            raise RuntimeError("mid-response")
        except RuntimeError:
            start_response("500 INTERNAL SERVER ERROR", [("Content-Type", "text/plain")], sys.exc_info())
        return [b""]

    wrapped = FixedHeaders(failing_app, [("X-Frame-Options", "DENY")])
    wrapped({}, lambda status, headers, *exc_info: started.append((status, headers, exc_info)))
    ((status, headers, exc_info),) = started
    assert status == "500 INTERNAL SERVER ERROR"
    assert headers == [("Content-Type", "text/plain"), ("X-Frame-Options", "DENY")]
    assert len(exc_info) == 1 and exc_info[0][0] is RuntimeError


def test_the_fixed_headers_call_start_response_without_an_error_as_pep_3333_allows():
    started = []

    def plain_app(environ, start_response):
        start_response("200 OK", [])
        return [b""]

    FixedHeaders(plain_app, [("X-Frame-Options", "DENY")])({}, lambda *args: started.append(args))
    assert started == [("200 OK", [("X-Frame-Options", "DENY")])]


def test_a_private_path_keeps_the_cache_control_its_view_chose(unit_app, unit_client):
    with unit_app.app_context():
        services().store.profiles.put(Profile("alice", "@alice", "Alice"))
    response = unit_client.get("/api/v1/users/alice")
    assert (response.status_code, response.headers["Cache-Control"]) == (200, "no-cache")  # the public profile
