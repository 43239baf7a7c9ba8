"""DPoP at the API (RFC 9449): every check of section 4.3 with a proof that breaks exactly that check,
the downgrade guard of 7.2, the challenges of 7.1, server nonces (9), on fakeredis with the stub issuer.
The rules follow Spring Security's DPoP test list; each refusal asserts why it was refused."""

import hashlib
import json
import secrets
import time
from contextlib import contextmanager

import fakeredis
import pytest
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, utils
from joserfc import jws
from joserfc.jwk import ECKey, RSAKey
from prometheus_client import REGISTRY

from app.extensions import services
from app.store.profile_record import Profile
from app.tokens.dpop import PROOF_MAX_AGE, normalized_url
from app.tokens.dpop_nonces import DpopNonces
from tests.helpers import apps
from tests.helpers.stub_issuer import b64url

URL = "http://localhost/api/v1/me/profile"
CHALLENGE = 'DPoP algs="ES256 PS256 RS256"'
KEYS = {"ES256": ECKey.generate_key("P-256"), "PS256": RSAKey.generate_key(2048), "RS256": RSAKey.generate_key(2048)}
KEY = KEYS["ES256"]
OTHER_KEY = ECKey.generate_key("P-256")


class BigHeaders(jws.JWSRegistry):
    max_header_length = 4096  # an RSA jwk does not fit joserfc's default 512 bytes


class FromNow(int):
    """An iat given as seconds from the moment the proof is made: a case table is built at collection,
    minutes before a long run reaches it."""


def proof(token: str | None, *, key=KEY, alg="ES256", header=None, signer=None, **claims) -> str:
    """A proof for GET URL bound to `token`; `header` and `claims` change or (with None) drop members."""
    claims = {name: int(time.time()) + value if isinstance(value, FromNow) else value for name, value in claims.items()}
    base = {"typ": "dpop+jwt", "alg": alg, "jwk": key.as_dict(private=False)}
    body = {"jti": secrets.token_urlsafe(12), "htm": "GET", "htu": URL, "iat": int(time.time())}
    if token is not None:
        body["ath"] = b64url(hashlib.sha256(token.encode()).digest())  # computed here, not by the code under test
    header = {name: value for name, value in {**base, **(header or {})}.items() if value is not None}
    body = {name: value for name, value in {**body, **claims}.items() if value is not None}
    registry = BigHeaders(algorithms=[alg])
    return jws.serialize_compact(header, json.dumps(body).encode(), signer or key, registry=registry)


def app_with_alice(issuer: str, redis, **env):
    """The helpers' app, whose public origin is the test client's http://localhost (URL's)."""
    return apps.app_with_alice(issuer, redis, **{"PUBLIC_ORIGINS": "http://localhost", **env})


@pytest.fixture
def redis():
    return fakeredis.FakeRedis()


@pytest.fixture
def api(stub_issuer, redis):
    stub_issuer.published = [stub_issuer.key]
    return app_with_alice(stub_issuer.issuer, redis, METRICS_TOKEN="m" * 32)


def bound_token(stub_issuer, key=KEY, **claims) -> str:
    return stub_issuer.sign(stub_issuer.access_claims(cnf={"jkt": key.thumbprint()}, **claims))


def call(app, token: str, proofs=(), *, scheme="DPoP", path="/api/v1/me/profile", **headers):
    sent = [("Authorization", f"{scheme} {token}"), *(("DPoP", value) for value in proofs), *headers.items()]
    return app.test_client().get(path, headers=sent)


def refusal(response) -> tuple:
    """Status, envelope and the DPoP challenge's error: what a client reads to learn why."""
    dpop = [value for value in response.headers.getlist("WWW-Authenticate") if value.startswith("DPoP")]
    return response.status_code, response.json["error"]["code"], response.json["error"]["message"], dpop


def counted(reason: str) -> float:
    """How many refusals /metrics has counted for `reason` in this process."""
    return REGISTRY.get_sample_value("pp_dpop_refusals_total", {"reason": reason}) or 0.0


@contextmanager
def counts(reason: str, times: int = 1):
    """The block makes /metrics count `times` more refusals for `reason`."""
    before = counted(reason)
    yield
    assert counted(reason) == before + times


