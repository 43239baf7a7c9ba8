"""The BFF sign-in flow beyond conformance: what a token response must grant, how the profile is
linked, the session it starts (a new id every time), the SPA code exchange, the session answer and
sign-out, against the stub provider with fakeredis."""

import hashlib
import json
import secrets
import time
from urllib.parse import parse_qs, parse_qsl, urlencode, urlsplit

import pytest
import requests

from app.extensions import services
from app.sessions.interface import session_ref
from tests.helpers.apps import app_with_alice
from tests.helpers.pages import error_page_message
from tests.helpers.settings import CSRF, SESSION_COOKIE
from tests.helpers.stub_issuer import b64url

CLIENT_ID = "profile-poke-web"
UNKNOWN_STATE = "A" * 60  # shaped like the app's states, but never issued (its MAC does not match)
ALL_SCOPES = ["openid", "svc:interact.poke", "svc:profile.private"]


@pytest.fixture
def app(op, fake_redis):
    return app_with_alice(op.issuer, fake_redis)


@pytest.fixture
def client(app):
    return app.test_client()


def authorize(client, login_path: str = "/auth/login", **headers) -> tuple[str, dict]:
    """GET `login_path`, then the provider's authorization endpoint: the callback path and its query."""
    login = client.get(login_path, headers=headers)
    assert login.status_code == 302
    callback = urlsplit(requests.get(login.headers["Location"], allow_redirects=False, timeout=5).headers["Location"])
    return callback.path, dict(parse_qsl(callback.query))


def sign_in(client, **headers):
    """A whole browser sign-in; the app's answer to the callback."""
    path, query = authorize(client, **headers)
    return client.get(f"{path}?{urlencode(query)}", headers=headers)


def refusal(response) -> tuple[int, str]:
    """The status of an error page and the message it shows."""
    return response.status_code, error_page_message(response)


def cookie(client) -> str | None:
    found = client.get_cookie(SESSION_COOKIE)
    return found.value if found else None


def token_set(app, client) -> dict:
    with app.app_context():
        return services().session_tokens.current(cookie(client))


def failures(audit_lines) -> list[tuple]:
    """The reason, subject and user of each signin.failed event written so far."""
    return [(event.get("reason"), event.get("sub"), event.get("user")) for event in audit_lines.events("signin.failed")]


def keys_of(app):
    with app.app_context():
        return services().store.keys


def id_tokens_with(op, **changes) -> None:
    """Arrange for the provider's ID tokens to carry these changes (None leaves a claim out)."""
    op.id_token = lambda claims: op.sign_id({**claims, **changes})


@pytest.mark.parametrize(
    ("granted", "message"),
    [
        ("openid svc:profile.private", "the identity provider did not grant svc:interact.poke, which this app needs"),
        ("", "the identity provider did not grant svc:interact.poke svc:profile.private, which this app needs"),
    ],
)
def test_a_sign_in_missing_a_scope_the_app_needs_is_refused_naming_it(
    app, op, client, fake_redis, audit_lines, granted, message
):
    op.token_changes = {"scope": granted}
    assert refusal(sign_in(client)) == (403, message)
    assert failures(audit_lines) == [("scope_not_granted", "user-sub-1", None)]
    assert fake_redis.keys("*:tokens:*") == []


def test_a_token_response_without_scope_grants_what_the_sign_in_asked_for(app, op, client):
    op.token_changes = {"scope": None}  # left out, as RFC 6749 5.1 allows when it is the scope requested
    assert sign_in(client).status_code == 302
    assert client.get("/auth/session").json["scopes"] == sorted(app.config["OIDC_SCOPES"].split())


@pytest.mark.parametrize("access_token", [None, 42])
def test_a_token_response_without_a_string_access_token_is_502(op, client, audit_lines, access_token):
    op.token_changes = {"access_token": access_token}
    assert refusal(sign_in(client)) == (502, "the identity provider sent no access token")
    assert failures(audit_lines) == [("bad_token_response", None, None)]


