"""DPoP details of issue 28 (point 3) with tokens bound by the real dev provider, over the real Redis:
proof ids kept per key for the acceptance window only, at most RATE_LIMIT_DPOP_PROOFS per key (429
beyond, nothing stored), one key's predictable `jti` never blocking another's, and proof members that
are not ASCII refused as malformed instead of a 500."""

import base64
import hashlib
import json
import secrets
import time

import pytest
from joserfc import jws

from dev.dpop import DpopKey

pytestmark = pytest.mark.integration

PROFILE = "/api/v1/me/profile"
URL = "http://localhost" + PROFILE  # the test client's; the apps below name it their public origin


@pytest.fixture(scope="module")
def holders(idp):
    """Two users, each with a key of their own and an access token the provider bound to it."""
    keys = {name: DpopKey.generate("ES256") for name in ("alice", "bob")}
    return {name: (key, idp.user_tokens(name, dpop_key=key)["access_token"]) for name, key in keys.items()}


def signed(key: DpopKey, token: str, **changes) -> str:
    """A proof for GET URL as a client would sign it, with `changes` to its claims."""
    claims = {"jti": secrets.token_urlsafe(16), "htm": "GET", "htu": URL, "iat": int(time.time())}
    digest = hashlib.sha256(token.encode()).digest()  # computed here, not by the code under test
    claims["ath"] = base64.urlsafe_b64encode(digest).rstrip(b"=").decode()
    header = {"typ": "dpop+jwt", "alg": "ES256", "jwk": key.key.as_dict(private=False)}
    return jws.serialize_compact(header, json.dumps({**claims, **changes}), key.key)


def call(client, token: str, proof: str):
    return client.get(PROFILE, headers={"Authorization": f"DPoP {token}", "DPoP": proof})


def proof_ids_of(app, key: DpopKey) -> str:
    return f"{app.config['REDIS_KEY_PREFIX']}dpop-jti:{{{key.thumbprint()}}}"


def test_a_keys_proofs_beyond_its_bound_get_429_and_nothing_is_stored(make_app, holders, redis):
    app = make_app(PUBLIC_ORIGINS="http://localhost", RATE_LIMIT_DPOP_PROOFS="5 per minute")
    client = app.test_client()
    key, token = holders["alice"]
    assert [call(client, token, signed(key, token)).status_code for _ in range(5)] == [200] * 5
    refused = call(client, token, signed(key, token))
    assert (refused.status_code, refused.json["error"]["message"]) == (
        429,
        "too many DPoP proofs signed with this key; try again later",
    )
    assert 0 < int(refused.headers["Retry-After"]) <= 60
    kept = proof_ids_of(app, key)
    assert redis.zcard(kept) == 5
    assert 0 < redis.ttl(kept) <= 65  # the iat window and 5 s of clock skew; before: each id 180 s
    other_key, other_token = holders["bob"]
    assert call(client, other_token, signed(other_key, other_token)).status_code == 200


def test_one_users_predictable_jti_never_blocks_another_users_proof(make_app, holders):
    client = make_app(PUBLIC_ORIGINS="http://localhost").test_client()
    (alice_key, alice_token), (bob_key, bob_token) = holders["alice"], holders["bob"]
    assert call(client, bob_token, signed(bob_key, bob_token, jti="0001")).status_code == 200
    assert call(client, alice_token, signed(alice_key, alice_token, jti="0001")).status_code == 200
    replayed = call(client, alice_token, signed(alice_key, alice_token, jti="0001"))
    assert (replayed.status_code, replayed.json["error"]["message"]) == (401, "this DPoP proof was already used (jti)")


@pytest.mark.parametrize("member", ["ath", "nonce", "jti"])
def test_a_proof_member_that_is_not_ascii_is_refused_as_malformed(make_app, holders, member):
    client = make_app(PUBLIC_ORIGINS="http://localhost", DPOP_NONCE="on").test_client()
    key, token = holders["alice"]
    response = call(client, token, signed(key, token, **{member: "ünicode"}))
    assert (response.status_code, response.json["error"]) == (
        401,
        {"code": "invalid_dpop_proof", "message": f"the DPoP proof's {member} is not ASCII"},
    )