def refused_proof(message: str) -> tuple:
    challenge = f'{CHALLENGE}, error="invalid_dpop_proof", error_description="{message}"'
    return 401, "invalid_dpop_proof", message, [challenge]


@pytest.mark.parametrize("alg", list(KEYS))
def test_a_bound_token_with_a_valid_proof_reads_the_own_profile_for_each_algorithm(api, stub_issuer, alg):
    token = bound_token(stub_issuer, KEYS[alg])
    response = call(api, token, [proof(token, key=KEYS[alg], alg=alg)])
    assert response.status_code == 200, response.json
    assert response.json["data"]["handle"] == "@alice"


def test_a_poke_works_with_a_proof_for_post_and_its_url(api, stub_issuer):
    with api.app_context():
        services().store.profiles.put(Profile("bob", "@b", "Bob"))
    token = bound_token(stub_issuer)
    sent = proof(token, htm="POST", htu="http://localhost/api/v1/pokes")
    headers = {"Authorization": f"DPoP {token}", "DPoP": sent}
    response = api.test_client().post("/api/v1/pokes", json={"username": "bob"}, headers=headers)
    assert (response.status_code, response.json) == (200, {"success": True})


def test_a_dpop_poke_refused_for_step_up_gets_the_step_up_parameters_in_the_dpop_challenge(stub_issuer, redis):
    app = app_with_alice(stub_issuer.issuer, redis, STEP_UP_ACR="urn:acr:otp", LOGIN_ACR_VALUES="urn:acr:otp")
    with app.app_context():
        services().store.profiles.put(Profile("bob", "@b", "Bob"))
    token = bound_token(stub_issuer, acr="urn:acr:pwd")
    sent = proof(token, htm="POST", htu="http://localhost/api/v1/pokes")
    headers = {"Authorization": f"DPoP {token}", "DPoP": sent}
    response = app.test_client().post("/api/v1/pokes", json={"username": "bob"}, headers=headers)
    message = "a stronger sign-in is required (acr urn:acr:otp)"
    assert refusal(response) == (
        401,
        "insufficient_user_authentication",
        message,
        [
            f'{CHALLENGE}, error="insufficient_user_authentication", error_description="{message}", '
            'acr_values="urn:acr:otp"'
        ],
    )


CASES = {  # case: (what the proof changes, the message, the metrics reason)
    "wrong typ": (dict(header={"typ": "JWT"}), "the DPoP proof's typ is not dpop+jwt", "typ"),
    "no typ": (dict(header={"typ": None}), "the DPoP proof's typ is not dpop+jwt", "typ"),
    "missing jwk": (dict(header={"jwk": None}), "the DPoP proof has no jwk header", "jwk"),
    "private jwk": (dict(header={"jwk": KEY.as_dict(private=True)}), "the DPoP proof's jwk holds a private key", "jwk"),
    "jwk of another key type": (
        dict(header={"jwk": KEYS["RS256"].as_dict(private=False)}),
        "the DPoP proof's jwk does not fit its algorithm",
        "jwk",
    ),
    "signed by another key than its jwk": (
        dict(signer=OTHER_KEY),
        "the DPoP proof's signature does not verify with its jwk",
        "signature",
    ),
    "wrong method": (dict(htm="POST"), "the DPoP proof is for another method (htm)", "htm"),
    "wrong URI": (dict(htu="http://localhost/api/v1/pokes"), "the DPoP proof is for another URL (htu)", "htu"),
    "another host": (
        dict(htu="http://evil.example/api/v1/me/profile"),
        "the DPoP proof is for another URL (htu)",
        "htu",
    ),
    "no htu": (dict(htu=None), "the DPoP proof is for another URL (htu)", "htu"),
    "missing jti": (dict(jti=None), "the DPoP proof has no usable jti", "jti"),
    "empty jti": (dict(jti=""), "the DPoP proof has no usable jti", "jti"),
    "missing iat": (dict(iat=None), "the DPoP proof has no iat", "iat"),
    "iat as text": (dict(iat=str(int(time.time()))), "the DPoP proof has no iat", "iat"),
    "iat out of window (old)": (
        dict(iat=FromNow(-120)),
        "the DPoP proof is too old or from the future (iat)",
        "iat",
    ),
    "iat out of window (future)": (
        dict(iat=FromNow(600)),
        "the DPoP proof is too old or from the future (iat)",
        "iat",
    ),
    "missing ath": (dict(ath=None), "the DPoP proof has no ath", "ath"),
    "wrong ath": (
        dict(ath=b64url(hashlib.sha256(b"another token").digest())),
        "the DPoP proof is for another access token (ath)",
        "ath",
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_proof_that_breaks_one_rule_is_refused_naming_it(api, stub_issuer, case):
    token = bound_token(stub_issuer)
    changes, message, reason = CASES[case]
    before = counted(reason)
    assert refusal(call(api, token, [proof(token, **changes)])) == refused_proof(message)
    assert counted(reason) == before + 1


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("not-a-jwt", "the DPoP proof is not a JWT"),
        ("e30.e30.", "the DPoP proof is not a JWT"),
        ("x" * 9000, "the DPoP proof is too large"),
    ],
    ids=["garbage", "unsigned empty", "too large"],
)
def test_a_proof_that_is_no_jws_is_refused(api, stub_issuer, value, message):
    token = bound_token(stub_issuer)
    with counts("malformed"):
        assert refusal(call(api, token, [value])) == refused_proof(message)


