"""The claims an ID token must carry (OpenID Connect Core 3.1.3.7): an `azp` naming this client when
it has several audiences or names one, an `exp` not yet past (within the leeway), an `iat` not further
ahead than the leeway. Against the stub issuer's keys, on a clock the test sets."""

import pytest

from app.errors import LoginFailed
from app.provider import LoginClient, PublicClient, login_client
from app.provider.discovery import Provider
from tests.helpers.clock import FakeClock

NOW = 1_800_000_000.0
LEEWAY = 60
CLIENT_ID = "profile-poke-web"


@pytest.fixture
def verify(stub, monkeypatch):
    """verify(**changes): the claims of an ID token whose claims are these changes to valid ones (None: left out)."""
    monkeypatch.setattr(login_client, "time", FakeClock(start=NOW))
    provider = Provider(stub.issuer, timeout=2, discovery_ttl=3600, refetch_interval=30)
    client = LoginClient(provider, PublicClient(CLIENT_ID, "openid", timeout=2), leeway=LEEWAY)

    def verify(**changes):
        claims = {"iss": stub.issuer, "aud": CLIENT_ID, "sub": "user-sub-1", "iat": NOW, "exp": NOW + 300}
        claims = {name: value for name, value in {**claims, **changes}.items() if value is not None}
        return client.verify_id_token(stub.sign(claims, header={"typ": "JWT"}), nonce=None)

    return verify


@pytest.mark.parametrize(
    "changes",
    [
        {"aud": [CLIENT_ID, "profile-poke-api"], "azp": CLIENT_ID},
        {"azp": CLIENT_ID},
        {"exp": NOW - LEEWAY + 0.5},
        {"iat": NOW + LEEWAY},
    ],
    ids=["several audiences, azp this client", "azp this client", "expired within the leeway", "iat the leeway ahead"],
)
def test_an_id_token_within_the_rules_is_taken(verify, changes):
    assert verify(**changes)["sub"] == "user-sub-1"


@pytest.mark.parametrize(
    ("changes", "problem"),
    [
        ({"aud": [CLIENT_ID, "profile-poke-api"]}, "wrong authorized party"),
        ({"aud": [CLIENT_ID, "profile-poke-api"], "azp": "profile-poke-api"}, "wrong authorized party"),
        ({"azp": "profile-poke-api"}, "wrong authorized party"),
        ({"exp": NOW - LEEWAY}, "expired"),
        ({"iat": NOW + LEEWAY + 0.5}, "missing or future iat"),
    ],
    ids=[
        "several audiences, no azp",
        "several audiences, azp another client",
        "one audience, azp another client",
        "expired the leeway ago",
        "iat beyond the leeway ahead",
    ],
)
def test_an_id_token_breaking_a_rule_is_refused_naming_it(verify, changes, problem):
    with pytest.raises(LoginFailed) as refused:
        verify(**changes)
    failure = refused.value
    assert (failure.status, failure.message, failure.reason) == (
        502,
        f"the ID token was refused: {problem}",
        "id_token_refused",
    )