@pytest.mark.parametrize("expires_in", ["soon", [300], True])
def test_a_token_response_whose_expires_in_is_no_number_of_seconds_is_502(
    op, client, fake_redis, audit_lines, expires_in
):
    op.token_changes = {"expires_in": expires_in}
    message = "the identity provider sent an expires_in that is not a number of seconds"
    assert refusal(sign_in(client)) == (502, message)
    assert failures(audit_lines) == [("bad_token_response", None, None)]
    assert fake_redis.keys("*:tokens:*") == []


def test_a_subject_whose_username_belongs_to_another_subject_is_refused(op, client, audit_lines):
    id_tokens_with(op, sub="user-sub-2")  # also says preferred_username alice, which user-sub-1 owns
    assert refusal(sign_in(client)) == (403, "this account's username belongs to another account")
    assert failures(audit_lines) == [("subject_clash", "user-sub-2", None)]
    warnings = [json.loads(line)["message"] for line in audit_lines.lines if json.loads(line)["level"] == "warning"]
    assert [line for line in warnings if line.startswith("refused subject link at sign-in: ")] == [
        "refused subject link at sign-in: username alice is taken: subject user-sub-2, owner user-sub-1"
    ]


def test_an_id_token_without_the_profiles_subject_claim_is_refused(op, fake_redis, audit_lines):
    client = app_with_alice(op.issuer, fake_redis, OIDC_PROVIDER_PROFILE="entra").test_client()
    id_tokens_with(op, oid=None)  # Entra ID's subject is its oid claim, which this ID token lacks
    assert refusal(sign_in(client)) == (502, "the ID token names no subject this app can link")
    assert failures(audit_lines) == [("no_subject", "user-sub-1", None)]


def test_a_new_subject_without_a_preferred_username_is_refused(op, client, audit_lines):
    id_tokens_with(op, sub="user-sub-2", preferred_username=None)
    assert refusal(sign_in(client)) == (403, "this account has no username to make a profile from")
    assert failures(audit_lines) == [("no_username", "user-sub-2", None)]


def test_a_new_subject_whose_username_is_no_valid_username_is_refused(op, client, audit_lines):
    id_tokens_with(op, sub="user-sub-2", preferred_username="not a username!")
    assert refusal(sign_in(client)) == (
        403,
        "this account's username is not a valid username here; an operator must import its profile with its"
        " subject, or set TOKEN_USERNAME_CLAIM",
    )
    assert failures(audit_lines) == [("unusable_username", "user-sub-2", None)]


def test_a_disabled_account_is_refused_and_gets_no_session(app, client, fake_redis, audit_lines):
    with app.app_context():
        services().store.profiles.set_disabled("alice", True)
    assert refusal(sign_in(client)) == (403, "this account is disabled")
    assert failures(audit_lines) == [("account_disabled", "user-sub-1", "alice")]
    assert fake_redis.keys("*:tokens:*") == []


def test_a_new_subject_gets_a_profile_named_by_its_preferred_username_and_name(app, op, client):
    id_tokens_with(op, sub="user-sub-3", preferred_username="Carol", name="Carol Carroll")
    assert sign_in(client).status_code == 302
    with app.app_context():
        profile = services().store.profiles.get("carol")
    assert (profile.handle, profile.display_name, profile.sub) == ("carol", "Carol Carroll", "user-sub-3")


def test_the_session_answer_says_who_with_which_scopes_until_when_and_how_they_signed_in(app, op, client):
    auth_time = int(time.time()) - 5
    id_tokens_with(op, acr="urn:profile-poke:acr:pwd-otp", amr=["pwd", "otp"], auth_time=auth_time)
    assert sign_in(client).status_code == 302
    record = token_set(app, client)
    answer = client.get("/auth/session").json
    idle_expires_at = answer.pop("idle_expires_at")
    assert answer == {
        "authenticated": True,
        "user": "alice",
        "scopes": ALL_SCOPES,
        "expires_at": int(record["ends"]),
        "idle_timeout": 1800,
        "acr": "urn:profile-poke:acr:pwd-otp",
        "amr": ["pwd", "otp"],
        "auth_time": auth_time,
    }
    assert int(record["started"]) + 1798 <= idle_expires_at <= int(record["started"]) + 1800


