"""DPoP (RFC 9449) at the real dev provider, and dev/dpop.py's proofs: a token request with a proof gets a
token bound to the proof key (`token_type` DPoP, `cnf.jkt` its RFC 7638 thumbprint), one without gets
a plain Bearer token, and the bound refresh token is redeemed only with a proof by the same key."""

import base64
import hashlib
import json
import os
import time

import pytest
import requests
from joserfc import jws
from joserfc.jwk import import_key

from dev import oidc_driver
from dev.dpop import ALGORITHMS, DpopKey

pytestmark = pytest.mark.integration
CLIENT = "profile-poke-web"
PRIVATE_MEMBERS = {"d", "p", "q", "dp", "dq", "qi", "oth"}


def claims_of(jwt: str, part: int = 1) -> dict:
    """A JWT's payload (or with part=0 its header), not verified."""
    segment = jwt.split(".")[part]
    return json.loads(base64.urlsafe_b64decode(segment + "=" * (-len(segment) % 4)))


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def rfc7638(jwk: dict) -> str:
    """The thumbprint computed by hand: the required members only, sorted, no whitespace, SHA-256."""
    required = {"EC": ("crv", "kty", "x", "y"), "RSA": ("e", "kty", "n")}[jwk["kty"]]
    canonical = json.dumps({name: jwk[name] for name in required}, separators=(",", ":"), sort_keys=True)
    return b64url(hashlib.sha256(canonical.encode()).digest())


@pytest.fixture(scope="module", params=ALGORITHMS)
def key(request):
    return DpopKey.generate(request.param)


def test_the_provider_accepts_proofs_signed_with_es256_ps256_and_rs256(idp):
    supported = oidc_driver.discover(idp.issuer)["dpop_signing_alg_values_supported"]
    assert set(ALGORITHMS) <= set(supported)


def test_a_token_obtained_with_a_key_is_bound_to_its_thumbprint(idp, key):
    tokens = idp.user_tokens("alice", dpop_key=key)
    assert tokens["token_type"] == "DPoP"
    assert key.thumbprint() == rfc7638(key.key.as_dict(private=False))
    claims = claims_of(tokens["access_token"])
    assert claims["cnf"] == {"jkt": key.thumbprint()}
    assert claims["aud"] == "profile-poke-api"
    assert claims["sub"] == claims_of(tokens["id_token"])["sub"]


def test_a_token_obtained_without_a_key_is_a_plain_bearer_token(idp):
    tokens = idp.user_tokens("alice")
    assert tokens["token_type"] == "Bearer"
    assert "cnf" not in claims_of(tokens["access_token"])


def test_the_refresh_token_is_bound_too_and_a_refresh_with_the_same_key_keeps_the_binding(idp, key):
    tokens = idp.user_tokens("bob", dpop_key=key)
    without_proof = oidc_driver.refresh(idp.issuer, CLIENT, tokens["refresh_token"])
    other_key = oidc_driver.refresh(idp.issuer, CLIENT, tokens["refresh_token"], DpopKey.generate(key.alg))
    assert (without_proof.status_code, without_proof.json()["error"]) == (400, "invalid_grant")
    assert (other_key.status_code, other_key.json()["error"]) == (400, "invalid_grant")
    for _ in range(2):  # the rotated refresh token is bound to the same key
        response = oidc_driver.refresh(idp.issuer, CLIENT, tokens["refresh_token"], key)
        assert response.status_code == 200, response.text
        assert "DPoP-Nonce" not in response.headers  # the provider asks for no server nonce
        tokens = response.json()
        assert tokens["token_type"] == "DPoP"
        assert claims_of(tokens["access_token"])["cnf"] == {"jkt": key.thumbprint()}


