"""Bearer-token validation against a stub issuer and fakeredis: hostile tokens get the contract's answers."""

import secrets
import time

import pytest

from app import create_app
from app.extensions import services
from app.store.profile_record import Profile
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
    if header == "jwk":  # an EC key: an embedded RSA key would make the header too large to parse
        attacker = stub.new_ec_key(kid)
        return stub.sign(claims(), key=attacker, header={"alg": "ES256", "jwk": attacker.as_dict(private=False)})
    attacker = stub.new_key(kid)
    offered = {"jku": f"{stub.issuer}/attacker-jwks", "x5u": f"{stub.issuer}/attacker-cert"}[header]
    return stub.sign(claims(), key=attacker, header={header: offered})


def _id_token(stub, claims):
    id_claims = claims(aud=["profile-poke-web", "profile-poke-api"], nonce="n", azp="profile-poke-web")
    return stub.sign(id_claims, header={"typ": "JWT"})


ALGORITHM = "the access token's algorithm is not accepted"
UNKNOWN_KEY = "the access token was not signed by a known key"
BAD_SIGNATURE = "the access token's signature is invalid"
WRONG_ISSUER = "the access token has the wrong issuer"
WRONG_AUDIENCE = "the access token is not meant for this API"
MALFORMED = "the access token is malformed"

# case -> (how the attacker makes the token, the error_description it must get)
HOSTILE = {
    "alg none": (
        lambda stub, claims: stub.unsigned(claims(), {"alg": "none", "typ": "at+jwt", "kid": stub.key.kid}), ALGORITHM
    ),
    "HS256 with the RSA public key": (
        lambda stub, claims: stub.unsigned(claims(), {"alg": "HS256", "typ": "at+jwt", "kid": stub.key.kid}),
        ALGORITHM,
    ),
    "kid naming no key": (lambda stub, claims: stub.sign(claims(), header={"kid": "no-such-key"}), UNKNOWN_KEY),
    "forged signature (same kid, other key)": (
        lambda stub, claims: stub.sign(claims(), key=stub.new_key(stub.key.kid)), BAD_SIGNATURE
    ),
    "wrong iss": (lambda stub, claims: stub.sign(claims(iss="https://evil.example/realms/dev")), WRONG_ISSUER),
    "wrong aud": (lambda stub, claims: stub.sign(claims(aud="another-api")), WRONG_AUDIENCE),
    "missing aud": (lambda stub, claims: stub.sign(claims(aud=None)), WRONG_AUDIENCE),
    "expired": (
        lambda stub, claims: stub.sign(claims(exp=int(time.time()) - 120, iat=int(time.time()) - 420)),
        "the access token has expired",
    ),
    "nbf in the future": (
        lambda stub, claims: stub.sign(claims(nbf=int(time.time()) + 120)), "the access token is not valid yet"
    ),
    "iat in the future": (
        lambda stub, claims: stub.sign(claims(iat=int(time.time()) + 120)), "the access token is not valid yet"
    ),
    "ID token as access token": (_id_token, "an ID token is not an access token"),
    "typ of another kind": (
        lambda stub, claims: stub.sign(claims(), header={"typ": "dpop+jwt"}), "the token is not an access token"
    ),
    "missing sub": (lambda stub, claims: stub.sign(claims(sub=None)), "the access token has no subject"),
    "scope neither a string nor a list of strings": (
        lambda stub, claims: stub.sign(claims(scope=42)), "the access token's scope is malformed"
    ),
    "over 8 KB": (lambda stub, claims: stub.sign(claims(padding="x" * 9000)), "the access token is too large"),
    "non-ASCII garbage": (lambda stub, claims: "äöü.\u2603.\U0001f4a9", MALFORMED),
    "not a JWT": (lambda stub, claims: "just-some-opaque-value", MALFORMED),
    "jku header pointing at the attacker's keys": (lambda stub, claims: _attacker(stub, claims, "jku"), UNKNOWN_KEY),
    "x5u header pointing at the attacker's keys": (lambda stub, claims: _attacker(stub, claims, "x5u"), UNKNOWN_KEY),
    "embedded jwk of the attacker's key": (lambda stub, claims: _attacker(stub, claims, "jwk"), UNKNOWN_KEY),
    "embedded jwk under the real kid": (
        lambda stub, claims: _attacker(stub, claims, "jwk", kid=stub.key.kid), BAD_SIGNATURE
    ),
    "right keys, another issuer": (
        lambda stub, claims: stub.sign(claims(iss=stub.issuer.replace("stub", "other"))), WRONG_ISSUER
    ),
    "exp as a string": (
        lambda stub, claims: stub.sign(claims(exp=str(int(time.time()) + 300))),
        "the access token has malformed time claims",
    ),
    "aud as a number": (lambda stub, claims: stub.sign(claims(aud=42)), WRONG_AUDIENCE),
    "unknown crit header": (
        lambda stub, claims: stub.sign_raw(
            claims(), {"alg": "RS256", "typ": "at+jwt", "kid": stub.key.kid, "crit": ["x-unknown"], "x-unknown": 1}
        ),
        "the access token has an unsupported critical header",
    ),
}  # fmt: skip


