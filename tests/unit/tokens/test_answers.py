"""What introspection remembers of each token (app.tokens.answers), over fakeredis with times the test
gives: another instance reads exactly what this one learnt, for exactly as long as it was told."""

import base64
import hashlib
import json
import math

import pytest

from app.store.introspections import Introspections
from app.store.keys import Keys
from app.tokens.answers import SEEN_VALID_MAX, Answers, Known, Remembered, token_digest
from app.tokens.principal import Principal

KEYS = Keys("t:")
NOW = 1_700_000_000.0


def principal(expires_at: float = NOW + 600, **fields) -> Principal:
    return Principal(
        **{
            "subject": "user-sub-1",
            "scopes": frozenset({"svc:profile.private", "svc:interact.poke"}),
            "is_user": True,
            "username": "alice",
            "name": "Alice",
            "expires_at": expires_at,
            **fields,
        }
    )


@pytest.fixture
def shared(fake_redis):
    return Introspections(fake_redis, KEYS)


def kept_for(fake_redis, digest: str) -> float:
    """Seconds Redis keeps the value of `digest`, as it counts them (the real clock: a few ms may pass)."""
    return fake_redis.pttl(KEYS.introspection(digest)) / 1000


def test_a_token_is_known_by_the_base64url_sha256_of_it_without_padding():
    expected = base64.urlsafe_b64encode(hashlib.sha256(b"opaque-token-1").digest()).decode().rstrip("=")
    assert token_digest("opaque-token-1") == expected
    assert len(expected) == 43 and "=" not in expected


@pytest.mark.parametrize(
    "remembered",
    [
        principal(),
        principal(expires_at=math.inf),  # an answer without exp
        principal(expires_at=NOW + 600.25, username=None, name=None, bound_key="jkt-1", acr="mfa", auth_time=17),
    ],
    ids=["a token with exp", "a token without exp", "every optional field"],
)
def test_another_instance_reads_the_principal_this_one_was_told(shared, remembered):
    Answers(shared).answer("d1", remembered, until=NOW + 60, now=NOW)
    known = Answers(shared).known("d1", NOW + 1)
    assert known == Known(remembered, None, NOW + 60)
    assert type(known.principal.expires_at) is float


def test_another_instance_reads_the_refusal_this_one_was_told(shared):
    Answers(shared).refuse("d1", "the access token is not valid", until=NOW + 30, now=NOW)
    assert Answers(shared).known("d1", NOW + 1) == Known(None, "the access token is not valid", NOW + 30)


def test_an_answer_is_fresh_until_its_end_and_not_at_it():
    known = Known(principal(), None, NOW + 60)
    assert known.fresh(NOW + 59.999)
    assert not known.fresh(NOW + 60)


def test_an_answer_is_kept_in_redis_until_the_token_expires_when_that_is_later_than_fresh(shared, fake_redis):
    Answers(shared).answer("d1", principal(expires_at=NOW + 600), until=NOW + 60, now=NOW)
    assert kept_for(fake_redis, "d1") == pytest.approx(600, abs=1)


def test_an_answer_is_kept_in_redis_no_longer_than_a_day(shared, fake_redis):
    Answers(shared).answer("d1", principal(expires_at=math.inf), until=NOW + 60, now=NOW)
    assert kept_for(fake_redis, "d1") == pytest.approx(SEEN_VALID_MAX, abs=1) and SEEN_VALID_MAX == 86_400


def test_an_answer_is_kept_in_redis_while_fresh_even_past_the_tokens_life(shared, fake_redis):
    Answers(shared).answer("d1", principal(expires_at=NOW + 10), until=NOW + 60, now=NOW)
    assert kept_for(fake_redis, "d1") == pytest.approx(60, abs=1)


def test_a_refusal_is_kept_in_redis_until_its_end(shared, fake_redis):
    Answers(shared).refuse("d1", "no", until=NOW + 30, now=NOW)
    assert kept_for(fake_redis, "d1") == pytest.approx(30, abs=1)


def test_a_refusal_replaces_an_answer_in_redis(shared):
    Answers(shared).answer("d1", principal(), until=NOW + 60, now=NOW)
    Answers(shared).refuse("d1", "no", until=NOW + 30, now=NOW)
    assert Answers(shared).known("d1", NOW + 1) == Known(None, "no", NOW + 30)


def test_an_answer_past_its_freshness_still_says_the_token_was_seen_valid(shared):
    Answers(shared).answer("d1", principal(), until=NOW + 60, now=NOW)
    known = Answers(shared).known("d1", NOW + 100)
    assert known == Known(principal(), None, NOW + 60) and not known.fresh(NOW + 100)