def test_a_sign_in_is_audited_naming_its_subject_user_and_session(app, client, audit_lines):
    assert sign_in(client).status_code == 302
    record = token_set(app, client)
    [succeeded] = audit_lines.events("signin.succeeded")
    assert {name: succeeded.get(name) for name in ("sub", "user", "session")} == {
        "sub": "user-sub-1",
        "user": "alice",
        "session": record["id"],
    }


def test_the_token_set_remembers_the_subject_a_refreshed_id_token_must_name(app, client):
    assert sign_in(client).status_code == 302
    assert token_set(app, client)["sub"] == "user-sub-1"


def test_the_session_record_never_outlives_the_refresh_token(app, op, client, fake_redis):
    op.token_changes = {"refresh_expires_in": 600}
    assert sign_in(client).status_code == 302
    ref = session_ref(app.config["SECRET_KEY"], cookie(client))
    assert 590_000 < fake_redis.pttl(keys_of(app).session(ref)) <= 600_000


def test_signing_in_over_a_session_gives_a_new_session_id_and_ends_the_old_one(app, client, audit_lines):
    assert sign_in(client).status_code == 302
    planted = cookie(client)  # as if an attacker had planted a session cookie of theirs
    old = token_set(app, client)["id"]
    assert sign_in(client).status_code == 302
    [ended] = audit_lines.events("session.ended")
    assert {name: ended.get(name) for name in ("reason", "ended", "sub", "user", "session")} == {
        "reason": "replaced",
        "ended": [old],
        "sub": "user-sub-1",
        "user": "alice",
        "session": old,
    }
    assert cookie(client) != planted
    other = app.test_client()
    other.set_cookie(SESSION_COOKIE, planted)
    assert other.get("/auth/session").json == {"authenticated": False}
    assert other.get("/api/v1/me/profile", headers=CSRF).status_code == 401


def test_a_session_whose_tokens_are_gone_is_not_authenticated(app, client, fake_redis):
    assert sign_in(client).status_code == 302
    ref = session_ref(app.config["SECRET_KEY"], cookie(client))
    fake_redis.delete(keys_of(app).token_set(ref))  # ended elsewhere; the session record remains
    assert client.get("/auth/session").json == {"authenticated": False}


def test_the_session_check_of_a_session_left_to_idle_out_reads_it_by_its_cookie_and_audits_the_end(
    app, client, fake_redis, audit_lines
):
    assert sign_in(client).status_code == 302
    ended = token_set(app, client)["id"]
    ref = session_ref(app.config["SECRET_KEY"], cookie(client))
    fake_redis.delete(keys_of(app).session(ref), keys_of(app).token_set(ref))  # what the idle timeout does
    assert client.get("/auth/session").json == {"authenticated": False}
    assert [(event["reason"], event["session"]) for event in audit_lines.events("session.ended")] == [("idle", ended)]


def test_a_browser_without_a_session_is_not_authenticated(client):
    assert client.get("/auth/session").json == {"authenticated": False}


def spa_authorization(op, *, redirect_uri: str, nonce: str = "spa-nonce") -> tuple[str, str]:
    """What a same-origin page does itself: an authorization request with its own PKCE; the code and
    its verifier."""
    verifier = secrets.token_urlsafe(48)
    query = {
        "client_id": CLIENT_ID,
        "redirect_uri": redirect_uri,
        "state": "spa-state",
        "nonce": nonce,
        "code_challenge": b64url(hashlib.sha256(verifier.encode()).digest()),
        "code_challenge_method": "S256",
    }
    answer = requests.get(f"{op.issuer}/auth?{urlencode(query)}", allow_redirects=False, timeout=5)
    return dict(parse_qsl(urlsplit(answer.headers["Location"]).query))["code"], verifier