@pytest.mark.parametrize("alg", ["HS256", "none", "ES384", "EdDSA"])
def test_a_proof_with_an_algorithm_outside_the_list_is_refused(api, stub_issuer, alg):
    token = bound_token(stub_issuer)
    header = b64url(f'{{"typ":"dpop+jwt","alg":"{alg}","jwk":{{"kty":"oct","k":"c2VjcmV0"}}}}'.encode())
    claims = b64url(b'{"jti":"x","htm":"GET"}')
    message = "the DPoP proof's algorithm is not one of ES256 PS256 RS256"
    with counts("alg"):
        assert refusal(call(api, token, [f"{header}.{claims}.c2ln"])) == refused_proof(message)


def test_a_proof_signed_with_another_key_than_the_token_is_bound_to_is_refused(api, stub_issuer):
    token = bound_token(stub_issuer, OTHER_KEY)
    message = "the DPoP proof is signed with a key the token is not bound to (jkt)"
    with counts("jkt"):
        assert refusal(call(api, token, [proof(token)])) == refused_proof(message)


def test_two_dpop_headers_are_refused(api, stub_issuer):
    token = bound_token(stub_issuer)
    message = "exactly one DPoP header is required"
    with counts("count", times=2):
        assert refusal(call(api, token, [proof(token), proof(token)])) == refused_proof(message)
        assert refusal(call(api, token, [f"{proof(token)},{proof(token)}"])) == refused_proof(message)


def test_no_dpop_header_is_refused(api, stub_issuer):
    token = bound_token(stub_issuer)
    assert refusal(call(api, token, [])) == refused_proof("exactly one DPoP header is required")


def test_a_replayed_proof_is_refused_the_second_time(api, stub_issuer):
    token = bound_token(stub_issuer)
    sent = proof(token)
    assert call(api, token, [sent]).status_code == 200
    with counts("replay"):
        assert refusal(call(api, token, [sent])) == refused_proof("this DPoP proof was already used (jti)")


def test_a_replay_is_refused_by_another_instance_sharing_the_redis(api, stub_issuer, redis):
    other = app_with_alice(stub_issuer.issuer, redis, REDIS_KEY_PREFIX=api.config["REDIS_KEY_PREFIX"])
    token = bound_token(stub_issuer)
    sent = proof(token)
    assert call(api, token, [sent]).status_code == 200
    assert refusal(call(other, token, [sent])) == refused_proof("this DPoP proof was already used (jti)")


def test_the_proof_is_checked_even_when_the_token_is_cached(api, stub_issuer):
    token = bound_token(stub_issuer)
    assert call(api, token, [proof(token)]).status_code == 200
    message = "the DPoP proof is for another method (htm)"
    assert refusal(call(api, token, [proof(token, htm="PUT")])) == refused_proof(message)


def test_a_refused_proof_takes_no_place_in_redis(api, stub_issuer, redis):
    token = bound_token(stub_issuer)
    call(api, token, [proof(token, htm="PUT")])
    assert redis.keys("*dpop-jti*") == []
    call(api, token, [proof(token)])
    assert len(redis.keys("*dpop-jti*")) == 1
    assert 0 < redis.ttl(redis.keys("*dpop-jti*")[0]) <= 60 + 2 * api.config["TOKEN_LEEWAY"]


