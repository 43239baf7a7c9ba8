"""Silent sign-in (prompt=none) against the real dev provider and Redis: "the user must interact" comes
back to return_to as ?signin_error=<code>; a provider session signs in without a page; any other
error, or those errors without prompt=none, keep the error page."""

from urllib.parse import parse_qs, urlsplit

import pytest
import requests

from dev import oidc_driver
from tests.helpers.pages import error_page_message
from tests.helpers.real_services import PASSWORD
from tests.helpers.signin import callback_path, start_login

pytestmark = pytest.mark.integration


def login_url(client, **params) -> str:
    response = client.get("/auth/login", query_string=params)
    assert response.status_code == 302, response.get_data(as_text=True)
    return response.headers["Location"]


def provider_answer(http: requests.Session, url: str) -> str:
    """Where the provider sends the browser back to the app, for a request that needs no page."""
    response = http.get(url, allow_redirects=False, timeout=10)
    for _ in range(5):
        assert response.is_redirect, response.text[:300]
        location = response.headers["Location"]
        if "/auth/callback" in location:
            return location
        response = http.get(location, allow_redirects=False, timeout=10)
    raise AssertionError("too many redirects at the provider")


def test_without_a_provider_session_prompt_none_returns_to_return_to_with_login_required(app, keys_of, audit_lines):
    client = app.test_client()
    callback = provider_answer(requests.Session(), login_url(client, prompt="none", return_to="/people?tab=2"))
    assert parse_qs(urlsplit(callback).query)["error"] == ["login_required"]
    response = client.get(callback_path(callback))
    assert (response.status_code, response.headers["Location"]) == (302, "/people?tab=2&signin_error=login_required")
    assert client.get("/auth/session").json == {"authenticated": False}
    assert [key for key in keys_of(app) if ":login:" in key or ":tokens:" in key] == []
    assert [event["reason"] for event in audit_lines.events("signin.failed")] == ["silent_declined"]


def test_a_signin_error_already_in_return_to_is_replaced_not_repeated(app):
    client = app.test_client()
    url = login_url(client, prompt="none", return_to="/?signin_error=old&a=1")
    response = client.get(callback_path(provider_answer(requests.Session(), url)))
    assert response.headers["Location"] == "/?a=1&signin_error=login_required"


def test_with_a_provider_session_prompt_none_signs_in_without_any_page(app):
    http = requests.Session()  # the browser, signed in at the provider by an earlier sign-in
    first = app.test_client()
    assert first.get(callback_path(oidc_driver.login_at_idp(http, start_login(first), "bob", PASSWORD))).status_code
    client = app.test_client()
    response = client.get(callback_path(provider_answer(http, login_url(client, prompt="none", return_to="/me"))))
    assert (response.status_code, response.headers["Location"]) == (302, "/me")
    assert client.get("/auth/session").json["user"] == "bob"


@pytest.mark.parametrize("error", ["login_required", "interaction_required"])
def test_an_interaction_error_without_prompt_none_keeps_the_error_page(make_app, idp, error):
    app = make_app(OIDC_PAR="off")  # the test reads state from the redirect
    client = app.test_client()
    state = parse_qs(urlsplit(login_url(client, return_to="/x")).query)["state"][0]
    response = client.get("/auth/callback", query_string={"state": state, "error": error, "iss": idp.issuer})
    assert response.status_code == 400
    assert error_page_message(response) == f"the identity provider refused the sign-in: {error}"


def test_another_error_of_a_prompt_none_sign_in_keeps_the_error_page(make_app, idp):
    app = make_app(OIDC_PAR="off")
    client = app.test_client()
    state = parse_qs(urlsplit(login_url(client, prompt="none")).query)["state"][0]
    response = client.get("/auth/callback", query_string={"state": state, "error": "access_denied", "iss": idp.issuer})
    assert (response.status_code, error_page_message(response)) == (
        400,
        "the identity provider refused the sign-in: access_denied",
    )


def test_a_silent_error_for_another_browsers_sign_in_keeps_the_error_page(make_app, idp):
    app = make_app(OIDC_PAR="off")
    victim, attacker = app.test_client(), app.test_client()
    login_url(victim, prompt="none")
    state = parse_qs(urlsplit(login_url(attacker, prompt="none")).query)["state"][0]
    response = victim.get("/auth/callback", query_string={"state": state, "error": "login_required", "iss": idp.issuer})
    assert (response.status_code, error_page_message(response)) == (
        400,
        "the sign-in did not complete; please sign in again",
    )