def assert_invalid_token(response, message: str) -> None:
    """A 401 invalid_token whose envelope and challenge both give `message` as the reason."""
    assert response.status_code == 401
    assert response.json == {"error": {"code": "invalid_token", "message": message}}
    challenge = f'Bearer realm="profile-poke", error="invalid_token", error_description="{message}"'
    assert response.headers["WWW-Authenticate"] == challenge


@pytest.mark.parametrize(("make", "message"), [pytest.param(*row, id=case) for case, row in HOSTILE.items()])
def test_hostile_token_is_refused_as_invalid_token(unit_client, stub_issuer, alice, make, message):
    assert_invalid_token(call(unit_client, make(stub_issuer, stub_issuer.access_claims)), message)


def test_offered_key_locations_are_never_fetched(unit_client, stub_issuer, alice):
    for case in ("jku header pointing at the attacker's keys", "x5u header pointing at the attacker's keys"):
        make, message = HOSTILE[case]
        assert_invalid_token(call(unit_client, make(stub_issuer, stub_issuer.access_claims)), message)
    assert stub_issuer.fetches["other"] == 0


def test_a_token_expiring_this_second_is_refused_without_leeway(stub_issuer, fake_redis):
    app = create_app(Config(app_env(stub_issuer.issuer, TOKEN_LEEWAY="0")), redis=fake_redis)
    with app.app_context():
        services().store.profiles.put(Profile("alice", "@alice", "Alice", sub="user-sub-1"))
    now = int(time.time())
    expiring = stub_issuer.sign(stub_issuer.access_claims(exp=now, iat=now - 60))
    assert_invalid_token(call(app.test_client(), expiring), "the access token has expired")


def test_the_leeway_accepts_a_token_that_expired_seconds_ago(unit_client, stub_issuer, alice):
    just_expired = stub_issuer.sign(stub_issuer.access_claims(exp=int(time.time()) - 5))
    assert call(unit_client, just_expired).status_code == 200


def test_a_bad_token_on_the_public_profile_is_refused(unit_client, stub_issuer, alice):
    expired = stub_issuer.sign(stub_issuer.access_claims(exp=int(time.time()) - 120))
    assert_invalid_token(call(unit_client, expired, "/api/v1/users/alice"), "the access token has expired")
    assert unit_client.get("/api/v1/users/alice").json["handle"] == "@alice"


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
    assert response.json == {"error": {"code": "forbidden", "message": "a user-delegated token is required"}}
    assert response.headers["WWW-Authenticate"].startswith("Bearer ")


def test_a_service_account_of_a_login_client_is_not_a_user(unit_client, stub_issuer, alice):
    claims = stub_issuer.access_claims(sub="sa-1", preferred_username="service-account-profile-poke-web")
    response = call(unit_client, stub_issuer.sign(claims))
    assert response.status_code == 403
    assert response.json == {"error": {"code": "forbidden", "message": "a user-delegated token is required"}}


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
    assert_invalid_token(response, "the Authorization header is not a bearer token")


