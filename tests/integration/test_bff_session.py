"""A signed-in browser session against the real provider and Redis: CSRF, which credential wins,
no token in the browser, sign-out, and the SPA code exchange."""

import base64
import hashlib
import secrets
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest
import requests

from dev import oidc_driver
from tests.helpers.real_services import PASSWORD
from tests.helpers.settings import CSRF, CSRF_HEADER
from tests.helpers.signin import signed_in_client, start_login, stored_session_tokens

pytestmark = pytest.mark.integration


def query_of(url: str) -> dict:
    return {name: values[0] for name, values in parse_qs(urlsplit(url).query).items()}


def test_cookie_calls_need_the_csrf_header(app):
    client = signed_in_client(app, "alice")
    refusal = {
        "error": {"code": "forbidden", "message": f"cookie-authenticated calls need the header {CSRF_HEADER}: 1"}
    }
    response = client.get("/api/v1/me/profile")
    assert (response.status_code, response.json) == (403, refusal)
    refused = client.post("/api/v1/pokes", json={"username": "bob"})
    assert (refused.status_code, refused.json) == (403, refusal)
    assert client.post("/api/v1/pokes", json={"username": "bob"}, headers=CSRF).json == {"success": True}


def test_the_authorization_header_decides_over_the_cookie(app, idp):
    client = signed_in_client(app, "alice")
    response = client.get("/api/v1/me/profile", headers={**CSRF, "Authorization": "Bearer junk"})
    assert (response.status_code, response.json["error"]) == (
        401,
        {"code": "invalid_token", "message": "the access token is malformed"},
    )
    bob = client.get("/api/v1/me/profile", headers={"Authorization": f"Bearer {idp.user_token('bob')}"})
    assert bob.json["data"]["handle"] == "@bob"


def test_the_public_profile_ignores_the_cookie(app):
    client = signed_in_client(app, "alice")
    response = client.get("/api/v1/users/bob")  # no X-CSRF: the cookie is neither needed nor checked here
    assert (response.status_code, response.json["handle"]) == (200, "@bob")


def test_no_token_reaches_the_browser(app, redis):
    client = signed_in_client(app, "alice")
    tokens = stored_session_tokens(app, client)
    secrets_held = [tokens["access_token"], tokens["refresh_token"], tokens["id_token"]]
    bodies = [
        client.get(path, headers=CSRF).get_data(as_text=True) for path in ("/auth/session", "/api/v1/me/profile", "/")
    ]
    for body in bodies:
        assert not any(secret in body for secret in secrets_held)
    assert all(len(cookie.value) < 100 for cookie in client._cookies.values())


def test_logout_ends_everything_and_sends_the_browser_to_end_session(app, idp, keys_of):
    http = requests.Session()
    client = signed_in_client(app, "alice", http)
    idp.reset_stats()
    response = client.post("/auth/logout", headers=CSRF)
    assert response.status_code == 200
    url = response.json["logout_url"]
    assert url.startswith(oidc_driver.discover(idp.issuer)["end_session_endpoint"] + "?")
    query = query_of(url)
    assert query["client_id"] == "profile-poke-web"
    assert query["post_logout_redirect_uri"] == app.config["OIDC_POST_LOGOUT_REDIRECT_URI"]
    assert query["id_token_hint"].count(".") == 2
    assert idp.stats()["revocation"] == 1
    assert [key for key in keys_of(app) if ":tokens:" in key or ":session:" in key] == []
    assert client.get("/auth/session").json == {"authenticated": False}
    ended = client.get("/api/v1/me/profile", headers=CSRF)
    assert (ended.status_code, ended.json["error"]["message"]) == (401, "authentication required")
    # The provider hands our random state back, as RP-Initiated Logout says.
    assert len(query["state"]) >= 16
    back = oidc_driver.confirm_logout(http, url)
    assert back == f"{app.config['OIDC_POST_LOGOUT_REDIRECT_URI']}?state={query['state']}"
    again = http.get(start_login(app.test_client()), timeout=10)
    assert 'type="password"' in again.text  # the provider session is over: it asks for the password


