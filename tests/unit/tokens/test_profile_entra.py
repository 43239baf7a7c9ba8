"""The `entra` profile, with v2.0 access tokens shaped like Microsoft Entra ID's.

Fixtures follow Microsoft's "Access token claims reference"
(https://learn.microsoft.com/en-us/entra/identity-platform/access-token-claims-reference) and
"ID token claims reference" (https://learn.microsoft.com/en-us/entra/identity-platform/id-token-claims-reference):
`iss` `https://login.microsoftonline.com/<tenant>/v2.0`, `aud` the API's application id, `azp` the
calling client, `oid` the user's object id (stable across applications) while `sub` is pairwise per
application, `scp` a space-delimited string of delegated scopes, `roles` application permissions,
`idtyp` `app` on app-only tokens (optional claim), `ver` `2.0`.
"""

import time

import pytest

from app.provider import provider_profile
from app.tokens import signed_in_identity
from app.tokens.principal import build_principal

TENANT = "9122040d-6c67-4c5b-b112-36a304b66dad"
API_APP = "6e74172b-be56-4843-9ff4-e66a39bb12e3"
WEB_APP = "1a2b3c4d-0000-4000-8000-00000000000a"
OID = "00000000-0000-0000-66f3-3332eca7ea81"


def entra_claims(api, **overrides) -> dict:
    now = int(time.time())
    claims = {
        "aud": API_APP,
        "iss": api.stub.issuer,
        "iat": now,
        "nbf": now,
        "exp": now + 300,
        "aio": "AXQAi/8TAAAA",
        "azp": WEB_APP,
        "azpacr": "0",
        "name": "Alice Liddell",
        "oid": OID,
        "preferred_username": "alice",
        "rh": "I",
        "scp": "Profile.Read Poke.Send",
        "sub": "AAAAAAAAAAAAAAAAAAAAAIkzqFVrSaSaFHy782bbtaQ",
        "tid": TENANT,
        "uti": "fqiBqXLPj0eQa82S-IYFAA",
        "ver": "2.0",
    }
    return {**claims, **overrides}


def app_only_claims(api, **overrides) -> dict:
    claims = entra_claims(
        api,
        azp="7f0e2c1d-0000-4000-8000-00000000000b",
        oid="5e1f0000-0000-4000-8000-00000000000c",
        sub="5e1f0000-0000-4000-8000-00000000000c",
        roles=["Profile.Read.All"],
        scp=None,
        name=None,
        preferred_username=None,
        idtyp="app",
    )
    return {**claims, **overrides}


@pytest.fixture
def api(vendor_api):
    api = vendor_api(
        OIDC_PROVIDER_PROFILE="entra",
        API_AUDIENCE=API_APP,
        OIDC_CLIENT_ID=WEB_APP,
        PROFILE_SCOPE="Profile.Read",
        POKE_SCOPE="Poke.Send",
        OIDC_SCOPES=f"openid profile api://{API_APP}/Profile.Read api://{API_APP}/Poke.Send",
    )
    api.add_profile("alice", sub=OID)
    return api


def test_user_token_is_the_user_named_by_oid_not_by_the_pairwise_sub(api):
    response = api.call(entra_claims(api))
    assert response.status_code == 200
    assert response.json["data"]["handle"] == "@alice"


def test_app_only_token_has_no_delegated_scope(api):
    response = api.call(app_only_claims(api))
    assert response.status_code == 403
    assert response.json["error"] == {"code": "insufficient_scope", "message": "scope Profile.Read required"}


def test_app_token_marked_idtyp_app_is_forbidden_even_with_the_scope_and_the_login_client(api):
    api.add_profile("daemon", sub="5e1f0000-0000-4000-8000-00000000000c")
    response = api.call(app_only_claims(api, azp=WEB_APP, scp="Profile.Read"))
    assert response.status_code == 403
    assert response.json["error"] == {"code": "forbidden", "message": "a user-delegated token is required"}


def test_roles_without_scp_mark_an_app_token(api):
    profile = provider_profile("entra")
    app_only = build_principal(app_only_claims(api, azp=WEB_APP, idtyp=None), profile, {WEB_APP}, expires_at=0)
    delegated = build_principal(entra_claims(api, roles=["Profile.Read.All"]), profile, {WEB_APP}, expires_at=0)
    assert (app_only.is_user, delegated.is_user) == (False, True)


def test_missing_scope_is_insufficient_scope(api):
    response = api.call(entra_claims(api, scp="Poke.Send"))
    assert response.status_code == 403
    assert response.json["error"] == {"code": "insufficient_scope", "message": "scope Profile.Read required"}
    assert 'scope="Profile.Read"' in response.headers["WWW-Authenticate"]


def test_roles_never_count_as_scopes(api):
    response = api.call(entra_claims(api, scp="Poke.Send", roles=["Profile.Read"]))
    assert response.status_code == 403
    assert response.json["error"]["code"] == "insufficient_scope"


def test_issuer_of_another_tenant_or_the_v1_endpoint_is_refused(api):
    for other in (api.stub.issuer.replace("stub", "other-tenant"), f"https://sts.windows.net/{TENANT}/"):
        response = api.call(entra_claims(api, iss=other))
        assert response.status_code == 401
        assert response.json["error"]["message"] == "the access token has the wrong issuer"


def test_an_email_or_upn_as_username_never_creates_a_profile(api):
    claims = entra_claims(api, oid="11111111-2222-4333-8444-555555555555", preferred_username="bob@contoso.com")
    response = api.call(claims)
    assert response.status_code == 403
    assert response.json["error"]["message"] == (
        "this account's username is not a valid username here; an operator must import its profile "
        "with its subject, or set TOKEN_USERNAME_CLAIM"
    )
    assert api.profile("bob@contoso.com") is None


def test_the_id_token_links_by_oid_as_the_access_token_does():
    id_claims = {"sub": "pairwise-for-the-web-app", "oid": OID, "preferred_username": "alice", "name": "Alice"}
    identity = signed_in_identity(id_claims, provider_profile("entra"))
    assert (identity.subject, identity.username) == (OID, "alice")
