"""The audit trail tells the whole story, each event from the real flow against the real provider and
Redis, with the exact lines in their order: a refresh the provider refuses (refresh.refused with its
error code, then the session.ended it causes), a back-channel logout token refused (replayed, forged,
missing), sessions ended by their idle or absolute limit or by a malformed record (found when the
browser comes back, told once), a sign-in replacing a session, and failed sign-ins naming who."""

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs

import pytest
import requests

from app.sessions.interface import session_ref
from app.store.keys import Keys
from dev import oidc_driver
from dev.services import free_port
from tests.helpers.log_capture import remember_secrets
from tests.helpers.real_services import DEMO_SUBJECTS, PASSWORD, start_own_idp
from tests.helpers.settings import CSRF
from tests.helpers.signin import (
    callback_path,
    cookie_value,
    signed_in_client,
    start_login,
    stored_session_tokens,
    wait_until_refresh_is_due,
)

pytestmark = pytest.mark.integration


def told(audit_lines) -> list[tuple]:
    """(event, reason, user, sub) of every audit event written since the capture was last cleared."""
    return [(e["event"], e.get("reason"), e.get("user"), e.get("sub")) for e in audit_lines.events()]


def assert_no_secret(audit_lines, *held) -> None:
    text = "\n".join(audit_lines.lines)
    assert all(len(secret) >= 16 for secret in held)
    assert [secret[:4] for secret in held if secret in text] == []


def session_id_of(client) -> str:
    (current,) = [entry for entry in client.get("/auth/sessions", headers=CSRF).json["sessions"] if entry["current"]]
    return current["id"]


def secrets_of(app, client) -> list[str]:
    tokens = stored_session_tokens(app, client)
    return [tokens["access_token"], tokens["refresh_token"], tokens["id_token"], cookie_value(client)]


def test_a_refresh_the_provider_refuses_is_refresh_refused_with_its_code_then_the_session_it_ends(
    make_app, idp, audit_lines
):
    app = make_app(OIDC_CLIENT_ID="profile-poke-web-short")  # 62 s tokens: a refresh is due within 2.5 s
    client = signed_in_client(app, "bob")
    session_id, held = session_id_of(client), secrets_of(app, client)
    record = stored_session_tokens(app, client)
    # Someone else redeems the refresh token: the session's copy is stale, and presenting it revokes the grant.
    assert oidc_driver.refresh(idp.issuer, "profile-poke-web-short", record["refresh_token"]).status_code == 200
    wait_until_refresh_is_due(record)
    audit_lines.lines.clear()
    assert client.get("/api/v1/me/profile", headers=CSRF).status_code == 401
    bob = DEMO_SUBJECTS["bob"]
    assert told(audit_lines) == [
        ("refresh.refused", "invalid_grant", "bob", bob),
        ("session.ended", "refresh_refused", "bob", bob),
    ]
    refused, ended = audit_lines.events()
    assert refused["session"] == ended["session"] == session_id and "error" not in refused
    assert (ended["cause"], ended["ended"]) == ("invalid_grant", [session_id])
    assert refused["request_id"] == ended["request_id"]
    assert_no_secret(audit_lines, *held)


def test_a_session_left_idle_is_told_as_idle_once_when_its_browser_comes_back(make_app, audit_lines):
    app = make_app(SESSION_IDLE_TIMEOUT="2")
    client = signed_in_client(app, "alice")
    session_id, held = session_id_of(client), secrets_of(app, client)
    time.sleep(2.5)
    audit_lines.lines.clear()
    assert client.get("/api/v1/me/profile", headers=CSRF).status_code == 401
    assert told(audit_lines) == [("session.ended", "idle", "alice", DEMO_SUBJECTS["alice"])]
    (ended,) = audit_lines.events()
    assert (ended["session"], ended["ended"]) == (session_id, [session_id])
    assert client.get("/api/v1/me/profile", headers=CSRF).status_code == 401
    assert client.post("/auth/logout", headers=CSRF).status_code == 200
    assert [event["event"] for event in audit_lines.events()] == ["session.ended", "signout"]  # told once
    assert_no_secret(audit_lines, *held)


def test_a_session_past_its_absolute_end_is_told_as_absolute_by_the_session_check(make_app, audit_lines):
    app = make_app(SESSION_MAX_AGE="2")
    client = signed_in_client(app, "carol")
    session_id = session_id_of(client)
    time.sleep(2.5)
    audit_lines.lines.clear()
    assert client.get("/auth/session").json == {"authenticated": False}
    assert told(audit_lines) == [("session.ended", "absolute", "carol", DEMO_SUBJECTS["carol"])]
    assert audit_lines.events()[0]["ended"] == [session_id]