def test_a_form_logout_from_this_origin_is_a_303(app):
    client = signed_in_client(app, "alice")
    origin = app.config["BASE_URL"].rstrip("/")
    response = client.post("/auth/logout", headers={"Origin": origin})
    assert response.status_code == 303
    assert "id_token_hint=" in response.headers["Location"]


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"Origin": "https://evil.example"},
        {"Origin": "null"},
        {CSRF_HEADER: "0"},
        {"Sec-Fetch-Site": "cross-site"},
        {"Sec-Fetch-Site": "same-site", "Origin": "http://127.0.0.1:1"},
    ],
)
def test_logout_without_csrf_proof_changes_nothing(app, headers):
    client = signed_in_client(app, "alice")
    response = client.post("/auth/logout", headers=headers)
    assert (response.status_code, response.json["error"]["message"]) == (
        403,
        f"cookie-authenticated calls need the header {CSRF_HEADER}: 1",
    )
    assert client.get("/auth/session").json["authenticated"] is True


def test_logout_by_get_is_not_allowed(app):
    client = signed_in_client(app, "alice")
    assert client.get("/auth/logout").status_code == 405
    assert client.get("/auth/session").json["authenticated"] is True


def _spa_authorization(idp, redirect_uri):
    verifier = secrets.token_urlsafe(64)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    params = {
        "client_id": "profile-poke-web",
        "response_type": "code",
        "redirect_uri": redirect_uri,
        "scope": "openid svc:profile.private svc:interact.poke",
        "state": secrets.token_urlsafe(16),
        "code_challenge": challenge,
        "code_challenge_method": "S256",
    }
    url = f"{oidc_driver.discover(idp.issuer)['authorization_endpoint']}?{urlencode(params)}"
    callback = oidc_driver.login_at_idp(requests.Session(), url, "carol", PASSWORD)
    return query_of(callback)["code"], verifier


def test_spa_exchange_signs_in_without_returning_a_token(app, idp):
    base = app.config["BASE_URL"]
    code, verifier = _spa_authorization(idp, base)
    client = app.test_client()
    response = client.post(
        "/auth/exchange", json={"code": code, "code_verifier": verifier, "redirect_uri": base}, headers=CSRF
    )
    assert response.status_code == 200
    assert response.json["authenticated"] is True and response.json["user"] == "carol"
    assert "token" not in response.get_data(as_text=True).replace("idle_timeout", "")
    assert client.get("/api/v1/me/profile", headers=CSRF).json["data"]["handle"] == "@carol"


def test_spa_exchange_refuses_a_foreign_redirect_uri(app, idp):
    foreign = f"http://127.0.0.1:{idp.app_ports[2]}/"  # registered at the provider, not allowed here
    code, verifier = _spa_authorization(idp, foreign)
    idp.reset_stats()
    client = app.test_client()
    response = client.post(
        "/auth/exchange", json={"code": code, "code_verifier": verifier, "redirect_uri": foreign}, headers=CSRF
    )
    assert (response.status_code, response.json["error"]) == (
        400,
        {"code": "invalid_request", "message": "redirect_uri is not one this app accepts"},
    )
    assert idp.stats()["token"]["authorization_code"] == 0


@pytest.mark.parametrize("body", [None, {"code": "x"}, {"code": "x", "code_verifier": "short", "redirect_uri": "/"}])
def test_spa_exchange_validates_its_body(app, body):
    response = app.test_client().post("/auth/exchange", json=body, headers=CSRF)
    assert response.status_code == 400
    assert response.json["error"]["code"] == "invalid_request"


def test_spa_exchange_needs_the_csrf_header(app, idp):
    response = app.test_client().post("/auth/exchange", json={})
    assert (response.status_code, response.json["error"]["message"]) == (
        403,
        f"cookie-authenticated calls need the header {CSRF_HEADER}: 1",
    )
    assert idp.stats()["token"]["authorization_code"] == 0


def test_disabling_an_account_takes_effect_on_its_next_cookie_call(app):
    client = signed_in_client(app, "carol")
    assert client.get("/api/v1/me/profile", headers=CSRF).status_code == 200
    assert app.test_cli_runner().invoke(args=["users", "disable", "carol"]).exit_code == 0
    refused = client.get("/api/v1/me/profile", headers=CSRF)
    assert (refused.status_code, refused.json["error"]) == (
        403,
        {"code": "forbidden", "message": "the account is disabled"},
    )
    poke = client.post("/api/v1/pokes", json={"username": "bob"}, headers=CSRF)
    assert (poke.status_code, poke.json["error"]["message"]) == (403, "the account is disabled")
    assert app.test_cli_runner().invoke(args=["users", "enable", "carol"]).exit_code == 0
    assert client.get("/api/v1/me/profile", headers=CSRF).json["data"]["handle"] == "@carol"
