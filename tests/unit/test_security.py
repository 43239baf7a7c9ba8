"""The X-CSRF rule, in its one home and at each door it guards (API cookie calls, exchange, sign-out)."""

import pytest
from werkzeug.datastructures import Headers

from app.security import sent_csrf_header
from tests.helpers.settings import CSRF


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
