"""The backend-for-frontend sign-in against the real provider and Redis: PKCE, state, cookies,
CSRF, the SPA code exchange, and sign-out."""

import base64
import hashlib
import secrets
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest
import requests

from dev import oidc_driver
from tests.integration.conftest import (
    PASSWORD,
    callback_path,
    cookie_value,
    signed_in_client,
    start_login,
)

pytestmark = pytest.mark.integration
CSRF = {"X-CSRF": "1"}


def query_of(url: str) -> dict:
    return {name: values[0] for name, values in parse_qs(urlsplit(url).query).items()}


def test_login_redirects_to_the_discovered_authorization_endpoint_with_pkce_s256(client, idp):
    url = start_login(client)
    discovery = oidc_driver.discover(idp.issuer)
    assert url.startswith(discovery["authorization_endpoint"] + "?")
    query = query_of(url)
    assert query["client_id"] == "profile-poke-web"
    assert query["response_type"] == "code"
    assert query["redirect_uri"] == idp.redirect_uri()
    assert query["code_challenge_method"] == "S256"
    assert len(query["code_challenge"]) == 43 and "=" not in query["code_challenge"]
    assert set(query["scope"].split()) == {"openid", "svc:profile.private", "svc:interact.poke"}
    assert len(query["state"]) >= 32 and len(query["nonce"]) >= 32
    assert "client_secret" not in query


def test_sign_in_creates_a_session_and_the_cookie_calls_the_api(app):
    client = signed_in_client(app, "alice")
    session = client.get("/auth/session").json
    assert session["authenticated"] is True
    assert session["user"] == "alice"
    assert "svc:interact.poke" in session["scopes"]
    response = client.get("/api/v1/me/profile", headers=CSRF)
    assert response.status_code == 200
    assert response.json["data"]["handle"] == "@alice"


def test_the_callback_redirects_to_the_guarded_return_to(app, idp):
    client = app.test_client()
    authorize = start_login(client, return_to="/profile?tab=pokes")
    callback = oidc_driver.login_at_idp(requests.Session(), authorize, "alice", PASSWORD)
    response = client.get(callback_path(callback))
    assert response.headers["Location"] == "/profile?tab=pokes"


@pytest.mark.parametrize(
    "target",
    ["//evil.example", "https://evil.example", "/\\evil.example", "\\\\evil.example", "HtTpS://evil.example",
     "//evil.example/%2F..", "/%5Cevil.example/../", "javascript:alert(1)", "/\tevil", " /x", ""],
)  # fmt: skip
def test_open_redirects_through_return_to_fall_back_to_the_root(app, target):
    client = app.test_client()
    authorize = start_login(client, return_to=target)
    callback = oidc_driver.login_at_idp(requests.Session(), authorize, "bob", PASSWORD)
    location = client.get(callback_path(callback)).headers["Location"]
    assert location == "/" or (location.startswith("/") and not location.startswith(("//", "/\\")))
    assert urlsplit(location).netloc == ""


def test_the_pending_login_lives_in_its_own_short_lived_key(app, idp, redis):
    client = app.test_client()
    state = query_of(start_login(client))["state"]
    key = f"{app.config['REDIS_KEY_PREFIX']}login:{state}"
    assert 0 < redis.ttl(key) <= 600
    stored = redis.get(key).decode()
    assert "verifier" in stored


def test_the_code_challenge_is_the_s256_of_the_stored_verifier(app, redis):
    import json

    client = app.test_client()
    query = query_of(start_login(client))
    pending = json.loads(redis.get(f"{app.config['REDIS_KEY_PREFIX']}login:{query['state']}"))
    verifier = pending["verifier"]
    assert 43 <= len(verifier) <= 128
    digest = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    assert query["code_challenge"] == digest


def test_two_tabs_can_sign_in_at_once(app):
    client = app.test_client()
    first, second = start_login(client), start_login(client)
    http = requests.Session()
    second_callback = oidc_driver.login_at_idp(http, second, "alice", PASSWORD)
    first_callback = oidc_driver.login_at_idp(http, first, "alice", PASSWORD)
    assert client.get(callback_path(second_callback)).status_code == 302
    assert client.get(callback_path(first_callback)).status_code == 302
    assert client.get("/auth/session").json["user"] == "alice"


def test_a_replayed_callback_fails_without_a_second_exchange(app, idp):
    client = app.test_client()
    callback = oidc_driver.login_at_idp(requests.Session(), start_login(client), "alice", PASSWORD)
    assert client.get(callback_path(callback)).status_code == 302
    idp.reset_stats()
    replay = app.test_client()
    replay.set_cookie("pp_login", cookie_value(client, "pp_login"))
    response = replay.get(callback_path(callback))
    assert response.status_code == 400
    assert idp.stats()["token"]["authorization_code"] == 0
    assert replay.get("/auth/session").json == {"authenticated": False}


