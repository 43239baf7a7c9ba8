"""The `auth0` profile, with tokens shaped like Auth0's.

Fixtures follow Auth0's "Access Token Profiles" (https://auth0.com/docs/secure/tokens/access-tokens/access-token-profiles):
issuer `https://<tenant>.auth0.com/` with its trailing slash, `sub` like `auth0|123456`, `aud` a
list of the API identifier and the userinfo URL, `azp` (Auth0 profile) or `client_id` (RFC 9068
profile), `scope` a string; and "Call Your API Using the Client Credentials Flow"
(https://auth0.com/docs/get-started/authentication-and-authorization-flow/client-credentials-flow/call-your-api-using-the-client-credentials-flow):
machine-to-machine tokens have `sub` `<client id>@clients` and `gty` `client-credentials`.
Auth0 access tokens carry no user name unless an Action adds a namespaced claim.
"""

import time

import pytest

USER = "auth0|123456"
CLIENT = "my_client_id"
API = "https://example.com/profile-poke-api"
USERNAME_CLAIM = "https://example.com/username"


def auth0_claims(api, **overrides) -> dict:
    now = int(time.time())
    claims = {
        "iss": api.stub.issuer,
        "sub": USER,
        "aud": [API, f"{api.stub.issuer}userinfo"],
        "azp": CLIENT,
        "exp": now + 300,
        "iat": now,
        "scope": "openid profile svc:profile.private svc:interact.poke",
    }
    return {**claims, **overrides}


def m2m_claims(api, **overrides) -> dict:
    now = int(time.time())
    claims = {
        "iss": api.stub.issuer,
        "sub": f"{CLIENT}@clients",
        "aud": API,
        "azp": CLIENT,
        "gty": "client-credentials",
        "exp": now + 300,
        "iat": now,
        "scope": "svc:profile.private svc:interact.poke",
    }
    return {**claims, **overrides}


@pytest.fixture
def api(vendor_api):
    api = vendor_api(
        trailing_slash=True,
        OIDC_PROVIDER_PROFILE="auth0",
        API_AUDIENCE=API,
        OIDC_CLIENT_ID=CLIENT,
        OIDC_AUTH_PARAMS=f"audience={API}",
    )
    api.add_profile("alice", sub=USER)
    return api


def test_user_token_reads_the_own_profile(api):
    assert api.stub.issuer.endswith("/")
    response = api.call(auth0_claims(api))
    assert response.status_code == 200
    assert response.json["data"]["handle"] == "@alice"


def test_user_token_in_the_rfc9068_profile_reads_the_own_profile(api):
    claims = auth0_claims(api, azp=None, client_id=CLIENT, jti="73WakrfVbNJBaAmhQtEeDv")
    response = api.call(claims, header={"typ": "at+jwt"})
    assert response.status_code == 200


def test_app_token_with_gty_client_credentials_is_not_a_user(api):
    response = api.call(m2m_claims(api))
    assert response.status_code == 403
    assert response.json["error"] == {"code": "forbidden", "message": "a user-delegated token is required"}


def test_app_token_with_an_at_clients_subject_but_no_gty_is_not_a_user(api):
    response = api.call(m2m_claims(api, gty=None))
    assert response.status_code == 403
    assert response.json["error"]["message"] == "a user-delegated token is required"


def test_missing_scope_is_insufficient_scope(api):
    response = api.call(auth0_claims(api, scope="openid profile svc:interact.poke"))
    assert response.status_code == 403
    assert response.json["error"] == {"code": "insufficient_scope", "message": "scope svc:profile.private required"}


def test_issuer_without_its_trailing_slash_is_refused(api):
    response = api.call(auth0_claims(api, iss=api.stub.issuer.rstrip("/")))
    assert response.status_code == 401
    assert response.json["error"]["message"] == "the access token has the wrong issuer"


def test_audience_list_without_the_api_is_refused(api):
    response = api.call(auth0_claims(api, aud=[f"{api.stub.issuer}userinfo"]))
    assert response.status_code == 401
    assert response.json["error"]["message"] == "the access token is not meant for this API"


def test_unlinked_user_without_a_username_claim_has_no_profile(api):
    response = api.call(auth0_claims(api, sub="auth0|999"))
    assert response.status_code == 403
    assert response.json["error"] == {"code": "forbidden", "message": "this account has no profile"}


def test_a_namespaced_username_claim_creates_the_profile(vendor_api):
    api = vendor_api(
        trailing_slash=True,
        OIDC_PROVIDER_PROFILE="auth0",
        API_AUDIENCE=API,
        OIDC_CLIENT_ID=CLIENT,
        TOKEN_USERNAME_CLAIM=USERNAME_CLAIM,
    )
    response = api.call(auth0_claims(api, sub="auth0|777", **{USERNAME_CLAIM: "Zoe"}))
    assert response.status_code == 200
    assert api.profile("zoe").sub == "auth0|777"
