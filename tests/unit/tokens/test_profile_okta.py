"""The `okta` profile, with tokens shaped like Okta's (custom authorization server).

Fixtures follow Okta's access-token claims as its developer documentation lists them ("OpenID
Connect & OAuth 2.0 API", access token and ID token claims,
https://developer.okta.com/docs/reference/api/oidc/) and as a published Okta token shows them
(https://groups.google.com/g/rabbitmq-users/c/O3GdCKf8soM): `ver`, `jti` `AT.…`, `iss`
`https://<domain>/oauth2/default`, `aud` `api://default`, `sub` the user's *login* (an email),
`cid` the client, `uid` the user id, `scp` a JSON array; the ID token's `sub` is the user id.
Client-credentials tokens have `sub` equal to `cid` and no `uid`.
"""

import time

import pytest

from app.provider import provider_profile
from app.tokens import signed_in_identity

USER_ID = "00uid4BxXw6I6TV4m0g3"
CLIENT = "0oa1exampleclient"


def okta_claims(api, **overrides) -> dict:
    now = int(time.time())
    claims = {
        "ver": 1,
        "jti": "AT.MNAoEQ_jbKqoinrQo1D0XKjMX28U5d7ZszBceot7-Ts",
        "iss": api.stub.issuer,
        "aud": "api://default",
        "sub": "alice@example.com",
        "iat": now,
        "exp": now + 300,
        "cid": CLIENT,
        "uid": USER_ID,
        "scp": ["openid", "profile", "svc:profile.private", "svc:interact.poke"],
        "auth_time": now - 10,
    }
    return {**claims, **overrides}


def client_credentials_claims(api, **overrides) -> dict:
    return okta_claims(api, sub=CLIENT, uid=None, scp=["svc:profile.private", "svc:interact.poke"], **overrides)


@pytest.fixture
def api(vendor_api):
    api = vendor_api(OIDC_PROVIDER_PROFILE="okta", API_AUDIENCE="api://default", OIDC_CLIENT_ID=CLIENT)
    api.add_profile("alice", sub=USER_ID)
    return api


def test_user_token_is_the_user_named_by_uid_not_by_the_login_in_sub(api):
    response = api.call(okta_claims(api))
    assert response.status_code == 200
    assert response.json["data"]["handle"] == "@alice"


def test_app_token_whose_subject_is_its_client_is_not_a_user(api):
    response = api.call(client_credentials_claims(api))
    assert response.status_code == 403
    assert response.json["error"] == {"code": "forbidden", "message": "a user-delegated token is required"}


def test_app_token_without_uid_is_not_a_user(api):
    response = api.call(okta_claims(api, uid=None))
    assert response.status_code == 403
    assert response.json["error"]["message"] == "a user-delegated token is required"


def test_missing_scope_is_insufficient_scope(api):
    response = api.call(okta_claims(api, scp=["openid", "svc:interact.poke"]))
    assert response.status_code == 403
    assert response.json["error"] == {"code": "insufficient_scope", "message": "scope svc:profile.private required"}


def test_issuer_of_another_authorization_server_is_refused(api):
    response = api.call(okta_claims(api, iss=api.stub.issuer.replace("/realms/stub", "/oauth2/other")))
    assert response.status_code == 401
    assert response.json["error"]["message"] == "the access token has the wrong issuer"


def test_scope_in_a_scope_claim_does_not_count(api):
    response = api.call(okta_claims(api, scp=["openid"], scope="svc:profile.private"))
    assert response.status_code == 403
    assert response.json["error"]["code"] == "insufficient_scope"


def test_a_changed_login_in_sub_is_still_the_same_user(api):
    assert api.call(okta_claims(api, sub="alice.renamed@example.com")).status_code == 200


def test_unlinked_user_gets_no_profile_from_the_login(api):
    response = api.call(okta_claims(api, uid="00unew", sub="newbie@example.com"))
    assert response.status_code == 403
    assert response.json["error"]["message"] == "this account has no profile"
    assert api.profile("newbie") is None


def test_the_id_token_links_by_its_sub_which_is_the_access_tokens_uid():
    id_claims = {"sub": USER_ID, "preferred_username": "alice@example.com", "name": "Alice"}
    identity = signed_in_identity(id_claims, provider_profile("okta"))
    assert (identity.subject, identity.username) == (USER_ID, None)
