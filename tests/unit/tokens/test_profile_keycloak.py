"""The `generic` and `keycloak` profiles, with tokens shaped like Keycloak's.

Fixtures follow Keycloak's documented access tokens: "Server Administration Guide", sections
"Service accounts" and "Audience support" (https://www.keycloak.org/docs/latest/server_admin/),
and "Securing Applications and Services Guide" (https://www.keycloak.org/docs/latest/securing_apps/):
`sub` is the user id, `azp` the client, `scope` a space-delimited string, `preferred_username` the
login name; a service account's token has a user UUID as `sub` and `preferred_username`
`service-account-<client>`.
"""

import time

import pytest

USER_ID = "f1b2c3d4-0000-4000-8000-000000000001"


def keycloak_claims(api, **overrides) -> dict:
    now = int(time.time())
    claims = {
        "exp": now + 300,
        "iat": now,
        "jti": "e5f6",
        "iss": api.stub.issuer,
        "aud": ["profile-poke-api", "account"],
        "sub": USER_ID,
        "typ": "Bearer",
        "azp": "profile-poke-web",
        "session_state": "s1",
        "sid": "s1",
        "scope": "openid profile svc:profile.private svc:interact.poke",
        "preferred_username": "alice",
        "name": "Alice Liddell",
        "email": "alice@example.test",
    }
    return {**claims, **overrides}


@pytest.fixture(params=["generic", "keycloak"])
def api(vendor_api, request):
    api = vendor_api(OIDC_PROVIDER_PROFILE=request.param)
    api.add_profile("alice", sub=USER_ID)
    return api


def test_user_token_reads_the_own_profile(api):
    response = api.call(keycloak_claims(api))
    assert response.status_code == 200
    assert response.json["data"]["handle"] == "@alice"


def test_app_token_of_a_service_account_is_not_a_user(api):
    claims = keycloak_claims(
        api, sub="0a1b2c3d-0000-4000-8000-00000000000s", preferred_username="service-account-profile-poke-web"
    )
    response = api.call(claims)
    assert response.status_code == 403
    assert response.json["error"] == {"code": "forbidden", "message": "a user-delegated token is required"}


def test_app_token_whose_subject_is_its_client_is_not_a_user(api):
    response = api.call(keycloak_claims(api, sub="profile-poke-web", preferred_username=None))
    assert response.status_code == 403
    assert response.json["error"]["message"] == "a user-delegated token is required"


def test_missing_scope_is_insufficient_scope(api):
    response = api.call(keycloak_claims(api, scope="openid svc:interact.poke"))
    assert response.status_code == 403
    assert response.json["error"] == {"code": "insufficient_scope", "message": "scope svc:profile.private required"}


def test_issuer_other_than_the_configured_one_is_refused(api):
    response = api.call(keycloak_claims(api, iss=api.stub.issuer + "/"))
    assert response.status_code == 401
    assert response.json["error"]["message"] == "the access token has the wrong issuer"


def test_scope_as_a_json_array_is_read_too(api):
    response = api.call(keycloak_claims(api, scope=["openid", "svc:profile.private"]))
    assert response.status_code == 200


def test_scope_of_another_type_is_refused(api):
    response = api.call(keycloak_claims(api, scope={"svc:profile.private": True}))
    assert response.status_code == 401
    assert response.json["error"]["message"] == "the access token's scope is malformed"
