"""A sign-in that asked for `max_age` (OpenID Connect Core 3.1.2.1): its ID token's auth_time may be
as old as max_age plus the leeway and as far ahead as the leeway, no more; an ID token without a
numeric auth_time is refused the same way. Against the stub issuer's keys, on a clock the test sets."""

import pytest

from app.errors import LoginFailed
from app.provider import LoginClient, PublicClient, login_client
from app.provider.discovery import Provider
from tests.helpers.clock import FakeClock

NOW = 1_800_000_000.0
LEEWAY, MAX_AGE = 60, 300
STALE = (
    f"the identity provider did not sign you in within the last {MAX_AGE} s, as this sign-in asked;"
    " please sign in again"
)


@pytest.fixture
def verify(stub, monkeypatch):
    """verify(auth_time): the claims of an ID token naming `auth_time` (None: none), checked with MAX_AGE."""
    monkeypatch.setattr(login_client, "time", FakeClock(start=NOW))
    provider = Provider(stub.issuer, timeout=2, discovery_ttl=3600, refetch_interval=30)
    client = LoginClient(provider, PublicClient("profile-poke-web", "openid", timeout=2), leeway=LEEWAY)

    def verify(auth_time):
        claims = {"iss": stub.issuer, "aud": "profile-poke-web", "sub": "user-sub-1", "iat": NOW, "exp": NOW + 300}
        if auth_time is not None:
            claims["auth_time"] = auth_time
        return client.verify_id_token(stub.sign(claims, header={"typ": "JWT"}), nonce=None, max_age=MAX_AGE)

    return verify


@pytest.mark.parametrize(
    "age",
    [0, MAX_AGE, MAX_AGE + LEEWAY, -LEEWAY],
    ids=["just now", "max_age ago", "max_age plus the leeway ago", "the leeway ahead"],
)
def test_an_auth_time_within_max_age_and_the_leeway_is_taken(verify, age):
    assert verify(NOW - age)["auth_time"] == NOW - age


@pytest.mark.parametrize(
    "auth_time",
    [NOW - MAX_AGE - LEEWAY - 0.5, NOW + LEEWAY + 0.5, None, str(int(NOW)), True, [NOW]],
    ids=["older", "further ahead", "none", "a string", "a boolean", "a list"],
)
def test_any_other_auth_time_is_refused_as_a_stale_sign_in_naming_its_subject(verify, auth_time):
    with pytest.raises(LoginFailed) as refused:
        verify(auth_time)
    failure = refused.value
    assert (failure.status, failure.message) == (502, STALE)
    assert (failure.reason, failure.sub) == ("stale_auth_time", "user-sub-1")
