"""Junk in a user's session index (one hash per user, and one per provider session, in the real Redis)
is never a 500: "your sessions" and every later real sign-in at the dev provider answer as before,
the junk is gone afterwards and the user's good sessions are still listed."""

import json
import time

import pytest
import requests

from app.extensions import services
from app.sessions.interface import session_ref
from tests.helpers.real_services import start_own_idp
from tests.helpers.settings import CSRF
from tests.helpers.signin import cookie_value, signed_in_client

pytestmark = pytest.mark.integration

ALICE_SUB = "e3b3e97f-427a-427a-b5e4-c3f4200b05c5"  # alice at the dev provider (dev/demo-users.json)


def junk(ref: str = "no-such-session") -> dict:
    """Fields that are not session entries, by what is wrong with them; those that name a session name
    `ref` (a live one makes them look listable)."""
    now = time.time()
    good = {"ref": ref, "started": now, "ends": now + 3600, "user_agent": "Firefox on Linux"}
    return {
        "not JSON": b"{not json",
        "not UTF-8": b"\xff\xfe\x00",
        "JSON null": b"null",
        "a JSON list": b"[1, 2, 3]",
        "a JSON string": b'"ends"',
        "a JSON number": b"42",
        "no ends": json.dumps({key: value for key, value in good.items() if key != "ends"}),
        "no ref": json.dumps({key: value for key, value in good.items() if key != "ref"}),
        "no started": json.dumps({key: value for key, value in good.items() if key != "started"}),
        "no user agent": json.dumps({key: value for key, value in good.items() if key != "user_agent"}),
        "ends a string": json.dumps({**good, "ends": "tomorrow"}),
        "ends null": json.dumps({**good, "ends": None}),
        "ends true": json.dumps({**good, "ends": True}),
        "ends NaN": json.dumps({**good, "ends": float("nan")}),
        "ends past every clock": b'{"ref": "x", "started": 1, "ends": 1e400, "user_agent": "x"}',
        "ends in the year 9999": json.dumps({**good, "ends": 253402300799}),
        "started after it ends": json.dumps({**good, "started": now + 7200}),
        "nested 100,000 deep": b"[" * 100_000 + b"]" * 100_000,
        "a megabyte user agent": json.dumps({**good, "user_agent": "x" * 1_000_000}),
        "ten megabytes of text": b"x" * 10_000_000,
    }


def write_junk(redis, key: str, ref: str) -> None:
    redis.hset(key, mapping={f"junk: {name}".encode(): value for name, value in junk(ref).items()})
    redis.hset(key, b"\xff\xfe", json.dumps({"ref": "x", "started": 1, "ends": time.time() + 60, "user_agent": "x"}))


def listed(client) -> list[dict]:
    response = client.get("/auth/sessions", headers=CSRF)
    assert response.status_code == 200, response.get_data(as_text=True)
    return response.json["sessions"]


@pytest.mark.parametrize("shape", list(junk()))
def test_a_junk_field_in_a_users_session_index_is_dropped_and_never_a_500(app, redis, shape):
    index = f"{app.config['REDIS_KEY_PREFIX']}sessions-of:{ALICE_SUB}"
    here = signed_in_client(app, "alice", requests.Session())
    (good,) = [entry["id"] for entry in listed(here)]
    redis.hset(index, f"junk: {shape}", junk(stored_ref(app, here))[shape])
    assert [entry["id"] for entry in listed(here)] == [good]  # before: 500 from json.loads or a KeyError
    assert redis.hkeys(index) == [good.encode()]
    redis.hset(index, f"junk: {shape}", junk(stored_ref(app, here))[shape])
    there = signed_in_client(app, "alice", requests.Session())  # before: 500 from the index script's cjson
    both = {entry["id"] for entry in listed(there)}
    assert len(both) == 2 and good in both
    assert {field.decode() for field in redis.hkeys(index)} == both
    assert 0 < redis.ttl(index) <= app.config["SESSION_MAX_AGE"] + 1


def test_every_kind_of_junk_at_once_and_a_field_name_that_is_not_text_are_dropped(app, redis):
    index = f"{app.config['REDIS_KEY_PREFIX']}sessions-of:{ALICE_SUB}"
    here = signed_in_client(app, "alice", requests.Session())
    write_junk(redis, index, stored_ref(app, here))
    assert len(listed(here)) == 1 and len(redis.hkeys(index)) == 1


@pytest.fixture(scope="module")
def sid_idp(workdir, idp):
    """A dev provider whose ID tokens carry `sid` (it has a back-channel logout URI, never called here)."""
    server, provider = start_own_idp(
        workdir,
        idp.app_ports,
        IDP_BACKCHANNEL_LOGOUT_URI=f"http://127.0.0.1:{idp.app_ports[0]}/auth/backchannel-logout",
    )
    yield provider
    server.stop()


def test_junk_in_a_provider_sessions_index_never_fails_a_sign_in_there(make_app, sid_idp, redis):
    app = make_app(sid_idp)
    prefix, browser = app.config["REDIS_KEY_PREFIX"], requests.Session()  # one browser at the provider
    first = signed_in_client(app, "alice", browser)
    (by_provider_session,) = redis.scan_iter(match=f"{prefix}sessions-of-sid:*")
    write_junk(redis, by_provider_session, stored_ref(app, first))
    again = signed_in_client(app, "alice", browser)  # the same provider session: the same index
    assert len(listed(again)) == 2 and len(listed(first)) == 2
    for value in redis.hgetall(by_provider_session).values():  # what the index script keeps: a ref, an end
        entry = json.loads(value)
        assert isinstance(entry["ref"], str) and isinstance(entry["ends"], int | float) and entry["ends"] < 1e11
    sid = by_provider_session.decode().rpartition(":")[2]
    with app.app_context():
        refs = services().store.session_index.refs_of_provider_session(sid)
    assert {stored_ref(app, client) for client in (first, again)} <= set(refs)
    assert all(ref.isascii() for ref in refs)


def stored_ref(app, client) -> str:
    return session_ref(app.config["SECRET_KEY"], cookie_value(client, app.config["SESSION_COOKIE_NAME"]))
