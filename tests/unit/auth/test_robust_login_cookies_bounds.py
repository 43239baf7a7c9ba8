"""The edges of pending sign-ins, by direct calls on PendingSignIns and SignIn.begin under a fixed clock:
the microsecond a state expires, the 4 KB a cookie may have, the byte and count budget of a browser's
cookies, the reason each refusal gives, and formats that must not change between releases (a sign-in
started on one instance finishes on another, before and after a deploy)."""

from urllib.parse import parse_qs, urlsplit

import pytest

from app.auth import pending as pending_module
from app.auth.pending import (
    MAX_COOKIE,
    MAX_PENDING_BYTES,
    OTHER_BROWSER,
    SEALING_INFO,
    UNKNOWN_STATE,
    NotPending,
    Pending,
    PendingSignIns,
    nonce_of,
)
from app.extensions import services
from app.sessions.sealing import Sealer
from tests.helpers.apps import app_with_alice
from tests.helpers.clock import FakeClock

SECRET = "k" * 40
PREFIX = "__Host-login"
NOW = 1_800_000_000.0  # 2027-01-15: expiries of 16 decimal digits of microseconds, as until 2286
NOW_US = 1_800_000_000_000_000
EXPIRES = NOW + 600
VERIFIER = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"
# A sign-in this release started at NOW (under SECRET, TTL 600 s) for /people?tab=2 with prompt=none and
# max_age=300: its state, the cookie that keeps it, and the nonce it sent to the provider.
STARTED_STATE = "BmUXTFvGADGU2iX4VYK3JeHT7EhrcDGH8DVt3rBbX0OaILhbc_ICTbjXvT6K"
STARTED_COOKIE = (
    "__Host-login-3UD2lxm8OvytpO7j",
    "1800000600000000.v2.CliR5Hfz2larUlFkjOt4bJKoanUEnP_fzMaZkDL_pTaR7YqHb6uZKoFDKUYvgdGARLYUWOwoFfFwtveP9JHyQMD3"
    "i6zwHIGI0GZs8oe3rpcTxt4g23h1K7-qgHJIXTL1bkIz-IGpXZ0=",
)
STARTED_NONCE = "Vnh-Qvzq1jhKQ5KTIHk8FPrd4qQMJ0EoOFVWtZ1HI58"


@pytest.fixture
def clock(monkeypatch):
    clock = FakeClock(NOW)
    monkeypatch.setattr(pending_module, "time", clock)
    return clock


@pytest.fixture
def sign_ins(clock):
    return PendingSignIns(SECRET, [], cookie_prefix=PREFIX, ttl_seconds=600)


def refusal_reason(sign_ins, state, cookies) -> str:
    with pytest.raises(NotPending) as refused:
        sign_ins.opened(state, cookies)
    return refused.value.reason


def test_a_sign_in_started_before_a_deploy_opens_after_it_with_the_nonce_it_sent(sign_ins):
    assert sign_ins.cookie_name(STARTED_STATE) == STARTED_COOKIE[0]
    opened = sign_ins.opened(STARTED_STATE, dict([STARTED_COOKIE]))
    assert opened == Pending(VERIFIER, "/people?tab=2", "none", "300", expires_at=EXPIRES)
    assert nonce_of(VERIFIER) == STARTED_NONCE  # what the ID token must carry back


def test_a_login_cookie_keeps_its_four_fields_as_compact_utf_8_json(sign_ins):
    state, _, value = sign_ins.start(Pending(VERIFIER, "/\U0001f600", "none", ""))
    plaintext, _ = Sealer(SECRET, [], info=SEALING_INFO).open(state, value.partition(".")[2])
    # No spaces and no \u escapes: every byte counts against MAX_PENDING_BYTES.
    assert plaintext.decode() == f'["{VERIFIER}","/\U0001f600","none",""]'


def test_a_state_is_refused_from_the_microsecond_it_expires(sign_ins, monkeypatch):
    state, name, value = sign_ins.start(Pending(VERIFIER, "/", "", ""))
    monkeypatch.setattr(pending_module, "time", FakeClock(EXPIRES - 0.000001))
    assert sign_ins.opened(state, {name: value}).expires_at == EXPIRES
    monkeypatch.setattr(pending_module, "time", FakeClock(EXPIRES))
    assert refusal_reason(sign_ins, state, {name: value}) == UNKNOWN_STATE


def forged_mac(state: str) -> str:
    return state[:-1] + ("A" if state[-1] != "A" else "B")  # 60 characters are 45 bytes: the last is the MAC's


def resealed(record: bytes):
    """A change of a login cookie's value to one sealed as the app seals, around `record` instead."""
    return lambda state, value: f"{value.partition('.')[0]}.{Sealer(SECRET, [], info=SEALING_INFO).seal(state, record)}"


def kept(state: str) -> str:
    return state


def unchanged(state: str, value: str) -> str:
    return value


