"""A pending sign-in lives in its browser's sealed login cookie (issue 28, point 2), against the stub
provider with fakeredis: what the cookie keeps and how big it gets, five per browser with the oldest
dropped first, and every cookie or state that is not a live sign-in of this browser (expired, tampered,
moved, oversized, of another shape, under a retired key, replayed, raced) refused as documented, never
a 500, with no exchange and nothing written."""

import base64
import json
import threading
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit

import pytest
import requests

from app.auth import pending as pending_module
from app.auth.pending import MAX_PENDING, MAX_PENDING_BYTES, SEALING_INFO, USED_UP
from app.extensions import services
from app.sessions.sealing import Sealer
from tests.helpers.apps import app_with_alice
from tests.helpers.clock import FakeClock
from tests.helpers.login_cookies import login_cookie, login_cookie_name, opened_sign_in
from tests.helpers.pages import error_page_message

UNKNOWN = "this sign-in is unknown, already used or expired; please sign in again"
REPLACED = (
    "this sign-in was started in another browser, or newer sign-ins in this one replaced it; please sign in again"
)
LONGEST_RETURN_TO = "/" + "\U0001f600" * 511  # 512 characters of four UTF-8 bytes each: the biggest cookie


@pytest.fixture
def app(op, fake_redis):
    return app_with_alice(op.issuer, fake_redis)


def start(client, return_to: str = "/") -> tuple[str, str]:
    """Start a sign-in; the provider's redirect to the callback (path and query), and its state."""
    login = client.get("/auth/login", query_string={"return_to": return_to})
    assert login.status_code == 302, error_page_message(login)
    callback = urlsplit(requests.get(login.headers["Location"], allow_redirects=False, timeout=5).headers["Location"])
    query = dict(parse_qsl(callback.query))
    return f"{callback.path}?{callback.query}", query["state"]


def refusal(response) -> tuple[int, str]:
    return response.status_code, error_page_message(response)


def redis_keys(fake_redis) -> list[bytes]:
    """Every key but Alice's profile and the rate limiter's windows."""
    return sorted(
        key for key in fake_redis.scan_iter() if not any(part in key for part in (b":limits", b":user:", b":sub:"))
    )


def with_cookie(app, name: str, value: str):
    """A browser that holds just the cookie `name`."""
    browser = app.test_client()
    browser.set_cookie(name, value)
    return browser


def test_a_sign_in_is_a_sealed_cookie_of_its_own_and_nothing_in_redis(app, op, fake_redis):
    client = app.test_client()
    callback, state = start(client, "/private/page")
    [(name, value)] = login_cookie(client, state).items()
    assert redis_keys(fake_redis) == []
    pending = opened_sign_in(app.config, state, {name: value})
    assert (len(pending.verifier), pending.return_to, pending.prompt, pending.max_age) == (43, "/private/page", "", "")
    assert pending.verifier not in value and "private" not in value
    assert client.get(callback).headers["Location"] == "/private/page"
    assert login_cookie(client, state) == {name: USED_UP}
    assert len(redis_keys(fake_redis)) > 0  # the session, and the state's claim


def test_the_biggest_pending_sign_in_fits_one_cookie_and_comes_back_whole(app):
    client = app.test_client()
    callback, state = start(client, LONGEST_RETURN_TO)
    [(name, value)] = login_cookie(client, state).items()
    assert len(name) + 1 + len(value) < 3000  # browsers keep 4,096 bytes of a cookie
    assert unquote(client.get(callback).headers["Location"]) == LONGEST_RETURN_TO


def test_a_browser_keeps_five_sign_ins_the_oldest_dropped_first(app):
    client = app.test_client()
    started = [start(client) for _ in range(MAX_PENDING + 3)]
    assert [bool(login_cookie(client, state)) for _, state in started] == [False] * 3 + [True] * MAX_PENDING
    assert refusal(client.get(started[0][0])) == (400, REPLACED)
    assert client.get(started[3][0]).status_code == 302  # the oldest kept one still finishes
    assert client.get(started[-1][0]).status_code == 302  # and so does the newest, in the same browser