@pytest.mark.parametrize("mangle", ["mismatch", "missing"])
def test_wrong_or_missing_state_fails_without_an_exchange(app, idp, keys_of, mangle):
    client = app.test_client()
    callback = oidc_driver.login_at_idp(requests.Session(), start_login(client), "alice", PASSWORD)
    query = query_of(callback)
    if mangle == "mismatch":
        query["state"] = secrets.token_urlsafe(32)
    else:
        del query["state"]
    idp.reset_stats()
    response = client.get(f"/auth/callback?{urlencode(query)}")
    assert response.status_code == 400
    assert "sign in again" in response.get_data(as_text=True)
    assert idp.stats()["token"]["authorization_code"] == 0
    assert not [key for key in keys_of(app) if ":tokens:" in key or ":session:" in key]


def test_a_callback_with_another_browsers_state_fails(app, idp):
    victim = app.test_client()
    attacker = app.test_client()
    callback = oidc_driver.login_at_idp(requests.Session(), start_login(attacker), "mallory", PASSWORD)
    start_login(victim)  # the victim has a login cookie of its own
    idp.reset_stats()
    response = victim.get(callback_path(callback))
    assert response.status_code == 400
    assert "another browser" in response.get_data(as_text=True)
    assert idp.stats()["token"]["authorization_code"] == 0


def test_an_error_callback_shows_the_escaped_error_and_exchanges_nothing(app, idp):
    client = app.test_client()
    state = query_of(start_login(client))["state"]
    idp.reset_stats()
    response = client.get("/auth/callback", query_string={
        "state": state, "error": "access_denied", "error_description": "<script>alert(1)</script> said no",
    })  # fmt: skip
    page = response.get_data(as_text=True)
    assert response.status_code == 400
    assert "access_denied" in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt; said no" in page
    assert "<script>alert" not in page
    assert idp.stats()["token"]["authorization_code"] == 0
    assert client.get(f"/auth/callback?state={state}&code=x").status_code == 400  # the state was used up


def test_a_withheld_scope_means_no_session(make_app, keys_of):
    app = make_app(OIDC_CLIENT_ID="profile-poke-web-limited")
    client = app.test_client()
    callback = oidc_driver.login_at_idp(requests.Session(), start_login(client), "alice", PASSWORD)
    response = client.get(callback_path(callback))
    assert response.status_code == 403
    assert "did not grant svc:interact.poke" in response.get_data(as_text=True)
    assert client.get("/auth/session").json == {"authenticated": False}
    assert not [key for key in keys_of(app) if ":tokens:" in key or ":session:" in key]


def test_a_disabled_account_cannot_sign_in(app, keys_of):
    client = app.test_client()
    callback = oidc_driver.login_at_idp(requests.Session(), start_login(client), "dave", PASSWORD)
    response = client.get(callback_path(callback))
    assert response.status_code == 403
    assert "disabled" in response.get_data(as_text=True)
    assert not [key for key in keys_of(app) if ":tokens:" in key]


def test_the_session_id_changes_at_sign_in(app):
    client = signed_in_client(app, "bob")
    before = cookie_value(client, "pp_session")
    authorize = start_login(client)
    callback = oidc_driver.login_at_idp(requests.Session(), authorize, "alice", PASSWORD)
    client.get(callback_path(callback))
    after = cookie_value(client, "pp_session")
    assert before and after and before != after
    stale = app.test_client()
    stale.set_cookie("pp_session", before)
    assert stale.get("/auth/session").json == {"authenticated": False}
    assert stale.get("/api/v1/me/profile", headers=CSRF).status_code == 401


def test_production_cookie_flags(make_app, idp):
    app = make_app(SESSION_COOKIE_SECURE="true")
    client = app.test_client()
    login = client.get("/auth/login", base_url="https://localhost")
    login_cookie = login.headers["Set-Cookie"]
    assert login_cookie.startswith("__Host-login=")
    callback = oidc_driver.login_at_idp(requests.Session(), login.headers["Location"], "alice", PASSWORD)
    response = client.get(callback_path(callback), base_url="https://localhost")
    session_cookie = next(c for c in response.headers.getlist("Set-Cookie") if c.startswith("__Host-session="))
    attributes = {part.strip().split("=")[0].lower() for part in session_cookie.split(";")[1:]}
    for cookie in (login_cookie, session_cookie):
        assert "Secure" in cookie and "HttpOnly" in cookie and "SameSite=Lax" in cookie and "Path=/" in cookie
        assert "Domain" not in cookie
    assert "expires" not in attributes  # a browser-session cookie; the server enforces the lifetimes


