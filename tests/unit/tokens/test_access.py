"""Bearer-token validation against a stub issuer and fakeredis: hostile tokens get the contract's answers."""

import secrets
import time

import pytest

from app import create_app
from app.extensions import services
from app.store.profiles import Profile
from config import Config
from tests.helpers.settings import app_env

PROFILE = "/api/v1/me/profile"


@pytest.fixture
def alice(unit_app):
    with unit_app.app_context():
        services().store.profiles.put(Profile("alice", "@alice", "Alice Liddell", sub="user-sub-1"))


def call(client, token, path=PROFILE):
    return client.get(path, headers={"Authorization": f"Bearer {token}"})


def test_a_valid_user_token_reads_the_own_profile(unit_client, stub_issuer, alice):
    response = call(unit_client, stub_issuer.sign(stub_issuer.access_claims()))
    assert response.status_code == 200
    assert response.json["data"]["handle"] == "@alice"
    assert response.headers["Cache-Control"] == "no-store"


def _attacker(stub, claims, header: str, kid: str = "attacker-key") -> str:
    """Signed by a key of the attacker's, which the header offers in the way `header` allows."""
    attacker = stub.new_key(kid)
    offered = {
        "jku": f"{stub.issuer}/attacker-jwks",
        "x5u": f"{stub.issuer}/attacker-cert",
        "jwk": attacker.as_dict(private=False),
    }[header]
    return stub.sign(claims(), key=attacker, header={header: offered})


def _id_token(stub, claims):
    id_claims = claims(aud=["profile-poke-web", "profile-poke-api"], nonce="n", azp="profile-poke-web")
    return stub.sign(id_claims, header={"typ": "JWT"})


HOSTILE = {
    "alg none": lambda stub, claims: stub.unsigned(claims(), {"alg": "none", "typ": "at+jwt", "kid": stub.key.kid}),
    "HS256 with the RSA public key": lambda stub, claims: stub.unsigned(
        claims(), {"alg": "HS256", "typ": "at+jwt", "kid": stub.key.kid}
    ),
    "kid naming no key": lambda stub, claims: stub.sign(claims(), header={"kid": "no-such-key"}),
    "forged signature (same kid, other key)": lambda stub, claims: stub.sign(claims(), key=stub.new_key(stub.key.kid)),
    "wrong iss": lambda stub, claims: stub.sign(claims(iss="https://evil.example/realms/dev")),
    "wrong aud": lambda stub, claims: stub.sign(claims(aud="another-api")),
    "missing aud": lambda stub, claims: stub.sign(claims(aud=None)),
    "expired": lambda stub, claims: stub.sign(claims(exp=int(time.time()) - 120, iat=int(time.time()) - 420)),
    "nbf in the future": lambda stub, claims: stub.sign(claims(nbf=int(time.time()) + 120)),
    "iat in the future": lambda stub, claims: stub.sign(claims(iat=int(time.time()) + 120)),
    "ID token as access token": _id_token,
    "typ of another kind": lambda stub, claims: stub.sign(claims(), header={"typ": "dpop+jwt"}),
    "missing sub": lambda stub, claims: stub.sign(claims(sub=None)),
    "non-string scope": lambda stub, claims: stub.sign(claims(scope=["svc:profile.private"])),
    "over 8 KB": lambda stub, claims: stub.sign(claims(padding="x" * 9000)),
    "non-ASCII garbage": lambda stub, claims: "äöü.\u2603.\U0001f4a9",
    "not a JWT": lambda stub, claims: "just-some-opaque-value",
    "jku header pointing at the attacker's keys": lambda stub, claims: _attacker(stub, claims, "jku"),
    "x5u header pointing at the attacker's keys": lambda stub, claims: _attacker(stub, claims, "x5u"),
    "embedded jwk of the attacker's key": lambda stub, claims: _attacker(stub, claims, "jwk"),
    "embedded jwk under the real kid": lambda stub, claims: _attacker(stub, claims, "jwk", kid=stub.key.kid),
    "right keys, another issuer": lambda stub, claims: stub.sign(claims(iss=stub.issuer.replace("stub", "other"))),
    "exp as a string": lambda stub, claims: stub.sign(claims(exp=str(int(time.time()) + 300))),
    "aud as a number": lambda stub, claims: stub.sign(claims(aud=42)),
    "unknown crit header": lambda stub, claims: stub.sign_raw(
        claims(), {"alg": "RS256", "typ": "at+jwt", "kid": stub.key.kid, "crit": ["x-unknown"], "x-unknown": 1}
    ),
}


@pytest.mark.parametrize("case", list(HOSTILE))
def test_hostile_token_is_refused_as_invalid_token(unit_client, stub_issuer, alice, case):
    token = HOSTILE[case](stub_issuer, stub_issuer.access_claims)
    response = unit_client.get(PROFILE, headers={"Authorization": f"Bearer {token}".encode()})
    assert response.status_code == 401
    assert response.json["error"]["code"] == "invalid_token"
    assert response.headers["WWW-Authenticate"].startswith('Bearer realm="profile-poke", error="invalid_token"')


def test_offered_key_locations_are_never_fetched(unit_client, stub_issuer, alice):
    for case in ("jku header pointing at the attacker's keys", "x5u header pointing at the attacker's keys"):
        assert call(unit_client, HOSTILE[case](stub_issuer, stub_issuer.access_claims)).status_code == 401
    assert stub_issuer.fetches["other"] == 0