def test_a_bound_token_sent_as_bearer_is_refused_even_with_a_proof(api, stub_issuer):
    token = bound_token(stub_issuer)
    with counts("downgrade"):
        response = call(api, token, [proof(token)], scheme="Bearer")
    message = "a DPoP-bound access token must be sent with the DPoP scheme and a proof"
    assert refusal(response) == (401, "invalid_token", message, [CHALLENGE])
    assert response.headers["WWW-Authenticate"] == (
        f'Bearer realm="profile-poke", error="invalid_token", error_description="{message}"'
    )


def test_a_bound_token_sent_as_bearer_is_refused_with_dpop_off(stub_issuer, redis):
    app = app_with_alice(stub_issuer.issuer, redis, DPOP="off")
    response = call(app, bound_token(stub_issuer), scheme="Bearer")
    message = "a DPoP-bound access token must be sent with the DPoP scheme and a proof"
    assert refusal(response) == (401, "invalid_token", message, [])


def test_with_dpop_off_the_dpop_scheme_is_not_accepted(stub_issuer, redis):
    app = app_with_alice(stub_issuer.issuer, redis, DPOP="off")
    token = bound_token(stub_issuer)
    response = call(app, token, [proof(token)])
    assert refusal(response) == (401, "invalid_token", "the Authorization header is not a bearer token", [])


def test_an_unbound_token_sent_with_the_dpop_scheme_is_refused(api, stub_issuer):
    token = stub_issuer.sign(stub_issuer.access_claims())
    message = "an access token sent with the DPoP scheme must be bound to a key (cnf.jkt)"
    challenge = f'{CHALLENGE}, error="invalid_token", error_description="{message}"'
    with counts("unbound"):
        assert refusal(call(api, token, [proof(token)])) == (401, "invalid_token", message, [challenge])


@pytest.mark.parametrize(
    "cnf", [{"x5t#S256": "abc"}, {"jkt": ""}, "jkt"], ids=["mtls binding", "empty jkt", "no object"]
)
def test_a_token_bound_in_a_way_the_api_cannot_check_is_refused(api, stub_issuer, cnf):
    token = stub_issuer.sign(stub_issuer.access_claims(cnf=cnf))
    response = call(api, token, [proof(token)])
    assert refusal(response)[:3] == (
        401,
        "invalid_token",
        "the access token is bound to a key in a way this API cannot check",
    )


def test_an_unbound_bearer_token_keeps_working_and_every_401_names_both_schemes(api, stub_issuer):
    token = stub_issuer.sign(stub_issuer.access_claims())
    assert call(api, token, scheme="Bearer").status_code == 200
    missing = api.test_client().get("/api/v1/me/profile")
    assert missing.headers.getlist("WWW-Authenticate") == ['Bearer realm="profile-poke"', CHALLENGE]


def test_with_dpop_off_a_401_names_only_the_bearer_scheme(stub_issuer, redis):
    app = app_with_alice(stub_issuer.issuer, redis, DPOP="off")
    missing = app.test_client().get("/api/v1/me/profile")
    assert missing.headers.getlist("WWW-Authenticate") == ['Bearer realm="profile-poke"']


def test_the_public_profile_checks_a_dpop_token_like_every_route(api, stub_issuer):
    token = bound_token(stub_issuer)
    path = "/api/v1/users/alice"
    assert call(api, token, [proof(token, htu=f"http://localhost{path}")], path=path).status_code == 200
    message = "the DPoP proof is for another URL (htu)"
    assert refusal(call(api, token, [proof(token)], path=path)) == refused_proof(message)


def test_behind_a_proxy_htu_is_the_public_https_url(stub_issuer, redis):
    app = app_with_alice(stub_issuer.issuer, redis, PROXY_HOPS="1", PUBLIC_ORIGINS="https://api.example.com")
    token = bound_token(stub_issuer)
    public = "https://API.Example.com:443/api/v1/me/profile?tab=1#top"
    forwarded = {"X-Forwarded-Proto": "https", "X-Forwarded-For": "203.0.113.9"}
    assert call(app, token, [proof(token, htu=public)], **forwarded).status_code == 200
    plain = proof(token, htu="http://api.example.com/api/v1/me/profile")
    assert refusal(call(app, token, [plain], **forwarded)) == refused_proof("the DPoP proof is for another URL (htu)")


