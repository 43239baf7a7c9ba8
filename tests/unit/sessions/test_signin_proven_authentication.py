"""What the session keeps of how the user authenticated: the ID token's acr, amr and auth_time, each
only with its own type (a string, a list of strings, an integer), else None."""

import pytest

from app.sessions.records import proven_authentication


def test_acr_amr_and_auth_time_of_their_types_are_kept():
    claims = {"acr": "urn:dev:loa:2", "amr": ["pwd", "otp"], "auth_time": 1_790_000_000, "sub": "x"}
    assert proven_authentication(claims) == {"acr": "urn:dev:loa:2", "amr": ["pwd", "otp"], "auth_time": 1_790_000_000}


def test_a_token_without_them_keeps_none_of_them():
    assert proven_authentication({"sub": "x"}) == {"acr": None, "amr": None, "auth_time": None}


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("acr", 2),
        ("acr", ""),
        ("acr", ["urn:dev:loa:2"]),
        ("amr", "pwd"),
        ("amr", ["pwd", 1]),
        ("amr", {"pwd": True}),
        ("auth_time", "1790000000"),
        ("auth_time", 1.79e9),
        ("auth_time", True),
        ("auth_time", None),
    ],
)
def test_a_claim_of_the_wrong_type_is_never_trusted(name, value):
    assert proven_authentication({name: value})[name] is None