def test_a_same_origin_page_signs_in_with_its_own_code_and_verifier(app, op, client):
    redirect_uri = app.config["BASE_URL"]
    code, verifier = spa_authorization(op, redirect_uri=redirect_uri)
    body = {"code": code, "code_verifier": verifier, "redirect_uri": redirect_uri, "nonce": "spa-nonce"}
    response = client.post("/auth/exchange", json=body, headers=CSRF)
    assert response.status_code == 200
    assert (response.json["authenticated"], response.json["user"]) == (True, "alice")
    assert client.get("/api/v1/me/profile", headers=CSRF).json["data"]["handle"] == "@alice"


def test_an_exchange_whose_nonce_is_not_the_id_tokens_is_refused(app, op, client):
    redirect_uri = app.config["BASE_URL"]
    code, verifier = spa_authorization(op, redirect_uri=redirect_uri)
    body = {"code": code, "code_verifier": verifier, "redirect_uri": redirect_uri, "nonce": "another-nonce"}
    response = client.post("/auth/exchange", json=body, headers=CSRF)
    assert (response.status_code, response.json["error"]) == (
        502,
        {"code": "login_failed", "message": "the ID token was refused: nonce mismatch"},
    )


def test_an_exchange_for_a_redirect_uri_the_app_does_not_accept_is_refused_before_the_provider(op, client, audit_lines):
    body = {"code": "some-code", "code_verifier": "v" * 43, "redirect_uri": "https://evil.example/"}
    response = client.post("/auth/exchange", json=body, headers=CSRF)
    assert (response.status_code, response.json["error"]) == (
        400,
        {"code": "invalid_request", "message": "redirect_uri is not one this app accepts"},
    )
    assert [event.get("reason") for event in audit_lines.events("signin.failed")] == ["bad_request"]
    assert op.fetches["token"] == 0


def test_sign_out_revokes_the_refresh_token_and_names_the_id_token_in_the_logout_url(app, op, client, audit_lines):
    assert sign_in(client).status_code == 302
    record = token_set(app, client)
    response = client.post("/auth/logout", headers=CSRF)
    [signout] = audit_lines.events("signout")
    assert {name: signout.get(name) for name in ("sub", "user", "session")} == {
        "sub": "user-sub-1",
        "user": "alice",
        "session": record["id"],
    }
    assert [(form["token"], form["token_type_hint"]) for form in op.revocations] == [
        (record["refresh_token"], "refresh_token")
    ]
    url = urlsplit(response.json["logout_url"])
    assert f"{url.scheme}://{url.netloc}{url.path}" == f"{op.issuer}/logout"
    query = parse_qs(url.query)
    assert query.pop("state")  # a fresh value the provider hands back
    assert query == {
        "client_id": [CLIENT_ID],
        "post_logout_redirect_uri": [app.config["BASE_URL"]],
        "id_token_hint": [record["id_token"]],
    }


@pytest.mark.parametrize(
    ("first", "second", "revoked"),
    [
        ({"sid": "s1"}, {"sub": "user-sub-2", "preferred_username": "bob", "sid": "s1"}, True),  # another user
        ({"sid": "s1"}, {"sid": "s2"}, True),  # its user again, through another provider session
        ({"sid": "s1"}, {"sid": "s1"}, False),  # single sign-on: the new session's grant too
        ({}, {}, False),  # no sid to compare
    ],
    ids=["another-user", "another-provider-session", "same-provider-session", "no-sid"],
)
def test_a_new_sign_in_revokes_the_refresh_token_of_the_session_it_replaces_unless_they_may_share_a_provider_session(
    app, op, client, first, second, revoked
):
    id_tokens_with(op, **first)
    assert sign_in(client).status_code == 302
    replaced = token_set(app, client)["refresh_token"]
    id_tokens_with(op, **second)
    assert sign_in(client).status_code == 302
    assert token_set(app, client)["refresh_token"] != replaced
    assert [(form["token"], form["token_type_hint"]) for form in op.revocations] == (
        [(replaced, "refresh_token")] if revoked else []
    )


