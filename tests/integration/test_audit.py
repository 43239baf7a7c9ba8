"""Audit events, each from the real action against the real provider and Redis: a sign-in, failed
sign-ins, a sign-out, ending your sessions, a rate limit and every operator command
write exactly one event on the `audit` logger, with who, which session (never the cookie), from where
and why, and the request's id."""

import re
from urllib.parse import parse_qs, urlsplit

import pytest
import requests

from app.audit import EVENTS
from dev import oidc_driver
from tests.helpers.real_services import DEMO_SUBJECTS, DEMO_USERS, PASSWORD
from tests.helpers.settings import CSRF
from tests.helpers.signin import (
    callback_path,
    cookie_value,
    signed_in_client,
    start_login,
    stored_session_tokens,
)

pytestmark = pytest.mark.integration
REQUEST_ID = re.compile(r"[0-9a-f]{32}")
TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z")
KNOWN_EVENTS = set(EVENTS)


def only_event(audit_lines) -> dict:
    """The one audit event written since the capture was last cleared, checked for its common fields."""
    events = audit_lines.events()
    assert len(events) == 1, [event["event"] for event in events]
    event = events[0]
    assert event["event"] in KNOWN_EVENTS and event["message"] == event["event"]
    assert TIME.fullmatch(event["time"])
    audit_lines.lines.clear()
    return event


def in_request(event: dict) -> dict:
    """`event`, checked for the request fields every event written during a request carries."""
    assert REQUEST_ID.fullmatch(event["request_id"]) and event["remote"] == "127.0.0.1"
    return event


def current_session_id(client) -> str:
    (current,) = [entry for entry in client.get("/auth/sessions", headers=CSRF).json["sessions"] if entry["current"]]
    return current["id"]


def test_a_real_sign_in_is_one_event_naming_the_user_the_subject_and_the_listed_session(app, audit_lines):
    client = app.test_client()
    callback = oidc_driver.login_at_idp(requests.Session(), start_login(client), "alice", PASSWORD)
    assert audit_lines.events() == []
    response = client.get(callback_path(callback), headers={"X-Request-ID": "edge-7f3a"})
    assert response.status_code == 302
    event = only_event(audit_lines)
    tokens = stored_session_tokens(app, client)
    assert event["event"] == "signin.succeeded"
    assert (event["user"], event["sub"]) == ("alice", tokens["sub"])
    assert event["session"] == current_session_id(client)
    assert (event["request_id"], event["remote"]) == ("edge-7f3a", "127.0.0.1")
    assert set(event) == {
        "level",
        "logger",
        "message",
        "time",
        "event",
        "user",
        "sub",
        "session",
        "request_id",
        "remote",
    }
    line = str(event)
    held = [tokens["access_token"], tokens["refresh_token"], tokens["id_token"], cookie_value(client)]
    assert not any(secret in line for secret in held)
    assert parse_qs(urlsplit(callback).query)["code"][0] not in line


def test_a_callback_with_an_unknown_state_is_one_failed_sign_in(app, audit_lines):
    response = app.test_client().get("/auth/callback?state=forged&code=anything-at-all-123")
    assert response.status_code == 400
    event = in_request(only_event(audit_lines))
    assert (event["event"], event["reason"]) == ("signin.failed", "unknown_state")
    assert "anything-at-all-123" not in str(event)


def test_the_provider_refusing_a_real_sign_in_is_one_failed_sign_in_with_its_reason(make_app, idp, audit_lines):
    client = make_app(OIDC_PAR="off").test_client()  # the test reads state from the redirect
    audit_lines.lines.clear()  # the demo users' import
    state = parse_qs(urlsplit(start_login(client)).query)["state"][0]
    response = client.get("/auth/callback", query_string={"error": "access_denied", "state": state, "iss": idp.issuer})
    assert response.status_code == 400 and "access_denied" in response.get_data(as_text=True)
    event = in_request(only_event(audit_lines))
    assert (event["event"], event["reason"]) == ("signin.failed", "provider_refused")
    assert state not in str(event)


def test_a_disabled_account_signing_in_is_one_failed_sign_in_naming_the_account(app, audit_lines):
    assert app.test_cli_runner().invoke(args=["users", "disable", "bob"]).exit_code == 0
    audit_lines.lines.clear()
    client = app.test_client()
    callback = oidc_driver.login_at_idp(requests.Session(), start_login(client), "bob", PASSWORD)
    assert client.get(callback_path(callback)).status_code == 403
    event = in_request(only_event(audit_lines))
    assert (event["event"], event["reason"], event["user"]) == ("signin.failed", "account_disabled", "bob")
    assert event["sub"] == DEMO_SUBJECTS["bob"]


def test_signing_out_is_one_event_naming_the_ended_session(app, audit_lines):
    client = signed_in_client(app, "alice", requests.Session())
    session_id = current_session_id(client)
    audit_lines.lines.clear()
    assert client.post("/auth/logout", headers=CSRF).status_code == 200
    event = in_request(only_event(audit_lines))
    assert (event["event"], event["user"], event["session"]) == ("signout", "alice", session_id)


def test_ending_one_of_your_sessions_is_one_event_naming_it(app, audit_lines):
    here = signed_in_client(app, "carol", requests.Session())
    there = signed_in_client(app, "carol", requests.Session())
    theirs, ours = current_session_id(there), current_session_id(here)
    audit_lines.lines.clear()
    assert here.delete(f"/auth/sessions/{theirs}", headers=CSRF).status_code == 204
    event = in_request(only_event(audit_lines))
    assert (event["event"], event["reason"], event["user"]) == ("session.ended", "user", "carol")
    assert (event["session"], event["ended"]) == (ours, [theirs])
    assert there.get("/api/v1/me/profile", headers=CSRF).status_code == 401