@pytest.mark.parametrize("damage", ["sealed tokens replaced", "not JSON"])
def test_a_malformed_session_record_is_told_as_malformed_and_ends_the_session(make_app, redis, audit_lines, damage):
    app = make_app()
    client = signed_in_client(app, "erin")
    session_id = session_id_of(client)
    key = Keys(app.config["REDIS_KEY_PREFIX"]).token_set(session_ref(app.config["SECRET_KEY"], cookie_value(client)))
    damaged = b"\xffnot json" if damage == "not JSON" else json.dumps({**json.loads(redis.get(key)), "sealed": "junk"})
    redis.set(key, damaged, keepttl=True)
    audit_lines.lines.clear()
    assert client.get("/api/v1/me/profile", headers=CSRF).status_code == 401
    (ended,) = audit_lines.events()
    assert (ended["event"], ended["reason"]) == ("session.ended", "malformed")
    if damage == "not JSON":  # nothing to name it by
        assert "user" not in ended and ended["ended"] == []
    else:
        assert (ended["user"], ended["sub"], ended["ended"]) == ("erin", DEMO_SUBJECTS["erin"], [session_id])
    assert redis.get(key) is None


def test_a_new_sign_in_in_the_same_browser_is_told_as_replacing_its_session_before_it_starts(make_app, audit_lines):
    app = make_app()
    client = signed_in_client(app, "alice")
    replaced, held = session_id_of(client), secrets_of(app, client)
    callback = oidc_driver.login_at_idp(requests.Session(), start_login(client), "bob", PASSWORD)
    audit_lines.lines.clear()
    assert client.get(callback_path(callback)).status_code == 302
    assert told(audit_lines) == [
        ("session.ended", "replaced", "alice", DEMO_SUBJECTS["alice"]),
        ("signin.succeeded", None, "bob", DEMO_SUBJECTS["bob"]),
    ]
    ended, started = audit_lines.events()
    assert (ended["session"], ended["ended"]) == (replaced, [replaced])
    assert started["session"] == session_id_of(client) != replaced
    assert_no_secret(audit_lines, *held)


def test_a_sign_in_refused_after_the_id_token_was_verified_names_the_subject(make_app, audit_lines):
    app = make_app(OIDC_CLIENT_ID="profile-poke-web-limited")  # granted fewer scopes than it asks for
    client = app.test_client()
    callback = oidc_driver.login_at_idp(requests.Session(), start_login(client), "alice", PASSWORD)
    audit_lines.lines.clear()
    assert client.get(callback_path(callback)).status_code == 403
    # The profile is not read yet: the subject is known, the user is not.
    assert told(audit_lines) == [("signin.failed", "scope_not_granted", None, DEMO_SUBJECTS["alice"])]


class LogoutTokens(ThreadingHTTPServer):
    """Stands in for the app's back-channel logout URI at the provider: keeps each logout token it is sent."""

    def __init__(self):
        self.tokens: list[str] = []
        super().__init__(("127.0.0.1", free_port()), self.Handler)

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            body = self.rfile.read(int(self.headers["Content-Length"])).decode()
            self.server.tokens.extend(parse_qs(body).get("logout_token", []))
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args):
            pass


@pytest.fixture(scope="module")
def logout_tokens(workdir, idp):
    """A dev provider of the module's own that sends its back-channel logout tokens to a catcher."""
    catcher = LogoutTokens()
    threading.Thread(target=catcher.serve_forever, daemon=True).start()
    server, provider = start_own_idp(
        workdir, idp.app_ports, IDP_BACKCHANNEL_LOGOUT_URI=f"http://127.0.0.1:{catcher.server_port}/backchannel"
    )
    yield provider, catcher.tokens
    server.stop()
    catcher.shutdown()
    catcher.server_close()


def test_a_logout_token_the_provider_sent_is_accepted_once_then_refused_as_replayed(
    make_app, logout_tokens, audit_lines
):
    provider, tokens = logout_tokens
    app = make_app(provider)
    http = requests.Session()
    client = signed_in_client(app, "bob", http)
    session_id = session_id_of(client)
    end_session = oidc_driver.discover(provider.issuer)["end_session_endpoint"]
    oidc_driver.confirm_logout(http, f"{end_session}?client_id=profile-poke-web")  # bob signs out at the provider
    deadline = time.monotonic() + 10
    while not tokens and time.monotonic() < deadline:
        time.sleep(0.05)
    (token,) = tokens
    remember_secrets(token)
    audit_lines.lines.clear()
    backchannel = app.test_client()
    assert backchannel.post("/auth/backchannel-logout", data={"logout_token": token}).status_code == 200
    replay = backchannel.post("/auth/backchannel-logout", data={"logout_token": token})
    assert (replay.status_code, replay.json["error_description"]) == (400, "this logout token was already used")
    bob = DEMO_SUBJECTS["bob"]
    assert told(audit_lines) == [
        ("session.ended", "backchannel", None, bob),
        ("backchannel.refused", "replayed", None, bob),
    ]
    assert audit_lines.events()[0]["ended"] == [session_id]
    assert_no_secret(audit_lines, token)


def test_a_forged_or_missing_logout_token_is_refused_with_its_reason_and_names_nobody(make_app, audit_lines):
    app = make_app()
    client = signed_in_client(app, "alice")
    audit_lines.lines.clear()
    outsider = app.test_client()
    junk = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.c2lnbmF0dXJlLW9mLW5vYm9keQ"
    assert outsider.post("/auth/backchannel-logout", data={"logout_token": junk}).status_code == 400
    assert outsider.post("/auth/backchannel-logout", data={}).status_code == 400
    assert told(audit_lines) == [
        ("backchannel.refused", "unverified", None, None),
        ("backchannel.refused", "missing", None, None),
    ]
    assert client.get("/auth/session").json["authenticated"] is True
