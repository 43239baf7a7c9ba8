"""Browser sign-in through the backend-for-frontend against the real provider and Redis: PKCE,
state binding and replay, error callbacks, withheld scopes, open redirects, cookies."""

import base64
import hashlib
import re
import secrets
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest
import requests

from dev import oidc_driver
from tests.helpers.login_cookies import login_cookie_name
from tests.helpers.pages import error_page_message
from tests.helpers.real_services import PASSWORD
from tests.helpers.settings import CSRF, SESSION_COOKIE, session_cookie_name
from tests.helpers.signin import (
    callback_path,
    cookie_value,
    login_cookie,
    opened_sign_in,
    signed_in_client,
    start_login,
    state_of,
)

pytestmark = pytest.mark.integration

UNKNOWN_SIGN_IN = "this sign-in is unknown, already used or expired; please sign in again"
OTHER_BROWSER = (
    "this sign-in was started in another browser, or newer sign-ins in this one replaced it; please sign in again"
)


@pytest.fixture
def front_channel_app(make_app):
    """An app that sends the authorization parameters through the browser (OIDC_PAR=off), so a test can
    read them, state included, from the redirect."""
    return make_app(OIDC_PAR="off")


def query_of(url: str) -> dict:
    return {name: values[0] for name, values in parse_qs(urlsplit(url).query).items()}


def test_login_redirects_to_the_discovered_authorization_endpoint_with_pkce_s256(front_channel_app, idp):
    url = start_login(front_channel_app.test_client())
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
    [
        "//evil.example",
        "https://evil.example",
        "/\\evil.example",
        "\\\\evil.example",
        "HtTpS://evil.example",
        "//evil.example/%2F..",
        "/%5Cevil.example/../",
        "javascript:alert(1)",
        "/\tevil",
        " /x",
        "",
    ],
)
def test_open_redirects_through_return_to_fall_back_to_the_root(app, target):
    client = app.test_client()
    authorize = start_login(client, return_to=target)
    callback = oidc_driver.login_at_idp(requests.Session(), authorize, "bob", PASSWORD)
    location = client.get(callback_path(callback)).headers["Location"]
    assert location == "/" or (location.startswith("/") and not location.startswith(("//", "/\\")))
    assert urlsplit(location).netloc == ""


def test_the_pending_sign_in_lives_in_a_sealed_short_lived_cookie_and_nothing_in_redis(front_channel_app, idp, keys_of):
    client = front_channel_app.test_client()
    before = keys_of(front_channel_app)
    login = client.get("/auth/login", query_string={"return_to": "/private/path"})
    state = query_of(login.headers["Location"])["state"]
    [set_cookie] = login.headers.getlist("Set-Cookie")
    name = login_cookie_name(front_channel_app.config, state)
    assert set_cookie.startswith(f"{name}=") and re.fullmatch(r"pp_login-[A-Za-z0-9_-]{16}", name)
    for attribute in ("Max-Age=600", "HttpOnly", "SameSite=Lax", "Path=/"):
        assert attribute in set_cookie
    pending = opened_sign_in(front_channel_app.config, state, login_cookie(client, state))
    assert (len(pending.verifier), pending.return_to, pending.prompt, pending.max_age) == (43, "/private/path", "", "")
    assert pending.verifier not in set_cookie and "private" not in set_cookie  # sealed, not signed
    assert [key for key in keys_of(front_channel_app) if key not in before and ":limits" not in key] == []


def test_the_code_challenge_is_the_s256_of_the_sealed_verifier(front_channel_app):
    client = front_channel_app.test_client()
    query = query_of(start_login(client))
    verifier = opened_sign_in(front_channel_app.config, query["state"], login_cookie(client, query["state"])).verifier
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


