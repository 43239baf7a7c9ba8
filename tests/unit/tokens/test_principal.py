"""Principals built from validated claims under a provider profile: whose subject, and who is a user."""

import pytest

from app.challenges import InvalidToken
from app.provider import provider_profile
from app.tokens.principal import build_principal

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
