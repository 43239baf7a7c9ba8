"""Principals built from validated claims under a provider profile: whose subject, and who is a user."""

import math

import pytest

from app.challenges import InvalidToken
from app.provider import provider_profile
from app.tokens.principal import SignedInIdentity, build_principal, signed_in_identity

LOGIN_CLIENTS = {"profile-poke-web"}


def test_a_user_token_without_the_profiles_subject_claim_names_no_subject():
    claims = {"sub": "pairwise-sub", "azp": "profile-poke-web", "scp": "svc:profile.private"}  # Entra, no oid
    with pytest.raises(InvalidToken) as refused:
        build_principal(claims, provider_profile("entra"), LOGIN_CLIENTS, expires_at=0)
    assert refused.value.message == "the access token has no subject"


def test_a_token_naming_no_client_is_not_a_users():
    claims = {"sub": "user-sub-1", "scope": "svc:profile.private", "preferred_username": "alice"}
    principal = build_principal(claims, provider_profile("keycloak"), LOGIN_CLIENTS, expires_at=0)
    assert (principal.subject, principal.is_user) == ("user-sub-1", False)


def test_a_principal_carries_the_tokens_name_when_it_is_text():
    claims = {"sub": "user-sub-1", "azp": "profile-poke-web", "preferred_username": "alice", "name": "Alice Liddell"}
    principal = build_principal(claims, provider_profile("keycloak"), LOGIN_CLIENTS, expires_at=0)
    assert (principal.username, principal.name) == ("alice", "Alice Liddell")  # a new profile's display name
    unnamed = build_principal({**claims, "name": 42}, provider_profile("keycloak"), LOGIN_CLIENTS, expires_at=0)
    assert unnamed.name is None


def test_an_id_token_gives_its_subject_username_and_name_for_linking():
    claims = {"sub": "user-sub-1", "preferred_username": "alice", "name": "Alice Liddell"}
    identity = signed_in_identity(claims, provider_profile("keycloak"))
    assert identity == SignedInIdentity(subject="user-sub-1", username="alice", name="Alice Liddell")


def test_an_id_token_without_its_subject_claim_names_the_empty_subject_the_sign_in_refuses():
    identity = signed_in_identity({"sub": "pairwise-sub", "name": "Alice"}, provider_profile("entra"))  # no oid
    assert identity == SignedInIdentity(subject="", username=None, name="Alice")


def test_a_principal_carries_the_tokens_acr_and_auth_time_in_whole_seconds():
    claims = {"sub": "user-sub-1", "azp": "profile-poke-web", "acr": "urn:dev:loa:2", "auth_time": 1_700_000_000.9}
    principal = build_principal(claims, provider_profile("keycloak"), LOGIN_CLIENTS, expires_at=0)
    assert (principal.acr, principal.auth_time) == ("urn:dev:loa:2", 1_700_000_000)  # what step-up judges


@pytest.mark.parametrize(
    "acr, auth_time",
    [(42, True), ("", "1700000000"), (None, math.inf), (["loa2"], math.nan), (None, None)],
    ids=["number and bool", "empty and text", "none and infinite", "list and nan", "missing"],
)
def test_a_malformed_acr_or_auth_time_is_as_if_absent(acr, auth_time):
    claims = {"sub": "user-sub-1", "azp": "profile-poke-web", "acr": acr, "auth_time": auth_time}
    principal = build_principal(claims, provider_profile("keycloak"), LOGIN_CLIENTS, expires_at=0)
    assert (principal.acr, principal.auth_time) == (None, None)