def test_junk_key_ids_cause_at_most_one_jwks_fetch_per_interval(stub_issuer, fake_redis):
    # After the keys are read once, the first unknown kid may fetch them again and the other 24 within
    # the interval may not (an interval no slow machine can outlast, so the count does not hang on load).
    app = create_app(Config(app_env(stub_issuer.issuer, JWKS_REFETCH_INTERVAL="60")), redis=fake_redis)
    client = app.test_client()
    with app.app_context():
        services().store.profiles.put(Profile("alice", "@alice", "Alice", sub="user-sub-1"))
    assert call(client, stub_issuer.sign(stub_issuer.access_claims())).status_code == 200
    before = stub_issuer.fetches["jwks"]
    for _ in range(25):
        junk = stub_issuer.sign(stub_issuer.access_claims(), header={"kid": secrets.token_hex(8)})
        assert_invalid_token(call(client, junk), UNKNOWN_KEY)
    assert stub_issuer.fetches["jwks"] - before == 1


def test_a_verified_token_is_not_verified_again(stub_issuer, fake_redis):
    app = create_app(Config(app_env(stub_issuer.issuer, JWKS_REFETCH_INTERVAL="0")), redis=fake_redis)
    with app.app_context():
        services().store.profiles.put(Profile("alice", "@alice", "Alice", sub="user-sub-1"))
    client, token = app.test_client(), stub_issuer.sign(stub_issuer.access_claims())
    assert call(client, token).status_code == 200
    # The provider rotates its key and the app learns the new set, so the first key is no longer known:
    # only the token cache can still vouch for the first token, and it needs no JWKS fetch to do so.
    successor = stub_issuer.new_key("stub-key-2")
    stub_issuer.published = [successor]
    assert call(client, stub_issuer.sign(stub_issuer.access_claims(), key=successor)).status_code == 200
    fetches = stub_issuer.fetches["jwks"]
    response = call(client, token)
    assert response.status_code == 200, response.json
    assert response.json["data"]["handle"] == "@alice"
    assert stub_issuer.fetches["jwks"] == fetches
    assert_invalid_token(call(client, stub_issuer.sign(stub_issuer.access_claims(jti="j2"))), UNKNOWN_KEY)


@pytest.mark.parametrize("typ", [None, "JWT", "jwt", "at+jwt", "AT+JWT", "application/at+jwt"])
def test_every_typ_providers_give_access_tokens_is_accepted_and_none_is_needed(unit_client, stub_issuer, alice, typ):
    header = {"alg": "RS256", "kid": stub_issuer.key.kid, **({"typ": typ} if typ else {})}  # None: no typ at all
    assert call(unit_client, stub_issuer.sign_raw(stub_issuer.access_claims(), header)).status_code == 200


def test_a_token_without_iss_is_refused_as_from_the_wrong_issuer(unit_client, stub_issuer, alice):
    token = stub_issuer.sign(stub_issuer.access_claims(iss=None))
    assert_invalid_token(call(unit_client, token), "the access token has the wrong issuer")


@pytest.mark.parametrize(
    ("claims", "message"),
    [({"sub": 42}, "the access token has no subject"), ({"jti": 42}, "the access token's jti claim is malformed")],
    ids=["a number as sub", "a number as jti"],
)
def test_a_registered_claim_of_the_wrong_type_is_refused_naming_it(unit_client, stub_issuer, alice, claims, message):
    assert_invalid_token(call(unit_client, stub_issuer.sign(stub_issuer.access_claims(**claims))), message)


