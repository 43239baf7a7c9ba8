"""A key rotated under the same `kid` on the real dev provider (`POST /__dev/rotate-keys?same_kid=1`,
issue 19 point 9): a token signed with the new key is accepted at once, and forged signatures on the
known kid cost at most one JWKS fetch per JWKS_REFETCH_INTERVAL (counted by the provider's
/__dev/stats). Before: every new token was refused until JWKS_MAX_AGE passed. The provider is this
module's own, so rotating its keys disturbs no other test."""

import base64
import json
import time

import pytest

from dev import oidc_driver

pytestmark = pytest.mark.integration
INTERVAL = 2


def read_profile(client, token):
    return client.get("/api/v1/me/profile", headers={"Authorization": f"Bearer {token}"})


def header_of(token: str) -> dict:
    encoded = token.split(".")[0]
    return json.loads(base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4)))


def forged(token: str) -> str:
    """`token` with its claims rewritten (another subject) under the original signature and kid."""
    head, payload, signature = token.split(".")
    claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    claims["sub"] = "someone-else"
    rewritten = base64.urlsafe_b64encode(json.dumps(claims).encode()).rstrip(b"=").decode()
    return f"{head}.{rewritten}.{signature}"


def test_a_token_signed_with_a_key_rotated_under_the_same_kid_is_accepted_at_once(rotating_idp, make_app):
    # A max age far beyond the test: before, the new key was trusted only once this had passed.
    client = make_app(rotating_idp, JWKS_MAX_AGE="3600", JWKS_REFETCH_INTERVAL="30").test_client()
    first = rotating_idp.user_tokens("alice")["access_token"]
    assert read_profile(client, first).status_code == 200

    kid = oidc_driver.rotate_keys(rotating_idp.base, keep_old=False, same_kid=True)
    rotating_idp.reset_stats()
    second = rotating_idp.user_tokens("alice")["access_token"]
    assert header_of(first)["kid"] == header_of(second)["kid"] == kid
    assert read_profile(client, second).status_code == 200
    assert rotating_idp.stats()["jwks"] == 1  # one re-read for the failed signature
    assert read_profile(client, second).status_code == 200
    assert rotating_idp.stats()["jwks"] == 1


def test_forged_signatures_on_a_known_kid_cost_at_most_one_jwks_fetch_per_interval(rotating_idp, make_app):
    client = make_app(rotating_idp, JWKS_REFETCH_INTERVAL=str(INTERVAL)).test_client()
    genuine = rotating_idp.user_tokens("alice")["access_token"]
    assert read_profile(client, genuine).status_code == 200
    rotating_idp.reset_stats()
    junk = forged(genuine)
    started = time.monotonic()
    for _ in range(30):
        response = read_profile(client, junk)
        assert (response.status_code, response.json["error"]["message"]) == (
            401,
            "the access token's signature is invalid",
        )
    intervals = int((time.monotonic() - started) // INTERVAL)  # 0 unless the machine is very slow
    assert 0 < rotating_idp.stats()["jwks"] <= 1 + intervals
    fetched = rotating_idp.stats()["jwks"]
    time.sleep(INTERVAL + 0.1)
    assert read_profile(client, junk).status_code == 401
    assert rotating_idp.stats()["jwks"] == fetched + 1  # the next interval's one fetch