def test_ending_all_your_other_sessions_is_one_event_naming_them(app, audit_lines):
    here = signed_in_client(app, "alice", requests.Session())
    others = sorted(current_session_id(signed_in_client(app, "alice", requests.Session())) for _ in range(2))
    audit_lines.lines.clear()
    assert here.delete("/auth/sessions", headers=CSRF).status_code == 204
    event = in_request(only_event(audit_lines))
    assert (event["event"], event["reason"], event["session"]) == ("session.ended", "user", current_session_id(here))
    assert sorted(event["ended"]) == others


@pytest.mark.parametrize(
    ("setting", "path", "reason"),
    [("RATE_LIMIT_LOGIN", "/auth/login", "login"), ("RATE_LIMIT_EXCHANGE", "/auth/exchange", "exchange")],
)
def test_a_real_rate_limit_is_one_event_per_refused_request(make_app, audit_lines, setting, path, reason):
    app = make_app(PROXY_HOPS="1", **{setting: "1 per minute"})
    client = app.test_client()
    send = client.get if path == "/auth/login" else lambda url, **kw: client.post(url, json={}, **kw)
    address = {"X-Forwarded-For": "198.51.100.9", **CSRF}
    assert send(path, headers=address).status_code in {302, 400}
    audit_lines.lines.clear()
    assert send(path, headers=address).status_code == 429
    event = only_event(audit_lines)
    assert (event["event"], event["reason"], event["route"]) == ("ratelimit.hit", reason, path)
    assert event["remote"] == "198.51.100.9"


def run(app, *args):
    result = app.test_cli_runner().invoke(args=["users", *args])
    assert result.exit_code == 0, result.output
    return result


def test_every_operator_command_is_one_event(app, audit_lines):
    audit_lines.lines.clear()
    expected = {
        ("import", str(DEMO_USERS)): {"event": "admin.users.import", "file": str(DEMO_USERS), "relink": False},
        ("create", "newbie", "--sub", "sub-of-newbie"): {
            "event": "admin.users.create",
            "user": "newbie",
            "sub": "sub-of-newbie",
        },
        ("show", "Newbie"): {"event": "admin.users.show", "user": "newbie", "sub": "sub-of-newbie"},
        ("disable", "NEWBIE"): {"event": "admin.users.disable", "user": "newbie"},
        ("enable", "newbie"): {"event": "admin.users.enable", "user": "newbie"},
    }
    for command, fields in expected.items():
        run(app, *command)
        event = only_event(audit_lines)
        assert fields.items() <= event.items(), command
        assert "request_id" not in event  # no request: run by an operator


def test_an_operator_signing_a_user_out_ends_every_session_in_one_event(app, idp, audit_lines):
    clients = [signed_in_client(app, "carol", requests.Session()) for _ in range(2)]
    ids = sorted(current_session_id(client) for client in clients)
    refresh_token = stored_session_tokens(app, clients[0])["refresh_token"]
    audit_lines.lines.clear()
    assert "ended 2 sessions of carol" in run(app, "signout", "Carol").output
    event = only_event(audit_lines)
    assert (event["event"], event["reason"], event["user"]) == ("session.ended", "admin", "carol")
    assert sorted(event["ended"]) == ids and event["sub"]
    assert [client.get("/api/v1/me/profile", headers=CSRF).status_code for client in clients] == [401, 401]
    answer = oidc_driver.refresh(idp.issuer, "profile-poke-web", refresh_token)
    assert (answer.status_code, answer.json()["error"]) == (400, "invalid_grant")


def test_a_failed_operator_command_writes_no_event(app, audit_lines):
    audit_lines.lines.clear()
    assert app.test_cli_runner().invoke(args=["users", "disable", "ghost"]).exit_code != 0
    assert audit_lines.events() == []


@pytest.mark.parametrize(
    ("bounds", "status", "reason"),
    [
        ({"RATE_LIMIT_INTROSPECTION": "1 per minute"}, 429, "token_checks"),
        (
            {"RATE_LIMIT_INTROSPECTION": "1 per minute", "RATE_LIMIT_INTROSPECTION_TOTAL": "1 per minute"},
            503,
            "token_checks_total",
        ),
    ],
)
def test_junk_tokens_past_the_introspection_bound_are_one_event_each(
    make_app, idp, audit_lines, bounds, status, reason
):
    settings = {
        "ACCESS_TOKEN_VALIDATION": "introspection",
        "INTROSPECTION_CLIENT_ID": "profile-poke-service",
        "INTROSPECTION_CLIENT_SECRET": idp.secret,
    }
    client = make_app(**settings, **bounds).test_client()

    def send(token: str, address: str):
        headers = {"Authorization": f"Bearer {token}"}
        return client.get("/api/v1/me/profile", headers=headers, environ_base={"REMOTE_ADDR": address})

    assert send("junk-token-one", "192.0.2.1").status_code == 401
    audit_lines.lines.clear()
    # The same address again meets its own bound; another of its /24 meets the pool, the network's share spent.
    address = "192.0.2.1" if status == 429 else "192.0.2.2"
    assert send("junk-token-two", address).status_code == status
    event = only_event(audit_lines)
    assert event["remote"] == address and REQUEST_ID.fullmatch(event["request_id"])
    assert (event["event"], event["reason"], event["route"]) == ("ratelimit.hit", reason, "/api/v1/me/profile")
    assert "junk-token-two" not in str(event)