@pytest.mark.parametrize(
    "marks",
    [{"typ": "ID"}, {"at_hash": "x"}, {"c_hash": "x"}, {"nonce": "n"}, {"nonce": "n", "typ": "ID"}],
    ids=["Keycloak's typ ID", "at_hash", "c_hash", "a nonce without typ Bearer", "a nonce with typ ID"],
)
def test_each_mark_of_an_id_token_alone_gets_it_refused(unit_client, stub_issuer, alice, marks):
    token = stub_issuer.sign(stub_issuer.access_claims(**marks), header={"typ": "JWT"})
    assert_invalid_token(call(unit_client, token), "an ID token is not an access token")


def test_a_cached_token_is_refused_once_it_has_expired(stub_issuer, fake_redis, monkeypatch):
    app = create_app(Config(app_env(stub_issuer.issuer, TOKEN_LEEWAY="0")), redis=fake_redis)
    with app.app_context():
        services().store.profiles.put(Profile("alice", "@alice", "Alice", sub="user-sub-1"))
    # The clock moves when the test says: the first call is inside the token's life however slow the
    # machine is (a second of real time could run out before it), the next ones are past it.
    client, real_time, later = app.test_client(), time.time, 0.0
    monkeypatch.setattr(time, "time", lambda: real_time() + later)
    expires = real_time() + 30.5  # NumericDate may have a fraction (RFC 7519)
    token = stub_issuer.sign(stub_issuer.access_claims(exp=expires, iat=int(real_time()) - 60))
    assert call(client, token).status_code == 200  # verified, and now cached
    later = 30.55  # just past exp
    assert_invalid_token(call(client, token), "the access token has expired")
    assert_invalid_token(call(client, token), "the access token has expired")  # and stays refused


def test_a_cached_token_is_trusted_no_longer_than_the_keys_that_verified_it(stub_issuer, fake_redis, monkeypatch):
    app = create_app(Config(app_env(stub_issuer.issuer, JWKS_MAX_AGE="600")), redis=fake_redis)
    with app.app_context():
        services().store.profiles.put(Profile("alice", "@alice", "Alice", sub="user-sub-1"))
    client, later = app.test_client(), 0.0
    real_time, real_monotonic = time.time, time.monotonic
    monkeypatch.setattr(time, "time", lambda: real_time() + later)
    monkeypatch.setattr(time, "monotonic", lambda: real_monotonic() + later)
    assert call(client, stub_issuer.sign(stub_issuer.access_claims(jti="first"))).status_code == 200  # keys read
    later = 400.0
    token = stub_issuer.sign(stub_issuer.access_claims(exp=int(time.time()) + 3600))
    assert call(client, token).status_code == 200  # verified by keys read 400 s ago
    stub_issuer.published = [stub_issuer.new_key("stub-key-2")]  # the provider removes the key
    later = 700.0  # the keys are past JWKS_MAX_AGE, the token is not
    assert_invalid_token(call(client, token), UNKNOWN_KEY)


def test_deeply_nested_claims_under_a_valid_signature_are_an_invalid_token(unit_client, stub_issuer, alice):
    header = {"alg": "RS256", "typ": "at+jwt", "kid": stub_issuer.key.kid}
    token = stub_issuer.sign_raw_payload(header, "[" * 2500 + "]" * 2500)
    assert_invalid_token(
        call(unit_client, token, "/api/v1/users/bob"), "the access token's claims are not a JSON object"
    )


def test_a_keycloak_access_token_carrying_the_sign_in_nonce_is_accepted(unit_client, stub_issuer, alice):
    token = stub_issuer.sign(stub_issuer.access_claims(nonce="n-1", typ="Bearer", auth_time=1), header={"typ": "JWT"})
    assert call(unit_client, token).status_code == 200


def test_an_unreachable_provider_is_a_503_not_a_bad_token(stub_issuer, fake_redis):
    app = create_app(Config(app_env("http://127.0.0.1:1/realms/gone", IDP_TIMEOUT="0.5")), redis=fake_redis)
    response = call(app.test_client(), stub_issuer.sign(stub_issuer.access_claims()))
    assert (response.status_code, response.json["error"]["code"]) == (503, "unavailable")
    assert response.headers["Retry-After"]