def test_after_sign_out_the_old_cookie_opens_nothing(app, client):
    assert sign_in(client).status_code == 302
    old = cookie(client)
    assert client.post("/auth/logout", headers=CSRF).status_code == 200
    other = app.test_client()
    other.set_cookie(SESSION_COOKIE, old)
    response = other.get("/api/v1/me/profile", headers=CSRF)
    assert (response.status_code, response.json["error"]["message"]) == (401, "the session has ended; sign in again")


def test_sign_out_without_a_session_revokes_nothing_and_sends_no_id_token_hint(app, op, client, audit_lines):
    response = client.post("/auth/logout", headers=CSRF)
    assert op.revocations == []
    [signout] = audit_lines.events("signout")
    assert not {"sub", "user", "session"} & set(signout)
    query = parse_qs(urlsplit(response.json["logout_url"]).query)
    assert query.pop("state")
    assert query == {"client_id": [CLIENT_ID], "post_logout_redirect_uri": [app.config["BASE_URL"]]}


def test_sign_out_of_a_session_without_a_refresh_token_revokes_nothing(op, client):
    op.token_changes = {"refresh_token": None}
    assert sign_in(client).status_code == 302
    assert client.post("/auth/logout", headers=CSRF).status_code == 200
    assert op.revocations == []


@pytest.mark.parametrize(
    ("error", "shown"),
    [
        ({"error": "access_denied", "error_description": "The user cancelled"}, "access_denied: The user cancelled"),
        ({"error": "access denied<b>"}, "accessdeniedb"),  # only an error code's characters are shown
        ({"error": "<>"}, "unknown_error"),
        ({"error": "login_required"}, "login_required"),  # a silent answer to a sign-in that was not prompt=none
    ],
    ids=["code and description", "stray characters", "nothing left", "silent error to an interactive sign-in"],
)
def test_a_provider_error_for_this_browsers_own_sign_in_shows_the_providers_reason(client, audit_lines, error, shown):
    path, query = authorize(client)
    response = client.get(f"{path}?{urlencode({'state': query['state'], **error})}")
    assert refusal(response) == (400, f"the identity provider refused the sign-in: {shown}")
    assert failures(audit_lines) == [("provider_refused", None, None)]


@pytest.mark.parametrize(
    "error", ["login_required", "consent_required", "interaction_required", "account_selection_required"]
)
def test_a_silent_sign_in_the_provider_declines_returns_to_its_page_with_the_error(client, audit_lines, error):
    path, query = authorize(client, "/auth/login?prompt=none&return_to=/people%3Ftab%3D2")
    response = client.get(f"{path}?{urlencode({'state': query['state'], 'error': error})}")
    assert (response.status_code, response.headers["Location"]) == (302, f"/people?tab=2&signin_error={error}")
    assert failures(audit_lines) == [("silent_declined", None, None)]
    assert client.get("/auth/session").json == {"authenticated": False}


def test_a_description_ending_in_x_is_shown_whole(client):
    path, query = authorize(client)
    error = {"error": "access_denied", "error_description": "blocked by policy CA-X"}
    response = client.get(f"{path}?{urlencode({'state': query['state'], **error})}")
    assert refusal(response) == (
        400,
        "the identity provider refused the sign-in: access_denied: blocked by policy CA-X",
    )