def test_a_replayed_callback_fails_without_a_second_exchange(app, idp, redis):
    client = app.test_client()
    callback = oidc_driver.login_at_idp(requests.Session(), start_login(client), "alice", PASSWORD)
    copied = login_cookie(client, state_of(callback))  # what a thief of the browser's cookies would hold
    assert client.get(callback_path(callback)).status_code == 302
    idp.reset_stats()
    replay = app.test_client()
    for name, value in copied.items():
        replay.set_cookie(name, value)
    for again in (replay, client):  # with the copied cookie, and in the same browser (a reload)
        response = again.get(callback_path(callback))
        assert (response.status_code, error_page_message(response)) == (400, UNKNOWN_SIGN_IN)
    assert idp.stats()["token"]["authorization_code"] == 0
    assert replay.get("/auth/session").json == {"authenticated": False}
    used = app.extensions["profile_poke"].store.used_states.key(state_of(callback))
    assert 0 < redis.ttl(used) <= 600  # the only thing Redis keeps of a sign-in, until its state expires


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
    assert (response.status_code, error_page_message(response)) == (400, UNKNOWN_SIGN_IN)
    assert idp.stats()["token"]["authorization_code"] == 0
    assert not [key for key in keys_of(app) if ":tokens:" in key or ":session:" in key]


def test_a_callback_with_another_browsers_state_fails(app, idp):
    victim = app.test_client()
    attacker = app.test_client()
    callback = oidc_driver.login_at_idp(requests.Session(), start_login(attacker), "mallory", PASSWORD)
    start_login(victim)  # the victim has a login cookie of its own
    idp.reset_stats()
    response = victim.get(callback_path(callback))
    assert (response.status_code, error_page_message(response)) == (400, OTHER_BROWSER)
    assert idp.stats()["token"]["authorization_code"] == 0


def test_an_error_callback_shows_the_escaped_error_and_exchanges_nothing(front_channel_app, idp):
    client = front_channel_app.test_client()
    state = query_of(start_login(client))["state"]
    idp.reset_stats()
    response = client.get(
        "/auth/callback",
        query_string={
            "state": state,
            "error": "access_denied",
            "error_description": "<script>alert(1)</script> said no",
            "iss": idp.issuer,
        },
    )
    page = response.get_data(as_text=True)
    assert response.status_code == 400
    assert "access_denied" in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt; said no" in page
    assert "<script>alert" not in page
    assert idp.stats()["token"]["authorization_code"] == 0
    used_up = client.get(f"/auth/callback?state={state}&code=x")
    assert (used_up.status_code, error_page_message(used_up)) == (400, UNKNOWN_SIGN_IN)  # the state was used up


def test_an_error_callback_without_our_state_shows_no_provider_text(front_channel_app, idp):
    client = front_channel_app.test_client()
    start_login(client)  # a login cookie of its own, and a state the attacker does not know
    attacker = front_channel_app.test_client()
    forged_state = query_of(start_login(attacker))["state"]
    for state in (None, "made-up", forged_state):
        query = {"error": "access_denied", "error_description": "Call +1-555-0100 to unlock", "iss": idp.issuer}
        response = client.get("/auth/callback", query_string={**query, **({"state": state} if state else {})})
        page = response.get_data(as_text=True)
        assert response.status_code == 400
        assert "the sign-in did not complete; please sign in again" in page
        assert "555" not in page and "access_denied" not in page


@pytest.mark.parametrize("iss", [None, "https://evil.example/realms/dev"])
def test_rfc9207_a_missing_or_foreign_iss_fails_the_sign_in(app, idp, keys_of, iss):
    client = app.test_client()
    callback = oidc_driver.login_at_idp(requests.Session(), start_login(client), "alice", PASSWORD)
    query = {name: value for name, value in query_of(callback).items() if name != "iss"}
    if iss:
        query["iss"] = iss
    idp.reset_stats()
    response = client.get(f"/auth/callback?{urlencode(query)}")
    assert response.status_code == 400
    expected = "another issuer" if iss else "has no iss, which the identity provider promises"
    assert expected in response.get_data(as_text=True)
    assert idp.stats()["token"]["authorization_code"] == 0
    assert not [key for key in keys_of(app) if ":tokens:" in key]