@pytest.mark.parametrize(
    ("change_state", "change_value", "reason"),
    [
        (lambda state: state[:-1], unchanged, UNKNOWN_STATE),
        (forged_mac, unchanged, UNKNOWN_STATE),
        (kept, lambda state, value: value + "A" * (MAX_COOKIE - len(value) + 1), UNKNOWN_STATE),
        (kept, lambda state, value: value[:-8], UNKNOWN_STATE),
        (kept, resealed(b'["v","/",""]'), UNKNOWN_STATE),
        (kept, resealed(b"\xff"), UNKNOWN_STATE),
        (kept, lambda state, value: None, OTHER_BROWSER),
    ],
    ids=["not a state", "a MAC not ours", "4097 characters", "cut short", "three fields", "not UTF-8", "no cookie"],
)
def test_each_refusal_names_its_reason_for_the_audit(sign_ins, change_state, change_value, reason):
    state, _, value = sign_ins.start(Pending(VERIFIER, "/", "", ""))
    state = change_state(state)
    cookie = change_value(state, value)
    cookies = {} if cookie is None else {sign_ins.cookie_name(state): cookie}
    assert refusal_reason(sign_ins, state, cookies) == reason


def test_a_login_cookie_of_exactly_4096_characters_opens(sign_ins):
    # 17 + 3 + 4 * (12 + 16 + len('["<43>","<2973>","",""]') = 3057 bytes) / 3 = 4096 characters
    return_to = "/" + "p" * 2972
    state, name, value = sign_ins.start(Pending(VERIFIER, return_to, "", ""))
    assert len(value) == MAX_COOKIE
    assert sign_ins.opened(state, {name: value}) == Pending(VERIFIER, return_to, "", "", expires_at=EXPIRES)


NEW_COOKIE = 1000  # bytes of the cookie of the sign-in being started
ROOM = MAX_PENDING_BYTES - NEW_COOKIE  # what the others may take


def held(letter: str, expires, size: int) -> tuple[str, str]:
    """A login cookie named by `letter`, expiring at `expires` (µs), of `size` bytes (name, '=' and value)."""
    name = f"{PREFIX}-{letter * 16}"
    return name, f"{expires}." + "x" * (size - len(name) - 1 - len(str(expires)) - 1)


@pytest.mark.parametrize(
    ("cookies", "dropped"),
    [
        ([held("a", NOW_US - 1, 100)], ["a"]),
        ([held("a", NOW_US, 100)], ["a"]),
        ([held("a", NOW_US + 1, 100)], []),
        ([held("a", NOW_US + 1, ROOM)], []),
        ([held("a", NOW_US + 1, ROOM + 1)], ["a"]),
        ([held("a", NOW_US + 1, ROOM // 2 + 1), held("b", NOW_US + 2, ROOM // 2 + 1)], ["a"]),
        ([held("a", 10**16, 100)], []),
        ([held("a", 10**17, 100)], ["a"]),
        ([held("a", "9" * 5001, 100)], ["a"]),
    ],
    ids=[
        "expired a microsecond ago",
        "expiring this microsecond",
        "live for a microsecond more",
        "filling the room exactly",
        "one byte over the room",
        "two that fit only alone: the older goes",
        "17 digits of expiry: a time",
        "18 digits: unreadable",
        "5001 digits: unreadable, never parsed",
    ],
)
def test_a_browsers_sign_ins_are_kept_while_live_and_within_the_room_a_new_one_leaves(sign_ins, cookies, dropped):
    assert sign_ins.crowded(dict(cookies), NEW_COOKIE) == [f"{PREFIX}-{letter * 16}" for letter in dropped]


@pytest.fixture
def sign_in(op, fake_redis):
    app = app_with_alice(op.issuer, fake_redis)
    with app.app_context():
        yield services().sign_in


def test_begin_sends_the_sign_ins_own_parameters_to_the_provider(sign_in):
    started = sign_in.begin(return_to="/", cookies={}, params={"login_hint": "alice", "max_age": "300"})
    query = parse_qs(urlsplit(started.url).query)
    assert (query["login_hint"], query["max_age"]) == (["alice"], ["300"])


@pytest.mark.parametrize(("spare", "dropped"), [(0, False), (1, True)])
def test_begin_makes_room_for_the_exact_size_of_its_new_cookie(sign_in, spare, dropped):
    name, value = sign_in.begin(return_to="/", cookies={}).cookie  # every sign-in to "/" has a cookie this size
    other = f"{name[:-1]}Z" if name[-1] != "Z" else f"{name[:-1]}Y"
    expires = value.partition(".")[0]
    room = MAX_PENDING_BYTES - (len(name) + 1 + len(value))
    cookies = {other: f"{expires}." + "x" * (room + spare - len(other) - 1 - len(expires) - 1)}
    assert sign_in.begin(return_to="/", cookies=cookies).dropped == ([other] if dropped else [])