def test_a_sign_in_that_asked_for_max_age_refuses_an_id_token_without_auth_time(client, audit_lines):
    path, query = authorize(client, "/auth/login?max_age=300")  # the stub's ID tokens name no auth_time
    response = client.get(f"{path}?{urlencode(query)}")
    assert refusal(response) == (
        502,
        "the identity provider did not sign you in within the last 300 s, as this sign-in asked; please sign in again",
    )
    assert failures(audit_lines) == [("stale_auth_time", "user-sub-1", None)]


def test_a_callback_for_this_browsers_own_sign_in_without_a_code_is_refused(client, op, audit_lines):
    path, query = authorize(client)
    response = client.get(f"{path}?{urlencode({'state': query['state'], 'iss': query['iss']})}")
    assert refusal(response) == (400, "the sign-in response has no code")
    assert failures(audit_lines) == [("no_code", None, None)]
    assert op.fetches["token"] == 0


def test_a_callback_without_iss_is_refused_when_discovery_promises_it(client, op, audit_lines):
    listed = op.discovery()
    op.discovery = lambda: {**listed, "authorization_response_iss_parameter_supported": True}
    path, query = authorize(client)
    response = client.get(f"{path}?{urlencode({'state': query['state'], 'code': query['code']})}")
    assert refusal(response) == (400, "the sign-in response has no iss, which the identity provider promises")
    assert failures(audit_lines) == [("no_iss", None, None)]
    assert op.fetches["token"] == 0


def test_a_callback_without_iss_is_taken_when_discovery_does_not_promise_it(client, op):
    path, query = authorize(client)
    assert client.get(f"{path}?{urlencode({'state': query['state'], 'code': query['code']})}").status_code == 302


@pytest.mark.parametrize("state", [UNKNOWN_STATE, None], ids=["well-formed but unknown", "missing"])
def test_an_error_for_a_sign_in_this_app_does_not_know_shows_no_provider_text(client, audit_lines, state):
    error = {"error": "access_denied", "error_description": "Your account is locked; call 555-0100"}
    response = client.get(f"/auth/callback?{urlencode({**error, 'state': state} if state else error)}")
    assert refusal(response) == (400, "the sign-in did not complete; please sign in again")
    assert failures(audit_lines) == [("unsolicited_error", None, None)]


@pytest.mark.parametrize(
    "state",
    [UNKNOWN_STATE, None, "not-a-state"],
    ids=["well-formed but unknown", "missing", "malformed"],
)
def test_a_callback_for_an_unknown_sign_in_is_refused_as_unknown(client, audit_lines, state):
    response = client.get(f"/auth/callback?{urlencode({'code': 'some-code', **({'state': state} if state else {})})}")
    assert refusal(response) == (400, "this sign-in is unknown, already used or expired; please sign in again")
    assert failures(audit_lines) == [("unknown_state", None, None)]


def test_a_callback_carried_to_another_browser_is_refused(app, client, op, audit_lines):
    path, query = authorize(client)
    response = app.test_client().get(f"{path}?{urlencode(query)}")  # without the browser's login cookie
    assert refusal(response) == (
        400,
        "this sign-in was started in another browser, or newer sign-ins in this one replaced it; please sign in again",
    )
    assert failures(audit_lines) == [("other_browser", None, None)]
    assert op.fetches["token"] == 0


def test_the_session_list_names_the_browser_that_signed_in(client):
    firefox = "Mozilla/5.0 (X11; Linux x86_64; rv:120.0) Gecko/20100101 Firefox/120.0"
    assert sign_in(client, **{"User-Agent": firefox}).status_code == 302
    [listed] = client.get("/auth/sessions", headers=CSRF).json["sessions"]
    assert (listed["user_agent"], listed["current"]) == ("Firefox on Linux", True)


def test_a_provider_session_id_that_is_not_a_string_is_not_indexed(app, op, client):
    id_tokens_with(op, sid=42)
    assert sign_in(client).status_code == 302
    with app.app_context():
        assert services().store.session_index.refs_of_provider_session("42") == []