def test_a_fresh_answer_read_from_redis_is_then_known_without_redis(shared, fake_redis):
    answers = Answers(shared)
    Answers(shared).answer("d1", principal(), until=NOW + 60, now=NOW)
    Answers(shared).refuse("d2", "no", until=NOW + 30, now=NOW)
    answers.known("d1", NOW + 1), answers.known("d2", NOW + 1)
    fake_redis.flushall()
    assert answers.known("d1", NOW + 2) == Known(principal(), None, NOW + 60)
    assert answers.known("d2", NOW + 2) == Known(None, "no", NOW + 30)
    assert answers.known("d1", NOW + 60) is None  # and in this process only while fresh


def test_an_answer_no_longer_fresh_is_not_kept_in_the_process(shared, fake_redis):
    answers = Answers(shared)
    Answers(shared).answer("d1", principal(), until=NOW + 60, now=NOW)
    assert answers.known("d1", NOW + 100) is not None
    fake_redis.flushall()
    assert answers.known("d1", NOW + 100) is None


def test_a_process_knows_its_own_answers_and_refusals_while_fresh(shared, fake_redis):
    answers = Answers(shared)
    answers.answer("d1", principal(), until=NOW + 60, now=NOW)
    answers.refuse("d2", "no", until=NOW + 30, now=NOW)
    fake_redis.flushall()
    assert answers.known("d1", NOW + 59) == Known(principal(), None, NOW + 60)
    assert answers.known("d2", NOW + 29) == Known(None, "no", NOW + 30)
    assert answers.known("d1", NOW + 60) is None and answers.known("d2", NOW + 30) is None


@pytest.mark.parametrize(
    "answer_read, junk_read",
    [(False, False), (True, False), (False, True), (True, True)],
    ids=["both learnt here", "the answer read from redis", "the refusals read from redis", "both read from redis"],
)
def test_junk_refusals_never_push_a_valid_answer_out_of_the_process(shared, fake_redis, answer_read, junk_read):
    answers = Answers(shared, cache_size=2)
    (Answers(shared) if answer_read else answers).answer("valid", principal(), until=NOW + 60, now=NOW)
    answers.known("valid", NOW)
    for number in range(5):
        (Answers(shared) if junk_read else answers).refuse(f"junk-{number}", "no", until=NOW + 30, now=NOW)
        answers.known(f"junk-{number}", NOW)
    fake_redis.flushall()
    assert answers.known("valid", NOW + 1) == Known(principal(), None, NOW + 60)


@pytest.mark.parametrize(
    "value",
    [b"not json", b"[]", b'{"until": 1}', b'{"principal": {"subject": "s"}, "until": 1}', b'{"refused": "x"}'],
    ids=["not JSON", "a list", "neither answer nor refusal", "a principal missing fields", "no until"],
)
def test_a_value_of_another_shape_in_redis_is_as_never_seen(shared, fake_redis, value):
    fake_redis.set(KEYS.introspection("d1"), value)
    assert Answers(shared).known("d1", NOW) is None


def test_the_process_map_keeps_the_newest_entries_up_to_its_size():
    remembered = Remembered(2)
    for name in ("a", "b", "c"):
        remembered.put(name, name.upper(), until=NOW + 60)
    assert [remembered.get(name, NOW) for name in ("a", "b", "c")] == [None, "B", "C"]


def test_an_entry_put_again_counts_as_the_newest():
    remembered = Remembered(2)
    remembered.put("a", "A", until=NOW + 60)
    remembered.put("b", "B", until=NOW + 60)
    remembered.put("a", "A2", until=NOW + 60)
    remembered.put("c", "C", until=NOW + 60)
    assert [remembered.get(name, NOW) for name in ("a", "b", "c")] == ["A2", None, "C"]


def test_the_process_map_gives_an_entry_until_its_end_and_not_at_it():
    remembered = Remembered(2)
    remembered.put("a", "A", until=NOW + 60)
    assert remembered.get("a", NOW + 59.999) == "A"
    assert remembered.get("a", NOW + 60) is None
    assert remembered.get("b", NOW) is None


def test_an_answer_without_exp_is_kept_in_redis_as_standard_json(shared, fake_redis):
    def no_constants(name):
        raise ValueError(f"{name} is not JSON")

    Answers(shared).answer("d1", principal(expires_at=math.inf), until=NOW + 60, now=NOW)
    kept = json.loads(fake_redis.get(KEYS.introspection("d1")), parse_constant=no_constants)
    assert kept["principal"]["expires_at"] is None and kept["until"] == NOW + 60