@pytest.mark.parametrize("iss", [None, "https://evil.example/realms/dev"])
def test_rfc9207_an_error_response_without_our_iss_shows_no_provider_text(front_channel_app, idp, iss):
    client = front_channel_app.test_client()
    state = query_of(start_login(client))["state"]
    query = {"state": state, "error": "access_denied", "error_description": "mixed up", **({"iss": iss} if iss else {})}
    page = client.get("/auth/callback", query_string=query).get_data(as_text=True)
    assert ("another issuer" if iss else "has no iss") in page
    assert "mixed up" not in page


def test_the_dev_provider_promises_rfc9207_iss_in_discovery(idp):
    discovery = requests.get(f"{idp.issuer}/.well-known/openid-configuration", timeout=5).json()
    assert discovery["authorization_response_iss_parameter_supported"] is True


def test_a_withheld_scope_means_no_session(make_app, keys_of):
    app = make_app(OIDC_CLIENT_ID="profile-poke-web-limited")
    client = app.test_client()
    callback = oidc_driver.login_at_idp(requests.Session(), start_login(client), "alice", PASSWORD)
    response = client.get(callback_path(callback))
    assert (response.status_code, error_page_message(response)) == (
        403,
        "the identity provider did not grant svc:interact.poke, which this app needs",
    )
    assert client.get("/auth/session").json == {"authenticated": False}
    assert not [key for key in keys_of(app) if ":tokens:" in key or ":session:" in key]


def test_a_disabled_account_cannot_sign_in(app, keys_of):
    client = app.test_client()
    callback = oidc_driver.login_at_idp(requests.Session(), start_login(client), "dave", PASSWORD)
    response = client.get(callback_path(callback))
    assert (response.status_code, error_page_message(response)) == (403, "this account is disabled")
    assert not [key for key in keys_of(app) if ":tokens:" in key]


def test_the_session_id_changes_at_sign_in(app):
    client = signed_in_client(app, "bob")
    before = cookie_value(client, SESSION_COOKIE)
    authorize = start_login(client)
    callback = oidc_driver.login_at_idp(requests.Session(), authorize, "alice", PASSWORD)
    client.get(callback_path(callback))
    after = cookie_value(client, SESSION_COOKIE)
    assert before and after and before != after
    stale = app.test_client()
    stale.set_cookie(SESSION_COOKIE, before)
    assert stale.get("/auth/session").json == {"authenticated": False}
    refused = stale.get("/api/v1/me/profile", headers=CSRF)
    assert (refused.status_code, refused.json["error"]["message"]) == (401, "the session has ended; sign in again")


def test_production_cookie_flags(make_app, idp):
    app = make_app(SESSION_COOKIE_SECURE="true")
    client = app.test_client()
    login = client.get("/auth/login", base_url="https://localhost")
    pending_cookie = login.headers["Set-Cookie"]
    assert re.match(r"__Host-login-[A-Za-z0-9_-]{16}=", pending_cookie)
    callback = oidc_driver.login_at_idp(requests.Session(), login.headers["Location"], "alice", PASSWORD)
    response = client.get(callback_path(callback), base_url="https://localhost")
    session_cookie = next(
        c for c in response.headers.getlist("Set-Cookie") if c.startswith(f"{session_cookie_name(secure=True)}=")
    )
    attributes = {part.strip().split("=")[0].lower() for part in session_cookie.split(";")[1:]}
    for cookie in (pending_cookie, session_cookie):
        assert "Secure" in cookie and "HttpOnly" in cookie and "SameSite=Lax" in cookie and "Path=/" in cookie
        assert "Domain" not in cookie
    assert "expires" not in attributes  # a browser-session cookie; the server enforces the lifetimes
    logout = client.post("/auth/logout", headers=CSRF, base_url="https://localhost")
    deletion = next(
        c for c in logout.headers.getlist("Set-Cookie") if c.startswith(f"{session_cookie_name(secure=True)}=")
    )
    assert "Max-Age=0" in deletion and "Secure" in deletion and "Path=/" in deletion  # else browsers keep it
