"""The read-only look at a session behind GET /auth/session, and what a session's sign-in proves as
the guard reads it (fakeredis, the project's own clock)."""

import pytest

from app.challenges import SessionEnded
from app.sessions import credentials, lifetime, records
from app.sessions.credentials import SessionTokens
from app.sessions.interface import session_ref
from app.sessions.records import sign_in_proof
from app.store.keys import Keys
from app.store.session_index import SessionIndex
from app.store.tokensets import TokenSets
from tests.helpers.clock import FakeClock
from tests.helpers.fake_login_client import FakeLoginClient

SECRET = "a-secret-key-of-at-least-32-characters"
SID = "the-cookie-value"
REF = session_ref(SECRET, SID)
KEYS = Keys("t:")
PROOF = {"acr": "urn:acr:otp", "amr": ["pwd", "otp"], "auth_time": 1_700_000_000}


@pytest.fixture
def tokens(fake_redis):
    return SessionTokens(
        TokenSets(fake_redis, KEYS),
        FakeLoginClient(),
        SessionIndex(fake_redis, KEYS),
        secret_key=SECRET,
        idle_timeout=1800,
        max_age=28800,
        idp_timeout=0.05,
    )


@pytest.fixture
def clock(monkeypatch):
    fake = FakeClock()
    for module in (credentials, lifetime, records):
        monkeypatch.setattr(module, "time", fake)
    return fake


def signed_in(tokens, **proof):
    response = {"access_token": "at-0", "refresh_token": "rt-0", "expires_in": 300, "scope": "openid"}
    return tokens.start(SID, username="alice", sub="sub-alice", response=response, **proof)


def test_inspect_never_extends_the_session_and_says_when_its_idle_timeout_ends(tokens, fake_redis, clock):
    signed_in(tokens)
    fake_redis.set(KEYS.session(REF), "flask-session", px=5_000)
    fake_redis.pexpire(KEYS.token_set(REF), 5_000)
    record, idle_expires_at = tokens.inspect(SID)
    assert record["user"] == "alice"
    assert clock.time() + 4 < idle_expires_at <= clock.time() + 5
    assert fake_redis.pttl(KEYS.token_set(REF)) <= 5_000
    assert fake_redis.pttl(KEYS.session(REF)) <= 5_000


def test_inspect_of_no_session_or_one_past_its_end_is_session_ended(tokens, fake_redis, clock):
    with pytest.raises(SessionEnded):
        tokens.inspect("never-signed-in")
    signed_in(tokens)
    clock.advance(28_801)
    with pytest.raises(SessionEnded):
        tokens.inspect(SID)
    assert not fake_redis.exists(KEYS.token_set(REF))


def test_a_cookie_credential_carries_the_sessions_acr_and_auth_time(tokens):
    signed_in(tokens, **PROOF)
    credential = tokens.credential_for_cookie(SID)
    assert (credential.acr, credential.auth_time) == ("urn:acr:otp", 1_700_000_000)


def test_a_session_without_a_proof_gives_a_credential_without_one(tokens):
    signed_in(tokens)
    credential = tokens.credential_for_cookie(SID)
    assert (credential.acr, credential.auth_time) == (None, None)


@pytest.mark.parametrize(
    ("record", "proof"),
    [
        (PROOF, PROOF),
        ({"acr": None, "amr": None, "auth_time": None}, {}),
        ({}, {}),
        ({"acr": "", "amr": ["pwd", 7], "auth_time": True}, {}),
        ({"acr": 5, "amr": "pwd", "auth_time": "1700000000"}, {}),
        ({"auth_time": 1_700_000_000.9}, {"auth_time": 1_700_000_000}),
        ({"auth_time": float("inf")}, {}),
    ],
)
def test_a_sign_in_proof_keeps_only_well_formed_members(record, proof):
    assert sign_in_proof(record) == proof


@pytest.mark.parametrize("ttl_ms, left", [(1_000_000, 1000), (None, 0)], ids=["a TTL", "no TTL"])
def test_inspect_says_when_the_idle_timeout_ends_from_the_records_ttl(tokens, fake_redis, clock, ttl_ms, left):
    signed_in(tokens)
    if ttl_ms is None:
        fake_redis.persist(KEYS.token_set(REF))  # PTTL -1: nothing left to count down
    else:
        fake_redis.pexpire(KEYS.token_set(REF), ttl_ms)
    _, idle_expires_at = tokens.inspect(SID)
    assert clock.time() + left - 0.1 < idle_expires_at <= clock.time() + left


def test_a_session_within_a_millisecond_of_its_end_is_kept_one_millisecond():
    now = 1_800_000_000.0
    ends_soon = {"ends": now + 0.0005}
    assert lifetime.Lifetime(None, None, idle_timeout=1800, max_age=28800).ttl_ms(ends_soon, now) == 1
