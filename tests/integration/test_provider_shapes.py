"""Provider profiles against the real dev provider issuing Okta-shaped tokens (`scp` array, `cid`,
`uid`, the login in `sub`) and Auth0-shaped ones (issuer ending in `/`, `aud` list, `gty` and
`<client>@clients` on machine-to-machine tokens), over the real Redis."""

import base64
import json

import pytest

from tests.helpers.settings import CSRF
from tests.helpers.signin import signed_in_client

pytestmark = pytest.mark.integration


def bearer(token: str) -> dict:
    return {"Authorization": f"Bearer {token}"}


@pytest.fixture(params=["okta", "auth0"])
def shape(request, shaped_idp):
    return request.param, shaped_idp(request.param)


@pytest.fixture
def shaped_app(shape, make_app):
    name, provider = shape
    return make_app(provider, OIDC_PROVIDER_PROFILE=name)


def test_user_token_reads_the_own_profile(shaped_app, shape):
    _, provider = shape
    response = shaped_app.test_client().get("/api/v1/me/profile", headers=bearer(provider.user_token("alice")))
    assert response.status_code == 200
    assert response.json["data"]["handle"] == "@alice"


def test_app_token_is_not_a_user(shaped_app, shape):
    _, provider = shape
    response = shaped_app.test_client().get("/api/v1/me/profile", headers=bearer(provider.app_token()))
    assert response.status_code == 403
    assert response.json["error"] == {"code": "forbidden", "message": "a user-delegated token is required"}


def test_missing_scope_is_insufficient_scope(shaped_app, shape):
    _, provider = shape
    token = provider.user_tokens("alice", client_id="profile-poke-web-limited", scope="openid")["access_token"]
    response = shaped_app.test_client().post("/api/v1/pokes", json={"username": "bob"}, headers=bearer(token))
    assert response.status_code == 403
    assert response.json["error"] == {"code": "insufficient_scope", "message": "scope svc:interact.poke required"}


def test_issuer_differing_only_by_its_trailing_slash_is_another_issuer(make_app, shape):
    name, provider = shape
    token = provider.user_token("alice")
    other = provider.issuer[:-1] if provider.issuer.endswith("/") else provider.issuer + "/"
    app = make_app(provider, OIDC_PROVIDER_PROFILE=name, OIDC_ISSUER_URL=other)
    response = app.test_client().get("/api/v1/me/profile", headers=bearer(token))
    assert response.status_code == 503  # discovery names the exact issuer, and it is not this one
    assert response.json["error"]["code"] == "unavailable"


def test_browser_sign_in_and_the_api_find_the_same_profile(shaped_app):
    client = signed_in_client(shaped_app, "carol")
    assert client.get("/auth/session").json["user"] == "carol"
    response = client.get("/api/v1/me/profile", headers=CSRF)
    assert response.status_code == 200
    assert response.json["data"]["handle"] == "@carol"


def test_okta_access_tokens_put_the_login_in_sub_and_the_user_id_in_uid(shaped_idp):
    payload = shaped_idp("okta").user_tokens("alice")["access_token"].split(".")[1]
    decoded = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    assert decoded["sub"] == "alice@example.test"
    assert decoded["uid"] == "e3b3e97f-427a-427a-b5e4-c3f4200b05c5"
    assert isinstance(decoded["scp"], list) and "scope" not in decoded and decoded["cid"] == "profile-poke-web"
