"""Session security past the basics, against the real provider and Redis: a refresh token revoked
at sign-out is dead at the provider, and "your sessions" lists, ends one or ends all others."""

import re

import pytest
import requests

from dev import oidc_driver
from tests.helpers.settings import CSRF
from tests.helpers.signin import cookie_value, signed_in_client, stored_session_tokens

pytestmark = pytest.mark.integration


def test_a_refresh_token_revoked_at_logout_gets_invalid_grant_from_the_provider(app, idp):
    client = signed_in_client(app, "alice", requests.Session())
    revoked = stored_session_tokens(app, client)["refresh_token"]
    assert client.post("/auth/logout", headers=CSRF).status_code == 200
    answer = oidc_driver.refresh(idp.issuer, "profile-poke-web", revoked)
    assert (answer.status_code, answer.json()["error"]) == (400, "invalid_grant")
    # The same request with a refresh token nobody revoked succeeds: the refusal is the revocation.
    other = signed_in_client(app, "bob", requests.Session())
    alive = oidc_driver.refresh(idp.issuer, "profile-poke-web", stored_session_tokens(app, other)["refresh_token"])
    assert alive.status_code == 200 and alive.json()["refresh_token"]


def sessions_of(client) -> list[dict]:
    response = client.get("/auth/sessions", headers=CSRF)
    assert response.status_code == 200, response.get_data(as_text=True)
    assert response.headers["Cache-Control"] == "no-store"
    return response.json["sessions"]


def test_your_sessions_lists_this_users_browsers_with_one_current_and_never_a_token(app):
    here = signed_in_client(app, "alice", requests.Session())
    elsewhere = signed_in_client(app, "alice", requests.Session())
    signed_in_client(app, "bob", requests.Session())
    listed = sessions_of(here)
    assert len(listed) == 2
    assert [entry["current"] for entry in listed].count(True) == 1
    for entry in listed:
        assert set(entry) == {"id", "started_at", "last_used_at", "user_agent", "current"}
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", entry["started_at"])
        assert entry["started_at"] <= entry["last_used_at"]
        assert entry["user_agent"] == "unknown browser"  # the test client sends no User-Agent of a browser
    body = here.get("/auth/sessions", headers=CSRF).get_data(as_text=True)
    for client in (here, elsewhere):
        tokens = stored_session_tokens(app, client)
        held = [tokens["access_token"], tokens["refresh_token"], tokens["id_token"], cookie_value(client)]
        assert not any(secret in body for secret in held)
    assert {entry["id"] for entry in sessions_of(elsewhere)} == {entry["id"] for entry in listed}


def test_your_sessions_needs_the_csrf_header_and_a_session(app):
    client = signed_in_client(app, "alice", requests.Session())
    refused = client.get("/auth/sessions")
    assert (refused.status_code, refused.json["error"]["message"]) == (
        403,
        "cookie-authenticated calls need the header X-CSRF: 1",
    )
    stranger = app.test_client().get("/auth/sessions", headers=CSRF)
    assert (stranger.status_code, stranger.json["error"]["message"]) == (401, "sign in first")


def test_ending_another_session_signs_it_out_and_revokes_its_refresh_token(app, idp):
    here = signed_in_client(app, "alice", requests.Session())
    there = signed_in_client(app, "alice", requests.Session())
    their_refresh_token = stored_session_tokens(app, there)["refresh_token"]
    [theirs] = [entry for entry in sessions_of(here) if not entry["current"]]
    ended = here.delete(f"/auth/sessions/{theirs['id']}", headers=CSRF)
    assert (ended.status_code, ended.get_data()) == (204, b"")
    assert there.get("/api/v1/me/profile", headers=CSRF).status_code == 401
    assert there.get("/auth/session").json == {"authenticated": False}
    answer = oidc_driver.refresh(idp.issuer, "profile-poke-web", their_refresh_token)
    assert (answer.status_code, answer.json()["error"]) == (400, "invalid_grant")
    assert here.get("/api/v1/me/profile", headers=CSRF).status_code == 200
    assert [entry["current"] for entry in sessions_of(here)] == [True]


def test_another_users_session_or_an_unknown_id_is_a_404(app):
    alice = signed_in_client(app, "alice", requests.Session())
    bob = signed_in_client(app, "bob", requests.Session())
    [bobs] = sessions_of(bob)
    for session_id in (bobs["id"], "no-such-session"):
        response = alice.delete(f"/auth/sessions/{session_id}", headers=CSRF)
        assert (response.status_code, response.json["error"]) == (
            404,
            {"code": "not_found", "message": "no such session of yours"},
        )
    assert bob.get("/api/v1/me/profile", headers=CSRF).status_code == 200


def test_ending_all_other_sessions_keeps_only_this_one(app):
    here = signed_in_client(app, "alice", requests.Session())
    others = [signed_in_client(app, "alice", requests.Session()) for _ in range(2)]
    response = here.delete("/auth/sessions", headers=CSRF)
    assert response.status_code == 204
    assert [other.get("/api/v1/me/profile", headers=CSRF).status_code for other in others] == [401, 401]
    assert [entry["current"] for entry in sessions_of(here)] == [True]
    assert here.delete("/auth/sessions").status_code == 403  # a change of state needs the header too
