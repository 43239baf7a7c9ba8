"""Signing-key rotation on the real dev provider (`POST /__dev/rotate-keys`): a new key is picked up
at once, and a removed key is refused within JWKS_MAX_AGE. The provider is this module's own, so
rotating its keys disturbs no other test."""

import time

import pytest

from dev import oidc_driver

pytestmark = pytest.mark.integration
MAX_AGE = 2


def read_profile(client, token):
    return client.get("/api/v1/me/profile", headers={"Authorization": f"Bearer {token}"})


def test_a_new_key_is_picked_up_and_a_removed_one_refused_within_the_max_age(rotating_idp, make_app):
    client = make_app(rotating_idp, JWKS_MAX_AGE=str(MAX_AGE), JWKS_REFETCH_INTERVAL="30").test_client()
    first = rotating_idp.user_tokens("alice")["access_token"]
    assert read_profile(client, first).status_code == 200

    oidc_driver.rotate_keys(rotating_idp.base, keep_old=True)
    second = rotating_idp.user_tokens("alice")["access_token"]
    assert read_profile(client, second).status_code == 200  # unknown kid: fetched at once

    oidc_driver.rotate_keys(rotating_idp.base, keep_old=False)  # both earlier keys are gone now
    removed_at = time.monotonic()
    third = rotating_idp.user_tokens("alice")["access_token"]
    time.sleep(MAX_AGE + 0.2)
    for token in (first, second):
        response = read_profile(client, token)
        assert response.status_code == 401
        assert response.json["error"]["message"] == "the access token was not signed by a known key"
    assert time.monotonic() - removed_at < MAX_AGE + 5
    assert read_profile(client, third).status_code == 200