def test_long_return_tos_drop_the_oldest_sign_ins_sooner_so_the_cookie_header_stays_small(app):
    client = app.test_client()
    started = [start(client, LONGEST_RETURN_TO) for _ in range(3)]
    assert [bool(login_cookie(client, state)) for _, state in started] == [False, False, True]
    small = [start(client) for _ in range(MAX_PENDING)]
    held = {name: value for _, state in started + small for name, value in login_cookie(client, state).items()}
    assert len(held) == MAX_PENDING and sum(len(n) + 1 + len(v) for n, v in held.items()) <= MAX_PENDING_BYTES
    assert client.get(small[-1][0]).status_code == 302


def test_a_sign_in_past_its_lifetime_is_refused_as_unknown_without_an_exchange(app, op, monkeypatch, fake_redis):
    clock = FakeClock()
    monkeypatch.setattr(pending_module, "time", clock)
    client = app.test_client()
    callback, _ = start(client)
    clock.advance(app.config["LOGIN_STATE_TTL"] - 1)
    live = app.test_client()
    live_callback, _ = start(live)
    clock.advance(2)  # the first sign-in is 601 s old, the second 2 s
    assert refusal(client.get(callback)) == (400, UNKNOWN)
    assert op.fetches["token"] == 0 and redis_keys(fake_redis) == []
    assert live.get(live_callback).status_code == 302


def tampered(value: str) -> str:
    """`value` with one bit of its sealed part flipped."""
    expires, _, sealed = value.partition(".")
    version, _, body = sealed.partition(".")
    raw = bytearray(base64.urlsafe_b64decode(body))
    raw[20] ^= 1
    return f"{expires}.{version}.{base64.urlsafe_b64encode(bytes(raw)).decode()}"


@pytest.mark.parametrize(
    "mangle",
    [
        pytest.param(tampered, id="one bit flipped"),
        pytest.param(lambda value: value[:-10], id="cut short"),
        pytest.param(lambda value: value + "A" * 4096, id="over 4 KB"),
        pytest.param(lambda value: "9" * 16 + "." + value.partition(".")[2][:-4] + "!!!!", id="not base64"),
        pytest.param(lambda value: "", id="empty"),
        pytest.param(lambda value: USED_UP, id="used up"),
    ],
)
def test_a_login_cookie_that_does_not_open_is_refused_as_unknown_without_an_exchange(app, op, fake_redis, mangle):
    client = app.test_client()
    callback, state = start(client)
    [(name, value)] = login_cookie(client, state).items()
    script = app.test_client(use_cookies=False)  # a raw header: a browser would not even keep the long one
    response = script.get(callback, headers={"Cookie": f"{name}={mangle(value)}"})
    assert refusal(response) == (400, UNKNOWN)
    assert op.fetches["token"] == 0 and redis_keys(fake_redis) == []


def test_a_login_cookie_moved_to_another_sign_ins_name_does_not_open(app, op):
    client = app.test_client()
    _, first = start(client)
    second_callback, second = start(client)
    [first_value] = login_cookie(client, first).values()
    response = with_cookie(app, login_cookie_name(app.config, second), first_value).get(second_callback)
    assert refusal(response) == (400, UNKNOWN)
    assert op.fetches["token"] == 0


@pytest.mark.parametrize(
    "record",
    [
        {"verifier": "v" * 43, "return_to": "/"},
        ["v" * 43, "/", ""],
        ["v" * 43, "/", "", "", "extra"],
        ["v" * 43, 5, "", ""],
        "text",
        None,
    ],
)
def test_a_sealed_record_of_another_shape_counts_as_an_unknown_sign_in(app, op, record):
    client = app.test_client()
    callback, state = start(client)
    [(name, value)] = login_cookie(client, state).items()
    sealed = Sealer(app.config["SECRET_KEY"], [], info=SEALING_INFO).seal(state, json.dumps(record).encode())
    response = with_cookie(app, name, f"{value.partition('.')[0]}.{sealed}").get(callback)
    assert refusal(response) == (400, UNKNOWN)
    assert op.fetches["token"] == 0


@pytest.mark.parametrize("change", ["expiry", "random", "mac"])
def test_a_state_this_service_did_not_issue_is_refused_before_any_look_up(app, op, fake_redis, change):
    client = app.test_client()
    callback, state = start(client)
    raw = bytearray(base64.urlsafe_b64decode(state))
    raw[{"expiry": 2, "random": 20, "mac": 40}[change]] ^= 1  # the expiry moved by hours, another id, a bad MAC
    forged = base64.urlsafe_b64encode(bytes(raw)).decode()
    [value] = login_cookie(client, state).values()
    path, query = callback.split("?")
    forged_callback = f"{path}?{urlencode({**dict(parse_qsl(query)), 'state': forged})}"
    # Never "another browser's": not from a browser without cookies, nor with a cookie under its name.
    for browser in (app.test_client(), with_cookie(app, login_cookie_name(app.config, forged), value)):
        assert refusal(browser.get(forged_callback)) == (400, UNKNOWN)
    assert op.fetches["token"] == 0 and redis_keys(fake_redis) == []


