"""Session security past the basics, against the real provider and Redis: a refresh token revoked
at sign-out, or when a new sign-in in the same browser replaces its session, is dead at the provider,
and "your sessions" lists, ends one or ends all others."""

import re

import pytest
import requests

from dev import oidc_driver
from dev.services import free_port
from tests.helpers.real_services import start_own_idp
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


@pytest.fixture(scope="module")
def sid_idp(workdir, idp):
    """A dev provider of the module's own whose ID tokens name the provider session (`sid`): it has a
    back-channel logout URI, on a port where nothing listens (no provider session ends here)."""
    server, provider = start_own_idp(
        workdir, idp.app_ports, IDP_BACKCHANNEL_LOGOUT_URI=f"http://127.0.0.1:{free_port()}/auth/backchannel-logout"
    )
    yield provider
    server.stop()


def signed_in_twice(app, first: str, second: str, *, same_provider_session: bool):
    """A browser signed in as `first`, then again as `second`; the provider sessions behind the two
    sign-ins are one (single sign-on) or two. Returns the replaced session's tokens and the current one's."""
    http = requests.Session()
    client = signed_in_client(app, first, http)
    replaced = stored_session_tokens(app, client)
    signed_in_client(app, second, http if same_provider_session else requests.Session(), client=client)
    current = stored_session_tokens(app, client)
    assert (current["user"], current["id"] != replaced["id"]) == (second, True)
    return replaced, current


def refresh_answer(idp, refresh_token: str) -> tuple[int, str | None]:
    """The provider's answer to a refresh with `refresh_token`: its status and error code (None on 200)."""
    answer = oidc_driver.refresh(idp.issuer, "profile-poke-web", refresh_token)
    return answer.status_code, answer.json().get("error")


def test_a_session_another_users_sign_in_replaces_in_the_same_browser_has_its_refresh_token_revoked(app, idp):
    replaced, current = signed_in_twice(app, "alice", "bob", same_provider_session=False)
    assert refresh_answer(idp, replaced["refresh_token"]) == (400, "invalid_grant")
    # The new session's refresh token works: the refusal is the old one's revocation, nothing wider.
    assert refresh_answer(idp, current["refresh_token"]) == (200, None)


def test_a_session_its_user_replaces_through_a_new_provider_session_has_its_refresh_token_revoked(make_app, sid_idp):
    app = make_app(sid_idp)
    replaced, current = signed_in_twice(app, "alice", "alice", same_provider_session=False)
    assert None is not replaced["provider_sid"] != current["provider_sid"] is not None
    assert refresh_answer(sid_idp, replaced["refresh_token"]) == (400, "invalid_grant")
    assert refresh_answer(sid_idp, current["refresh_token"]) == (200, None)


@pytest.mark.parametrize("sid", [True, False], ids=["same-sid", "no-sid"])
def test_a_new_sign_in_through_the_same_provider_session_keeps_the_new_sessions_refresh_token_alive(
    make_app, idp, sid_idp, sid
):
    # Single sign-on (a step-up, a second click on "sign in") gets tokens of the same grant: revoking the
    # replaced session's refresh token would end the new session's as well. Without a `sid` to compare,
    # the same user may be in the same provider session, so nothing is revoked either.
    provider = sid_idp if sid else idp
    app = make_app(provider)
    replaced, current = signed_in_twice(app, "alice", "alice", same_provider_session=True)
    assert current["provider_sid"] == replaced["provider_sid"] and (current["provider_sid"] is not None) == sid
    rotated = oidc_driver.refresh(provider.issuer, "profile-poke-web", current["refresh_token"])
    assert rotated.status_code == 200, rotated.text
    # Why: revoked, the replaced session's refresh token takes the new session's newest one with it.
    revocation = oidc_driver.discover(provider.issuer)["revocation_endpoint"]
    revoke = {"token": replaced["refresh_token"], "token_type_hint": "refresh_token", "client_id": "profile-poke-web"}
    requests.post(revocation, data=revoke, timeout=10).raise_for_status()
    assert refresh_answer(provider, rotated.json()["refresh_token"]) == (400, "invalid_grant")


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