@pytest.mark.parametrize(
    ("url", "normalized"),
    [
        ("HTTPS://Api.Example.COM:443/a/b?q=1#f", "https://api.example.com/a/b"),
        ("http://h:80/", "http://h/"),
        ("http://h:8080/x", "http://h:8080/x"),
        ("https://[::1]:8443/x", "https://[::1]:8443/x"),
        ("https://h", "https://h/"),
        ("https://h/a:b@c!$&'()*+,;=~/%7E%3a%20", "https://h/a:b@c!$&'()*+,;=~/~:%20"),  # RFC 3986 pchar as is
        ("ftp://h/x", None),
        ("http:///no-host", None),
        ("/relative", None),
        ("https://h:99999/", None),
    ],
)
def test_urls_are_compared_as_rfc_9449_says(url, normalized):
    assert normalized_url(url) == normalized


def test_with_server_nonces_a_proof_without_one_gets_use_dpop_nonce_and_the_retry_passes(stub_issuer, redis):
    app = app_with_alice(stub_issuer.issuer, redis, DPOP_NONCE="on", METRICS_TOKEN="m" * 32)
    token = bound_token(stub_issuer)
    with counts("nonce"):
        first = call(app, token, [proof(token)])
    message = "the DPoP proof must carry the server's nonce (DPoP-Nonce)"
    challenge = f'{CHALLENGE}, error="use_dpop_nonce", error_description="{message}"'
    assert refusal(first) == (401, "use_dpop_nonce", message, [challenge])
    nonce = first.headers["DPoP-Nonce"]
    assert call(app, token, [proof(token, nonce=nonce)]).status_code == 200
    assert refusal(call(app, token, [proof(token, nonce="made-up")]))[1] == "use_dpop_nonce"


def test_a_nonce_from_one_instance_is_accepted_by_another_sharing_the_secret_key(stub_issuer, redis):
    secret = secrets.token_urlsafe(32)
    one = app_with_alice(stub_issuer.issuer, redis, DPOP_NONCE="on", SECRET_KEY=secret)
    two = app_with_alice(stub_issuer.issuer, redis, DPOP_NONCE="on", SECRET_KEY=secret)
    stranger = app_with_alice(stub_issuer.issuer, redis, DPOP_NONCE="on")
    token = bound_token(stub_issuer)
    nonce = call(one, token, [proof(token)]).headers["DPoP-Nonce"]
    assert call(two, token, [proof(token, nonce=nonce)]).status_code == 200
    assert refusal(call(stranger, token, [proof(token, nonce=nonce)]))[1] == "use_dpop_nonce"


def test_refusals_are_counted_by_reason_in_the_metrics(api, stub_issuer):
    token = bound_token(stub_issuer)
    call(api, token, [proof(token, htm="PUT")])
    call(api, token, scheme="Bearer")
    scraped = api.test_client().get("/metrics", headers={"Authorization": f"Bearer {'m' * 32}"}).text
    assert 'pp_dpop_refusals_total{reason="htm"}' in scraped
    assert 'pp_dpop_refusals_total{reason="downgrade"}' in scraped
    assert token not in scraped


def test_a_jwk_that_is_no_usable_key_is_refused(api, stub_issuer):
    token = bound_token(stub_issuer)
    broken = {**KEY.as_dict(private=False), "x": "AAAA", "y": "AAAA"}  # not a point of P-256
    message = "the DPoP proof's jwk is not a usable public key"
    with counts("jwk"):
        assert refusal(call(api, token, [proof(token, header={"jwk": broken})])) == refused_proof(message)


def test_a_server_nonce_is_good_in_its_time_bucket_and_the_next_one_only(monkeypatch):
    now = [1_000_000.0]
    monkeypatch.setattr("app.tokens.dpop.time.time", lambda: now[0])
    nonces = DpopNonces("a-secret-key-of-at-least-32-characters", period=300)
    issued = nonces.current()
    assert nonces.accepts(issued)
    now[0] += 300  # the next bucket: the previous nonce still passes
    assert nonces.accepts(issued) and nonces.current() != issued
    later = nonces.current()
    now[0] += 300  # two buckets on: it is refused
    assert not nonces.accepts(issued)
    now[0] -= 600  # a nonce of a bucket still to come is not current yet
    assert not nonces.accepts(later)
    assert not nonces.accepts(None) and not nonces.accepts(42)