def test_a_sign_in_started_before_a_secret_key_rotation_finishes_with_the_old_key_as_fallback(op, fake_redis):
    old = app_with_alice(op.issuer, fake_redis, SECRET_KEY="o" * 40)
    rotated = app_with_alice(op.issuer, fake_redis, SECRET_KEY="n" * 40, SECRET_KEY_FALLBACKS="o" * 40)
    retired = app_with_alice(op.issuer, fake_redis, SECRET_KEY="n" * 40)
    browser = old.test_client()
    callback, state = start(browser)
    [(name, value)] = login_cookie(browser, state).items()
    assert refusal(with_cookie(retired, name, value).get(callback)) == (400, UNKNOWN)
    assert with_cookie(rotated, name, value).get(callback).status_code == 302
    assert op.fetches["token"] == 1


def test_a_replayed_callback_with_a_copy_of_the_cookie_makes_no_second_exchange(app, op, audit_lines):
    client = app.test_client()
    callback, state = start(client)
    copied = login_cookie(client, state)
    assert client.get(callback).status_code == 302
    thief = with_cookie(app, *next(iter(copied.items())))
    assert refusal(thief.get(callback)) == (400, UNKNOWN)
    assert refusal(client.get(callback)) == (400, UNKNOWN)  # a reload in the browser itself
    assert op.fetches["token"] == 1
    assert [event.get("reason") for event in audit_lines.events("signin.failed")] == ["unknown_state"] * 2


def test_two_callbacks_of_one_sign_in_at_once_make_one_exchange(app, op):
    client = app.test_client()
    callback, state = start(client)
    copied = next(iter(login_cookie(client, state).items()))
    op.token_delay = 0.5  # the first exchange is still running when the second callback arrives
    answers = []
    racers = [threading.Thread(target=lambda: answers.append(with_cookie(app, *copied).get(callback))) for _ in "ab"]
    for racer in racers:
        racer.start()
    for racer in racers:
        racer.join()
    assert sorted(refusal(answer)[0] if answer.status_code != 302 else 302 for answer in answers) == [302, 400]
    assert [refusal(answer) for answer in answers if answer.status_code == 400] == [(400, UNKNOWN)]
    assert op.fetches["token"] == 1


def test_a_failed_exchange_gives_the_state_back_and_leaves_nothing_in_redis(app, op, fake_redis):
    client = app.test_client()
    callback, state = start(client)
    copied = next(iter(login_cookie(client, state).items()))
    op.token_failure = (400, {"error": "invalid_grant"})
    assert client.get(callback).status_code == 400
    assert redis_keys(fake_redis) == []
    op.token_failure = None  # the same code, now accepted: only a browser holding the cookie can try again
    assert with_cookie(app, *copied).get(callback).status_code == 302
    used = services_of(app).store.used_states.key(state)
    assert 0 < fake_redis.ttl(used) <= app.config["LOGIN_STATE_TTL"]


def test_callbacks_are_rate_limited_per_client_like_sign_in_starts(op, fake_redis):
    app = app_with_alice(op.issuer, fake_redis, RATE_LIMIT_LOGIN="2 per minute", PROXY_HOPS="1")
    client = app.test_client()
    callback, state = start(client)
    [(name, value)] = login_cookie(client, state).items()
    script = app.test_client(use_cookies=False)  # replays the cookie it was given, whatever the answers set
    here = {"X-Forwarded-For": "198.51.100.7", "Cookie": f"{name}={value}"}
    answers = [script.get(callback.replace("code=", "code=junk"), headers=here) for _ in range(3)]
    assert [answer.status_code for answer in answers] == [400, 400, 429]  # the provider refused the junk twice
    assert "too many requests from this address" in error_page_message(answers[2])
    assert op.fetches["token"] == 2
    assert client.get(callback, headers={"X-Forwarded-For": "198.51.100.8"}).status_code == 302


def services_of(app):
    with app.app_context():
        return services()