def test_a_used_proof_is_refused(idp, key):
    tokens = idp.user_tokens("carol", dpop_key=key)
    url = oidc_driver.discover(idp.issuer)["token_endpoint"]
    proof = key.proof("POST", url)
    answers = []
    for _ in range(2):
        data = {"grant_type": "refresh_token", "client_id": CLIENT, "refresh_token": tokens["refresh_token"]}
        response = requests.post(url, data=data, headers={"DPoP": proof}, timeout=10)
        answers.append(response.status_code)
        tokens = response.json() if response.status_code == 200 else tokens
    assert answers == [200, 400]


@pytest.mark.parametrize("shape", ["okta", "auth0"])
def test_the_vendor_shapes_keep_the_binding(shaped_idp, shape):
    key = DpopKey.generate("ES256")
    tokens = shaped_idp(shape).user_tokens("alice", dpop_key=key)
    assert tokens["token_type"] == "DPoP"
    assert claims_of(tokens["access_token"])["cnf"] == {"jkt": key.thumbprint()}


def test_the_proof_carries_exactly_the_rfc_9449_claims(key):
    url = "https://api.example.test/api/v1/me/profile?fields=handle#top"
    proof = key.proof("GET", url, access_token="the.access.token", nonce="server-nonce")
    header = claims_of(proof, part=0)
    assert header == {"typ": "dpop+jwt", "alg": key.alg, "jwk": key.key.as_dict(private=False)}
    assert not PRIVATE_MEMBERS & set(header["jwk"])
    # Signed by the key its header names. An RSA 2048 key makes a header of about 550 bytes (base64url),
    # over joserfc's default limit of 512.
    registry = jws.JWSRegistry(algorithms=[key.alg])
    registry.max_header_length = 2048
    jws.deserialize_compact(proof, import_key(header["jwk"]), registry=registry)
    claims = claims_of(proof)
    assert set(claims) == {"jti", "htm", "htu", "iat", "ath", "nonce"}
    assert claims["htm"] == "GET"
    assert claims["htu"] == "https://api.example.test/api/v1/me/profile"
    assert claims["ath"] == b64url(hashlib.sha256(b"the.access.token").digest())
    assert claims["nonce"] == "server-nonce"
    assert isinstance(claims["iat"], int) and abs(claims["iat"] - time.time()) < 5
    plain = claims_of(key.proof("POST", "http://127.0.0.1:9000/token"))
    assert set(plain) == {"jti", "htm", "htu", "iat"}
    assert plain["jti"] != claims["jti"]


def test_a_saved_key_is_private_to_its_owner_and_binds_the_same_tokens(idp, key, tmp_path):
    path = tmp_path / f"dpop-{key.alg}.json"
    key.to_file(path)
    assert os.stat(path).st_mode & 0o777 == 0o600
    loaded = DpopKey.from_file(path)
    assert (loaded.alg, loaded.thumbprint()) == (key.alg, key.thumbprint())
    tokens = idp.user_tokens("alice", dpop_key=loaded)
    assert claims_of(tokens["access_token"])["cnf"] == {"jkt": key.thumbprint()}


def test_the_driver_retries_once_with_the_server_nonce(idp, monkeypatch):
    """This provider asks for no nonce; a stand-in answers `use_dpop_nonce` first, as one that does would."""
    key, sent = DpopKey.generate("ES256"), []

    def answer(status: int, body: dict, headers: dict) -> requests.Response:
        response = requests.Response()
        response.status_code, response._content = status, json.dumps(body).encode()
        response.headers.update({"Content-Type": "application/json", **headers})
        return response

    def post(url, *, data, headers, timeout):
        sent.append(claims_of(headers["DPoP"]))
        if len(sent) == 1:
            return answer(400, {"error": "use_dpop_nonce"}, {"DPoP-Nonce": "nonce-1"})
        return answer(200, {"token_type": "DPoP"}, {})

    monkeypatch.setattr(oidc_driver.requests, "post", post)
    assert oidc_driver.refresh(idp.issuer, CLIENT, "a-refresh-token", key).json() == {"token_type": "DPoP"}
    assert ["nonce" in claims for claims in sent] == [False, True]
    assert sent[1]["nonce"] == "nonce-1"
    assert sent[0]["jti"] != sent[1]["jti"]