def raw_proof(header: dict, payload: bytes, key=KEY) -> str:
    """An ES256 JWS signed by hand, for headers and payloads a JOSE library would refuse to write."""
    signing_input = f"{b64url(json.dumps(header).encode())}.{b64url(payload)}"
    r, s = utils.decode_dss_signature(key.private_key.sign(signing_input.encode(), ec.ECDSA(hashes.SHA256())))
    return f"{signing_input}.{b64url(r.to_bytes(32, 'big') + s.to_bytes(32, 'big'))}"


def es256_header(**members) -> dict:
    return {"typ": "dpop+jwt", "alg": "ES256", "jwk": KEY.as_dict(private=False), **members}


def proof_claims(token: str, **changes) -> bytes:
    claims = {"jti": secrets.token_urlsafe(12), "htm": "GET", "htu": URL, "iat": int(time.time())}
    claims["ath"] = b64url(hashlib.sha256(token.encode()).digest())
    return json.dumps({**claims, **changes}).encode()


@pytest.mark.parametrize(
    ("sent", "message", "reason"),
    [
        (
            lambda token: raw_proof(es256_header(crit=["x"], x=1), proof_claims(token)),
            "the DPoP proof has an unsupported critical header",
            "malformed",
        ),
        (
            lambda token: raw_proof(es256_header(), b"[1, 2]"),
            "the DPoP proof's claims are not a JSON object",
            "malformed",
        ),
        (
            lambda token: raw_proof(es256_header(), b"not json"),
            "the DPoP proof's claims are not a JSON object",
            "malformed",
        ),
        (
            lambda token: raw_proof(
                es256_header(jwk=ECKey.generate_key("P-384").as_dict(private=False)), proof_claims(token)
            ),
            "the DPoP proof's signature does not verify with its jwk",
            "signature",
        ),
        (
            lambda token: raw_proof(es256_header(), proof_claims(token, htu=42)),
            "the DPoP proof is for another URL (htu)",
            "htu",
        ),
        (
            lambda token: raw_proof(es256_header(), proof_claims(token, jti="j" * 257)),
            "the DPoP proof has no usable jti",
            "jti",
        ),
    ],
    ids=["crit header", "claims a list", "claims not JSON", "jwk of another curve", "htu a number", "jti over 256"],
)
def test_a_proof_a_library_would_not_write_is_refused_naming_why(api, stub_issuer, sent, message, reason):
    token = bound_token(stub_issuer)
    with counts(reason):
        assert refusal(call(api, token, [sent(token)])) == refused_proof(message)


@pytest.mark.parametrize(
    "changes",
    [{"jti": "j"}, {"jti": "j" * 256}, {"unknown_claim": True}],
    ids=["one-character jti", "256-character jti", "an extra claim"],
)
def test_a_proof_at_the_edges_of_what_is_allowed_passes(api, stub_issuer, changes):
    token = bound_token(stub_issuer)
    assert (
        call(
            api, token, [raw_proof(es256_header(kid="k1", extra="ignored"), proof_claims(token, **changes))]
        ).status_code
        == 200
    )


@pytest.mark.parametrize("edge", ["oldest", "newest"])
def test_a_proof_issued_at_either_end_of_its_window_passes(api, stub_issuer, monkeypatch, edge):
    now = float(int(time.time()))
    monkeypatch.setattr(time, "time", lambda: now)  # the proof's window ends on this very instant
    iat = now - PROOF_MAX_AGE if edge == "oldest" else now + api.config["TOKEN_LEEWAY"]
    token = bound_token(stub_issuer)
    assert call(api, token, [proof(token, iat=iat)]).status_code == 200


def test_a_proof_of_exactly_the_size_limit_is_parsed_and_one_byte_more_is_not(api, stub_issuer):
    token = bound_token(stub_issuer)
    assert refusal(call(api, token, ["x" * 8192]))[2] == "the DPoP proof is not a JWT"
    assert refusal(call(api, token, ["x" * 8193]))[2] == "the DPoP proof is too large"
