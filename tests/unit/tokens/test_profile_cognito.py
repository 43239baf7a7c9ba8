"""The `cognito` profile, with tokens shaped like Amazon Cognito user pools'.

Fixtures follow Amazon Cognito's "Understanding the access token"
(https://docs.aws.amazon.com/cognito/latest/developerguide/amazon-cognito-user-pools-using-the-access-token.html)
and "Understanding the identity (ID) token"
(https://docs.aws.amazon.com/cognito/latest/developerguide/amazon-cognito-user-pools-using-the-id-token.html):
`iss` `https://cognito-idp.<region>.amazonaws.com/<pool id>`, no `aud` in access tokens but
`client_id` and `token_use` `access`, `scope` a string whose custom scopes read
`<resource server>/<name>`, `username`; ID tokens carry `aud`, `token_use` `id` and
`cognito:username`. Client-credentials tokens have `sub` equal to `client_id`.
"""

import time

import pytest

from app.provider import provider_profile
from app.tokens import signed_in_identity

USER = "aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee"
CLIENT = "1example23456789"
PROFILE = "profile-poke/profile.private"
POKE = "profile-poke/interact.poke"


def cognito_claims(api, **overrides) -> dict:
    now = int(time.time())
    claims = {
        "sub": USER,
        "cognito:groups": ["testgroup"],
        "iss": api.stub.issuer,
        "version": 2,
        "client_id": CLIENT,
        "origin_jti": "ffffffff-gggg",
        "event_id": "9999",
        "token_use": "access",
        "scope": f"openid profile {PROFILE} {POKE}",
        "auth_time": now - 10,
        "exp": now + 300,
        "iat": now,
        "jti": "jjjjjjjj-kkkk",
        "username": "alice",
    }
    return {**claims, **overrides}


def client_credentials_claims(api, **overrides) -> dict:
    now = int(time.time())
    claims = {
        "sub": CLIENT,
        "token_use": "access",
        "scope": f"{PROFILE} {POKE}",
        "auth_time": now,
        "iss": api.stub.issuer,
        "exp": now + 300,
        "iat": now,
        "version": 2,
        "jti": "j2",
        "client_id": CLIENT,
    }
    return {**claims, **overrides}


@pytest.fixture
def api(vendor_api):
    api = vendor_api(
        OIDC_PROVIDER_PROFILE="cognito",
        OIDC_CLIENT_ID=CLIENT,
        API_CLIENT_IDS=CLIENT,
        PROFILE_SCOPE=PROFILE,
        POKE_SCOPE=POKE,
    )
    api.add_profile("alice", sub=USER)
    return api


def test_user_token_without_aud_reads_the_own_profile(api):
    response = api.call(cognito_claims(api), header={"typ": None})
    assert response.status_code == 200
    assert response.json["data"]["handle"] == "@alice"


def test_app_token_whose_subject_is_its_client_is_not_a_user(api):
    response = api.call(client_credentials_claims(api))
    assert response.status_code == 403
    assert response.json["error"] == {"code": "forbidden", "message": "a user-delegated token is required"}


def test_missing_scope_is_insufficient_scope_with_the_configured_name(api):
    response = api.call(cognito_claims(api, scope=f"openid {POKE}"))
    assert response.status_code == 403
    assert response.json["error"] == {"code": "insufficient_scope", "message": f"scope {PROFILE} required"}


def test_issuer_of_another_user_pool_is_refused(api):
    response = api.call(cognito_claims(api, iss=api.stub.issuer.replace("stub", "us-east-1_other")))
    assert response.status_code == 401
    assert response.json["error"]["message"] == "the access token has the wrong issuer"


def test_token_of_a_client_not_in_api_client_ids_is_refused(api):
    response = api.call(cognito_claims(api, client_id="someotherclient"))
    assert response.status_code == 401
    assert response.json["error"]["message"] == "the access token is not meant for this API"


def test_id_token_is_refused_by_its_token_use(api):
    response = api.call(cognito_claims(api, token_use="id", aud=CLIENT, client_id=None))
    assert response.status_code == 401
    assert response.json["error"]["message"] == "the token is not an access token (token_use)"


def test_username_claim_creates_the_profile_of_a_new_user(api):
    response = api.call(cognito_claims(api, sub="bbbbbbbb-0000-4000-8000-000000000001", username="Carol"))
    assert response.status_code == 200
    assert api.profile("carol").sub == "bbbbbbbb-0000-4000-8000-000000000001"


def test_the_id_token_names_the_user_in_cognito_username():
    identity = signed_in_identity({"sub": USER, "cognito:username": "alice"}, provider_profile("cognito"))
    assert (identity.subject, identity.username) == (USER, "alice")
