"""A session's stored record, by direct calls on fakeredis: why a record that cannot be opened ended
its session (the warning operators read), re-sealing under a new SECRET_KEY, how long the end of a
session is remembered, how it is told, and what a token response changes."""

import logging
import secrets

import pytest

from app.sessions import records
from app.sessions.records import END_TOLD_FOR, MAX_NAMED, SessionRecords, with_response
from app.sessions.sealing import VERSION, Sealer
from app.store.keys import Keys
from app.store.tokensets import TokenSets
from tests.helpers.clock import FakeClock

SECRET, OLD_SECRET = secrets.token_urlsafe(32), secrets.token_urlsafe(32)
SID, REF = "the-cookie-value", "the-session-ref"
KEYS = Keys("r:")
NOW = 1_800_000_000.0


@pytest.fixture
def records_clock(monkeypatch):
    """The session records' clock, moved only by the test (the shared `clock` fixture moves the provider's)."""
    fake = FakeClock(start=NOW)
    monkeypatch.setattr(records, "time", fake)
    return fake


@pytest.fixture
def token_sets(fake_redis):
    return TokenSets(fake_redis, KEYS)


def a_record(**changes) -> dict:
    record = {
        "v": 1,
        "id": "public-id",
        "user": "alice",
        "sub": "sub-alice",
        "scope": "openid",
        "started": NOW,
        "ends": NOW + 28_800,
        "expires_at": NOW + 300,
        "access_token": "at-0",
        "refresh_token": "rt-0",
        "id_token": "it-0",
    }
    return {**record, **changes}


def _sealed(plaintext: bytes) -> dict:
    return {**Sealer(SECRET, []).seal_record(SID, a_record()), "sealed": Sealer(SECRET, []).seal(SID, plaintext)}


UNOPENABLE = {
    "not sealed": (lambda: {**a_record(), "sealed": "at-0"}, "not a sealed value"),
    "not base64": (lambda: {**a_record(), "sealed": f"{VERSION}.not-base64!"}, "not base64"),
    "truncated": (lambda: {**a_record(), "sealed": f"{VERSION}.AAAA"}, "truncated"),
    "another cookie's": (lambda: Sealer(SECRET, []).seal_record("another-cookie", a_record()), "no key opens it"),
    "not JSON": (lambda: _sealed(b"\xffnot json"), "it opens to something that is not JSON"),
    "not a token set": (lambda: _sealed(b'{"access_token": 5}'), "it opens to something that is not a token set"),
    "a field missing": (
        lambda: Sealer(SECRET, []).seal_record(SID, {**a_record(), "user": None}),
        "its field user is missing or not a str",
    ),
}


@pytest.mark.parametrize("case", UNOPENABLE)
def test_a_record_that_cannot_be_opened_is_logged_with_why_and_ends_its_session(token_sets, fake_redis, caplog, case):
    stored, why = UNOPENABLE[case]
    fake_redis.set(KEYS.token_set(REF), b"left behind")
    with caplog.at_level(logging.WARNING, logger=records.__name__):
        assert SessionRecords(token_sets, Sealer(SECRET, [])).opened(SID, REF, stored()) is None
    assert caplog.messages == [f"session ended: its tokens cannot be unsealed ({why})"]
    assert fake_redis.get(KEYS.token_set(REF)) is None


def test_opening_gives_the_record_back_without_its_sealed_fields():
    record = a_record()
    sealer = Sealer(SECRET, [])
    assert sealer.open_record(SID, sealer.seal_record(SID, record)) == (record, False)


def test_a_record_sealed_under_an_old_key_is_sealed_again_and_names_the_version_stored(
    token_sets, fake_redis, records_clock
):
    token_sets.create(REF, Sealer(OLD_SECRET, []).seal_record(SID, a_record()), 60_000, end={}, end_ttl_ms=60_000)
    session_records = SessionRecords(token_sets, Sealer(SECRET, [OLD_SECRET]))
    record = session_records.opened(SID, REF, token_sets.load(REF)[0])
    stored, _ = token_sets.load(REF)
    assert record["v"] == stored["v"] == 2
    assert Sealer(SECRET, []).open_record(SID, stored) == ({**a_record(), "v": 2}, False)


def test_the_end_of_a_session_is_remembered_a_day_past_its_absolute_end(token_sets, fake_redis, records_clock):
    SessionRecords(token_sets, Sealer(SECRET, [])).create(SID, REF, a_record(), 60_000)
    expected_ms = (28_800 + END_TOLD_FOR) * 1000
    assert expected_ms - 5_000 < fake_redis.pttl(KEYS.session_end(REF)) <= expected_ms


@pytest.mark.parametrize("ends, reason", [(NOW, "absolute"), (NOW + 0.001, "idle")], ids=["at its end", "before"])
def test_a_session_found_gone_at_its_absolute_end_is_told_as_absolute(
    token_sets, records_clock, audit_lines, ends, reason
):
    token_sets.create(REF, {"v": 1}, 60_000, end={"id": "public-id", "ends": ends}, end_ttl_ms=60_000)
    SessionRecords(token_sets, Sealer(SECRET, [])).found_ended(REF)
    [ended] = audit_lines.events("session.ended")
    assert (ended["reason"], ended["session"]) == (reason, "public-id")


@pytest.mark.parametrize("length, named", [(MAX_NAMED, True), (MAX_NAMED + 1, False)])
def test_a_user_name_up_to_the_longest_named_is_repeated_in_the_end_event(token_sets, audit_lines, length, named):
    SessionRecords(token_sets, Sealer(SECRET, [])).end_at_limit(REF, a_record(user="u" * length))
    [ended] = audit_lines.events("session.ended")
    assert ended.get("user") == ("u" * length if named else None)


@pytest.mark.parametrize(
    "refresh_expires_in, ends",
    [(0, NOW + 28_800), (1, NOW + 1), (None, NOW + 28_800)],
    ids=["zero: not a bound", "one second", "absent"],
)
def test_a_session_never_outlives_a_refresh_token_that_expires(refresh_expires_in, ends):
    response = {"access_token": "at-1", "refresh_expires_in": refresh_expires_in}
    assert with_response(a_record(), response, NOW)["ends"] == ends


def test_an_access_token_without_expires_in_is_taken_to_last_five_minutes():
    assert with_response(a_record(), {"access_token": "at-1"}, NOW)["expires_at"] == NOW + 300
