"""AccessTokens on its own, against the stub issuer: the verified-token cache keeps exactly as many tokens
as its bound says, the newest, and a token is dead at exp + leeway to the fraction of a second."""

import time

import pytest

from app.challenges import InvalidToken
from app.provider.discovery import Provider
from app.tokens.access import AccessTokens

UNKNOWN_KEY = "the access token was not signed by a known key"


def access_tokens(stub, **options) -> AccessTokens:
    provider = Provider(stub.issuer, timeout=2, discovery_ttl=3600, refetch_interval=0)
    return AccessTokens(
        provider, audience="profile-poke-api", login_clients={"profile-poke-web"}, **{"leeway": 30, **options}
    )


def refusal(tokens: AccessTokens, token: str) -> str | None:
    try:
        tokens.verify(token)
    except InvalidToken as refused:
        return refused.message
    return None


@pytest.mark.parametrize("size", [2, 3])
def test_the_cache_keeps_the_newest_tokens_up_to_its_size(stub, size):
    tokens = access_tokens(stub, cache_size=size)
    sent = [stub.sign(stub.access_claims(jti=f"t{number}")) for number in range(size + 1)]
    for token in sent:
        tokens.verify(token)
    successor = stub.new_key("stub-key-2")
    stub.published = [successor]
    tokens.verify(stub.sign(stub.access_claims(jti="new"), key=successor))  # pushes out the oldest but one
    assert [refusal(tokens, token) for token in sent] == [UNKNOWN_KEY, UNKNOWN_KEY] + [None] * (size - 1)


def test_a_token_is_dead_at_exp_plus_leeway_even_within_the_registrys_whole_second(stub, monkeypatch):
    # The claims registry compares whole seconds: at 1000.75 it takes a token that expired at 1000.5.
    now = float(int(time.time())) + 0.75
    monkeypatch.setattr(time, "time", lambda: now)
    tokens = access_tokens(stub, leeway=0)
    lapsed = stub.sign(stub.access_claims(exp=now - 0.25, iat=int(now) - 60))
    assert refusal(tokens, lapsed) == "the access token has expired"
    live = stub.sign(stub.access_claims(exp=now + 0.25, iat=int(now) - 60))
    assert refusal(tokens, live) is None


def test_the_leeway_counts_to_the_fraction_of_a_second_too(stub, monkeypatch):
    now = float(int(time.time())) + 0.75
    monkeypatch.setattr(time, "time", lambda: now)
    tokens = access_tokens(stub, leeway=10)
    for lapsed in (now - 10.25, now - 10):  # the second dies this very instant
        assert refusal(tokens, stub.sign(stub.access_claims(exp=lapsed, iat=int(now) - 60))) == (
            "the access token has expired"
        )
    assert refusal(tokens, stub.sign(stub.access_claims(exp=now - 9.75, iat=int(now) - 60))) is None


def test_a_verified_token_is_vouched_for_by_the_cache_until_exp_plus_leeway(stub):
    tokens = access_tokens(stub, leeway=30)
    token = stub.sign(stub.access_claims(exp=int(time.time()) + 20))  # expires within the leeway
    tokens.verify(token)
    successor = stub.new_key("stub-key-2")
    stub.published = [successor]
    tokens.verify(stub.sign(stub.access_claims(jti="new"), key=successor))  # the first key is gone
    assert refusal(tokens, token) is None  # only the cache can still vouch for it


def test_a_cached_token_is_dead_at_exp_plus_leeway_to_the_fraction_of_a_second(stub, monkeypatch):
    now = float(int(time.time())) + 0.75
    monkeypatch.setattr(time, "time", lambda: now)
    tokens = access_tokens(stub, leeway=10)
    token = stub.sign(stub.access_claims(exp=now + 0.25, iat=int(now) - 60))
    assert refusal(tokens, token) is None  # verified, and cached until exp + leeway
    now += 10.25  # exactly exp + leeway
    assert refusal(tokens, token) == "the access token has expired"


def test_a_cached_token_found_expired_gives_up_its_place(stub, monkeypatch):
    now = float(int(time.time()))
    monkeypatch.setattr(time, "time", lambda: now)
    tokens = access_tokens(stub, cache_size=2, leeway=0)
    lasting, brief = (stub.sign(stub.access_claims(jti=jti, exp=now + exp)) for jti, exp in (("a", 600), ("b", 1)))
    tokens.verify(lasting)
    tokens.verify(brief)
    now += 1
    assert refusal(tokens, brief) == "the access token has expired"  # and forgotten: one place free
    successor = stub.new_key("stub-key-2")
    stub.published = [successor]
    tokens.verify(stub.sign(stub.access_claims(jti="c"), key=successor))  # the first key is gone
    assert refusal(tokens, lasting) is None  # only the cache can still vouch for it
