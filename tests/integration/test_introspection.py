"""ACCESS_TOKEN_VALIDATION=introspection against the dev provider's real RFC 7662 endpoint, with the
opaque access tokens of its `profile-poke-web-opaque` client, over the real Redis."""

import time

import pytest
import requests

from app.tokens.introspection import REFUSED
from dev import oidc_driver
from tests.helpers.real_services import OPAQUE_CLIENT, introspection_settings
from tests.helpers.refusals import refusal_reasons

pytestmark = pytest.mark.integration


def bearer(token: str) -> dict:
    return {"Authorization": f"Bearer {token}"}


@pytest.fixture
def introspecting_app(make_app, idp):
    def build(**overrides):
        settings = introspection_settings(idp)
        return make_app(**{**settings, **overrides})

    return build


def opaque_token(idp, username="alice") -> str:
    token = idp.user_tokens(username, client_id=OPAQUE_CLIENT)["access_token"]
    assert token.count(".") == 0  # opaque: nothing to read locally
    return token


def test_an_opaque_user_token_reads_the_own_profile(introspecting_app, idp):
    response = introspecting_app().test_client().get("/api/v1/me/profile", headers=bearer(opaque_token(idp)))
    assert response.status_code == 200
    assert response.json["data"]["handle"] == "@alice"


def test_a_revoked_token_stops_working_within_the_cache_ttl(introspecting_app, idp):
    client = introspecting_app(INTROSPECTION_CACHE_TTL="1").test_client()
    token = opaque_token(idp)
    assert client.get("/api/v1/me/profile", headers=bearer(token)).status_code == 200
    revocation = oidc_driver.discover(idp.issuer)["revocation_endpoint"]
    revoked = requests.post(revocation, data={"token": token, "client_id": OPAQUE_CLIENT}, timeout=5)
    assert revoked.status_code == 200
    time.sleep(1.1)
    with refusal_reasons() as reasons:
        response = client.get("/api/v1/me/profile", headers=bearer(token))
    assert response.status_code == 401
    assert response.json["error"] == {"code": "invalid_token", "message": REFUSED}
    assert reasons == ["the access token is not active"]


def test_an_unknown_token_is_inactive(introspecting_app):
    with refusal_reasons() as reasons:
        response = introspecting_app().test_client().get("/api/v1/me/profile", headers=bearer("no-such-token"))
    assert response.status_code == 401
    assert response.json["error"]["message"] == REFUSED
    assert reasons == ["the access token is not active"]


def test_a_jwt_the_provider_does_not_introspect_is_never_accepted(introspecting_app, idp):
    with refusal_reasons() as reasons:
        response = introspecting_app().test_client().get("/api/v1/me/profile", headers=bearer(idp.app_token()))
    assert response.status_code == 401
    assert response.json["error"]["message"] == REFUSED
    assert reasons == ["the access token is not one the provider can introspect"]


def test_a_failing_introspection_endpoint_is_503(introspecting_app, idp):
    app = introspecting_app(INTROSPECTION_CLIENT_SECRET="wrong-secret-wrong-secret")
    response = app.test_client().get("/api/v1/me/profile", headers=bearer(opaque_token(idp)))
    assert response.status_code == 503
    assert response.json["error"]["code"] == "unavailable"