def test_cookie_calls_need_the_csrf_header(app):
    client = signed_in_client(app, "alice")
    response = client.get("/api/v1/me/profile")
    assert response.status_code == 403
    assert response.json["error"]["code"] == "forbidden"
    refused = client.post("/api/v1/pokes", json={"username": "bob"})
    assert refused.status_code == 403
    assert client.post("/api/v1/pokes", json={"username": "bob"}, headers=CSRF).json == {"success": True}


def test_the_authorization_header_decides_over_the_cookie(app, idp):
    client = signed_in_client(app, "alice")
    response = client.get("/api/v1/me/profile", headers={**CSRF, "Authorization": "Bearer junk"})
    assert response.status_code == 401
    bob = client.get("/api/v1/me/profile", headers={"Authorization": f"Bearer {idp.user_token('bob')}"})
    assert bob.json["data"]["handle"] == "@bob"


def test_the_public_profile_ignores_the_cookie(app):
    client = signed_in_client(app, "alice")
    assert client.get("/api/v1/users/bob").status_code == 200


def test_no_token_reaches_the_browser(app, redis):
    client = signed_in_client(app, "alice")
    ref_keys = [k for k in redis.scan_iter(match=f"{app.config['REDIS_KEY_PREFIX']}tokens:*")]
    import json

    tokens = json.loads(redis.get(ref_keys[0]))
    secrets_held = [tokens["access_token"], tokens["refresh_token"], tokens["id_token"]]
    bodies = [client.get(path, headers=CSRF).get_data(as_text=True)
              for path in ("/auth/session", "/api/v1/me/profile", "/")]  # fmt: skip
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
    assert client.get("/api/v1/me/profile", headers=CSRF).status_code == 401
    assert oidc_driver.confirm_logout(http, url) == app.config["OIDC_POST_LOGOUT_REDIRECT_URI"]
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
        {"X-CSRF": "0"},
        {"Sec-Fetch-Site": "cross-site"},
        {"Sec-Fetch-Site": "same-site", "Origin": "http://127.0.0.1:1"},
    ],
)
def test_logout_without_csrf_proof_changes_nothing(app, headers):
    client = signed_in_client(app, "alice")
    response = client.post("/auth/logout", headers=headers)
    assert response.status_code == 403
    assert client.get("/auth/session").json["authenticated"] is True


def test_logout_by_get_is_not_allowed(app):
    client = signed_in_client(app, "alice")
    assert client.get("/auth/logout").status_code == 405
    assert client.get("/auth/session").json["authenticated"] is True


def _spa_authorization(idp, redirect_uri):
    verifier = secrets.token_urlsafe(64)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    params = {"client_id": "profile-poke-web", "response_type": "code", "redirect_uri": redirect_uri,
              "scope": "openid svc:profile.private svc:interact.poke", "state": secrets.token_urlsafe(16),
              "code_challenge": challenge, "code_challenge_method": "S256"}  # fmt: skip
    url = f"{oidc_driver.discover(idp.issuer)['authorization_endpoint']}?{urlencode(params)}"
    callback = oidc_driver.login_at_idp(requests.Session(), url, "carol", PASSWORD)
    return query_of(callback)["code"], verifier


def test_spa_exchange_signs_in_without_returning_a_token(app, idp):
    base = app.config["BASE_URL"]
    code, verifier = _spa_authorization(idp, base)
    client = app.test_client()
    response = client.post("/auth/exchange", json={"code": code, "code_verifier": verifier, "redirect_uri": base},
                           headers=CSRF)  # fmt: skip
    assert response.status_code == 200
    assert response.json["authenticated"] is True and response.json["user"] == "carol"
    assert "token" not in response.get_data(as_text=True).replace("idle_timeout", "")
    assert client.get("/api/v1/me/profile", headers=CSRF).json["data"]["handle"] == "@carol"


def test_spa_exchange_refuses_a_foreign_redirect_uri(app, idp):
    foreign = f"http://127.0.0.1:{idp.app_ports[2]}/"  # registered at the provider, not allowed here
    code, verifier = _spa_authorization(idp, foreign)
    idp.reset_stats()
    client = app.test_client()
    response = client.post("/auth/exchange", json={"code": code, "code_verifier": verifier, "redirect_uri": foreign},
                           headers=CSRF)  # fmt: skip
    assert response.status_code == 400
    assert response.json["error"]["code"] == "invalid_request"
    assert idp.stats()["token"]["authorization_code"] == 0


@pytest.mark.parametrize("body", [None, {"code": "x"}, {"code": "x", "code_verifier": "short", "redirect_uri": "/"}])
def test_spa_exchange_validates_its_body(app, body):
    response = app.test_client().post("/auth/exchange", json=body, headers=CSRF)
    assert response.status_code == 400
    assert response.json["error"]["code"] == "invalid_request"


def test_spa_exchange_needs_the_csrf_header(app, idp):
    response = app.test_client().post("/auth/exchange", json={})
    assert response.status_code == 403