def test_a_token_expiring_this_second_is_refused_without_leeway(stub_issuer, fake_redis):
    app = create_app(Config(app_env(stub_issuer.issuer, TOKEN_LEEWAY="0")), redis=fake_redis)
    with app.app_context():
        services().store.profiles.put(Profile("alice", "@alice", "Alice", sub="user-sub-1"))
    now = int(time.time())
    expiring = stub_issuer.sign(stub_issuer.access_claims(exp=now, iat=now - 60))
    assert call(app.test_client(), expiring).json["error"]["code"] == "invalid_token"


def test_the_leeway_accepts_a_token_that_expired_seconds_ago(unit_client, stub_issuer, alice):
    just_expired = stub_issuer.sign(stub_issuer.access_claims(exp=int(time.time()) - 5))
    assert call(unit_client, just_expired).status_code == 200


def test_a_bad_token_on_the_public_profile_is_refused(unit_client, stub_issuer, alice):
    expired = stub_issuer.sign(stub_issuer.access_claims(exp=int(time.time()) - 120))
    assert call(unit_client, expired, "/api/v1/users/alice").status_code == 401
    assert unit_client.get("/api/v1/users/alice").status_code == 200


def test_a_token_without_the_scope_gets_insufficient_scope(unit_client, stub_issuer, alice):
    response = call(unit_client, stub_issuer.sign(stub_issuer.access_claims(scope="svc:interact.poke")))
    assert response.status_code == 403
    assert response.json == {"error": {"code": "insufficient_scope", "message": "scope svc:profile.private required"}}
    assert 'error="insufficient_scope"' in response.headers["WWW-Authenticate"]
    assert 'scope="svc:profile.private"' in response.headers["WWW-Authenticate"]


def test_an_application_token_with_the_scope_is_forbidden(unit_client, stub_issuer, alice):
    claims = stub_issuer.access_claims(sub="profile-poke-service", client_id="profile-poke-service")
    response = call(unit_client, stub_issuer.sign(claims))
    assert response.status_code == 403
    assert response.json["error"]["code"] == "forbidden"
    assert response.headers["WWW-Authenticate"].startswith("Bearer ")


def test_a_service_account_of_a_login_client_is_not_a_user(unit_client, stub_issuer, alice):
    claims = stub_issuer.access_claims(sub="sa-1", preferred_username="service-account-profile-poke-web")
    assert call(unit_client, stub_issuer.sign(claims)).json["error"]["code"] == "forbidden"


def test_a_missing_token_gets_a_challenge_without_error(unit_client):
    response = unit_client.get(PROFILE)
    assert response.status_code == 401
    assert response.json["error"]["code"] == "unauthorized"
    assert response.headers["WWW-Authenticate"] == 'Bearer realm="profile-poke"'


@pytest.mark.parametrize("header", ["bearer {t}", "BEARER {t}", "Bearer    {t}", "  Bearer {t}  "])
def test_the_bearer_scheme_is_case_insensitive_and_space_tolerant(unit_client, stub_issuer, alice, header):
    token = stub_issuer.sign(stub_issuer.access_claims())
    assert unit_client.get(PROFILE, headers={"Authorization": header.format(t=token)}).status_code == 200


@pytest.mark.parametrize("header", ["Basic YWxpY2U6cHc=", "Bearer", "Bearer a b"])
def test_other_authorization_headers_are_invalid_tokens(unit_client, header):
    response = unit_client.get(PROFILE, headers={"Authorization": header})
    assert response.status_code == 401
    assert response.json["error"]["code"] == "invalid_token"


def test_junk_key_ids_cause_at_most_one_jwks_fetch_per_interval(stub_issuer, fake_redis):
    app = create_app(Config(app_env(stub_issuer.issuer, JWKS_REFETCH_INTERVAL="0.5")), redis=fake_redis)
    client = app.test_client()
    with app.app_context():
        services().store.profiles.put(Profile("alice", "@alice", "Alice", sub="user-sub-1"))
    assert call(client, stub_issuer.sign(stub_issuer.access_claims())).status_code == 200
    time.sleep(0.6)
    before = stub_issuer.fetches["jwks"]
    for _ in range(25):
        junk = stub_issuer.sign(stub_issuer.access_claims(), header={"kid": secrets.token_hex(8)})
        assert call(client, junk).status_code == 401
    assert stub_issuer.fetches["jwks"] - before == 1


def test_a_verified_token_is_not_verified_again(unit_client, stub_issuer, alice):
    token = stub_issuer.sign(stub_issuer.access_claims())
    assert call(unit_client, token).status_code == 200
    stub_issuer.published = []  # keys gone: only the cache can still vouch for the token
    assert call(unit_client, token).status_code == 200


def test_deeply_nested_claims_under_a_valid_signature_are_an_invalid_token(unit_client, stub_issuer, alice):
    header = {"alg": "RS256", "typ": "at+jwt", "kid": stub_issuer.key.kid}
    token = stub_issuer.sign_raw_payload(header, "[" * 2500 + "]" * 2500)
    response = call(unit_client, token, "/api/v1/users/bob")
    assert (response.status_code, response.json["error"]["code"]) == (401, "invalid_token")


def test_a_keycloak_access_token_carrying_the_sign_in_nonce_is_accepted(unit_client, stub_issuer, alice):
    token = stub_issuer.sign(stub_issuer.access_claims(nonce="n-1", typ="Bearer", auth_time=1), header={"typ": "JWT"})
    assert call(unit_client, token).status_code == 200


def test_an_unreachable_provider_is_a_503_not_a_bad_token(stub_issuer, fake_redis):
    app = create_app(Config(app_env("http://127.0.0.1:1/realms/gone", IDP_TIMEOUT="0.5")), redis=fake_redis)
    response = call(app.test_client(), stub_issuer.sign(stub_issuer.access_claims()))
    assert (response.status_code, response.json["error"]["code"]) == (503, "unavailable")
