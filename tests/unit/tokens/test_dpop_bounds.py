"""DPoP details of issue 28 (point 3), on fakeredis with the stub issuer: `htu` is checked against the
configured public origins, never a host the request names; a proof member that is not ASCII is refused
as malformed (it was a 500); proof ids are kept per key thumbprint for the acceptance window only,
with a bound per key; and an introspection answer saying `token_type: DPoP` without a key is refused."""

import json
import secrets
import time

import fakeredis
import pytest

from app.store.keys import Keys
from app.store.proofs import SeenProofs
from app.tokens.dpop import DpopProofs
from app.tokens.dpop_jwt import InvalidDpopProof
from app.tokens.introspection import REFUSED
from config import Config, ConfigError
from tests.helpers import apps
from tests.helpers.log_capture import LineCapture
from tests.helpers.refusals import refusal_reasons
from tests.helpers.settings import app_env

from .test_dpop import (
    KEY,
    OTHER_KEY,
    bound_token,
    call,
    counts,
    es256_header,
    proof,
    proof_claims,
    raw_proof,
    refused_proof,
)
from .test_introspection import IntrospectingIssuer

PROFILE = "/api/v1/me/profile"
PUBLIC = "https://api.example.com"
FOR_ANOTHER_URL = "the DPoP proof is for another URL (htu)"
TOO_MANY = "too many DPoP proofs signed with this key; try again later"
UNCHECKABLE = "the access token is bound to a key in a way this API cannot check"


@pytest.fixture
def redis():
    return fakeredis.FakeRedis()


def app_for(stub_issuer, redis, **env):
    return apps.app_with_alice(stub_issuer.issuer, redis, **env)


def proof_ids(redis, key=KEY) -> dict[bytes, float]:
    """The proof ids kept for `key`, each with the time it stops mattering."""
    [name] = [name for name in redis.scan_iter("*dpop-jti:*") if key.thumbprint().encode() in name]
    return dict(redis.zrange(name, 0, -1, withscores=True))


# ---------------------------------------------------------------- htu: the configured public origin


def test_a_proof_for_the_host_the_request_names_is_refused_unless_it_is_a_public_origin(stub_issuer, redis):
    app = app_for(stub_issuer, redis, PUBLIC_ORIGINS=PUBLIC)
    token = bound_token(stub_issuer)
    named = proof(token, htu=f"http://evil.example{PROFILE}")
    assert _refusal(call(app, token, [named], Host="evil.example")) == refused_proof(FOR_ANOTHER_URL)
    assert call(app, token, [proof(token, htu=PUBLIC + PROFILE)], Host="evil.example").status_code == 200


@pytest.mark.parametrize("forwards_host", ["false", "true"])
def test_a_forwarded_host_never_becomes_the_htu(stub_issuer, redis, forwards_host):
    app = app_for(stub_issuer, redis, PUBLIC_ORIGINS=PUBLIC, PROXY_HOPS="1", PROXY_FORWARDS_HOST=forwards_host)
    token = bound_token(stub_issuer)
    # A proof captured at another deployment with the same path (staging), replayed with its host.
    captured = proof(token, htu=f"https://staging.example.com{PROFILE}")
    forwarded = {
        "X-Forwarded-Host": "staging.example.com",
        "X-Forwarded-Proto": "https",
        "X-Forwarded-For": "192.0.2.9",
    }
    assert refused_proof(FOR_ANOTHER_URL) == _refusal(call(app, token, [captured], **forwarded))
    assert call(app, token, [proof(token, htu=PUBLIC + PROFILE)], **forwarded).status_code == 200


def test_every_listed_public_origin_is_accepted_and_no_other(stub_issuer, redis):
    app = app_for(stub_issuer, redis, PUBLIC_ORIGINS=f"{PUBLIC}, http://localhost:8080/")
    token = bound_token(stub_issuer)
    assert call(app, token, [proof(token, htu=PUBLIC + PROFILE)]).status_code == 200
    assert call(app, token, [proof(token, htu=f"http://LOCALHOST:8080{PROFILE}")]).status_code == 200
    assert _refusal(call(app, token, [proof(token, htu=f"http://localhost{PROFILE}")])) == refused_proof(
        FOR_ANOTHER_URL
    )


@pytest.mark.parametrize("origin", ["https://api.example.com/", "https://API.EXAMPLE.COM", "https://api.example.X"])
def test_dpop_proofs_take_an_origin_as_written_but_for_a_trailing_slash(redis, origin):
    # Config drops trailing slashes first; DpopProofs does not rely on it. Hosts compare in any case.
    proofs = DpopProofs(SeenProofs(redis, Keys("t:")), leeway=5, origins=[origin])
    sent = proof("the-token", htu=origin.rstrip("/").lower() + PROFILE)
    proofs.check([sent], method="GET", path=PROFILE, access_token="the-token", jkt=KEY.thumbprint())
    with pytest.raises(InvalidDpopProof) as refused:
        other = proof("the-token", htu=f"https://other.example{PROFILE}")
        proofs.check([other], method="GET", path=PROFILE, access_token="the-token", jkt=KEY.thumbprint())
    assert refused.value.message == FOR_ANOTHER_URL


def test_by_default_the_public_origin_is_the_redirect_uris(stub_issuer, redis):
    app = app_for(stub_issuer, redis)
    assert app.config["PUBLIC_ORIGINS"] == ["http://127.0.0.1:8000"]  # app_env's OIDC_REDIRECT_URI
    token = bound_token(stub_issuer)
    assert call(app, token, [proof(token, htu=f"http://127.0.0.1:8000{PROFILE}")]).status_code == 200
    assert _refusal(call(app, token, [proof(token)])) == refused_proof(FOR_ANOTHER_URL)  # http://localhost


def test_a_percent_encoded_path_is_the_same_path(stub_issuer, redis):
    app = app_for(stub_issuer, redis, PUBLIC_ORIGINS=PUBLIC)
    token = bound_token(stub_issuer)
    path = "/api/v1/users/alice"
    sent = proof(token, htu=f"{PUBLIC}/api/v1/users/%61lice")
    assert call(app, token, [sent], path=path).status_code == 200


@pytest.mark.parametrize(
    "value",
    [
        "api.example.com",
        "https://api.example.com/api",
        "ftp://api.example.com",
        "https://user@api.example.com",
        "https://api.example.com/?x=1",
    ],
    ids=["no scheme", "a path", "not http", "a user", "a query"],
)
def test_public_origins_that_are_not_origins_stop_start_up_naming_the_setting(value):
    with pytest.raises(ConfigError, match="PUBLIC_ORIGINS must list origins such as"):
        Config(app_env("http://issuer.invalid", PUBLIC_ORIGINS=value))


def test_forwarded_hosts_are_ignored_unless_the_operator_says_a_proxy_sets_them():
    assert Config(app_env("http://issuer.invalid")).PROXY_FORWARDS_HOST is False


# ---------------------------------------------------------------- members that are not ASCII


@pytest.mark.parametrize(
    ("changes", "header", "message"),
    [
        ({"ath": "é" * 43}, {}, "the DPoP proof's ath is not ASCII"),
        ({"jti": "jti-é"}, {}, "the DPoP proof's jti is not ASCII"),
        ({"htm": "GÉT"}, {}, "the DPoP proof's htm is not ASCII"),
        ({"htu": f"http://localhost{PROFILE}é"}, {}, "the DPoP proof's htu is not ASCII"),
        ({"note": "ünïcode"}, {}, "the DPoP proof's members are not ASCII"),
        ({}, {"kid": "clé"}, "the DPoP proof's kid is not ASCII"),
        ({}, {"x-é": "é"}, "the DPoP proof's members are not ASCII"),
    ],
    ids=["ath", "jti", "htm", "htu", "another claim", "kid", "another header member"],
)
def test_a_proof_member_that_is_not_ascii_is_refused_as_malformed(stub_issuer, redis, changes, header, message):
    # METRICS_TOKEN switches counting on: alone (as under mutmut) nothing else in the run would
    app = app_for(stub_issuer, redis, PUBLIC_ORIGINS="http://localhost", METRICS_TOKEN="m" * 32)
    token = bound_token(stub_issuer)
    with counts("malformed"):
        response = call(app, token, [raw_proof(es256_header(**header), proof_claims(token, **changes))])
    assert _refusal(response) == refused_proof(message)


def test_a_nonce_that_is_not_ascii_is_refused_as_malformed_with_server_nonces_on(stub_issuer, redis):
    app = app_for(stub_issuer, redis, PUBLIC_ORIGINS="http://localhost", DPOP_NONCE="on")
    token = bound_token(stub_issuer)
    sent = raw_proof(es256_header(), proof_claims(token, nonce="nönce"))
    assert _refusal(call(app, token, [sent])) == refused_proof("the DPoP proof's nonce is not ASCII")


def test_a_token_bound_to_a_thumbprint_that_is_not_ascii_is_refused_not_a_500(stub_issuer, redis):
    app = app_for(stub_issuer, redis, PUBLIC_ORIGINS="http://localhost")
    token = stub_issuer.sign(stub_issuer.access_claims(cnf={"jkt": "thümbprint"}))
    message = "the DPoP proof is signed with a key the token is not bound to (jkt)"
    assert _refusal(call(app, token, [proof(token)])) == refused_proof(message)


# ---------------------------------------------------------------- proof ids: per key, for the window, bounded


def test_one_keys_predictable_jti_never_blocks_another_keys_proof(stub_issuer, redis):
    app = app_for(stub_issuer, redis, PUBLIC_ORIGINS="http://localhost")
    mine, theirs = bound_token(stub_issuer, KEY), bound_token(stub_issuer, OTHER_KEY)
    assert call(app, theirs, [proof(theirs, key=OTHER_KEY, jti="proof-1")]).status_code == 200
    assert call(app, mine, [proof(mine, jti="proof-1")]).status_code == 200  # before: "already used"
    replayed = call(app, mine, [proof(mine, jti="proof-1")])
    assert _refusal(replayed) == refused_proof("this DPoP proof was already used (jti)")


@pytest.mark.parametrize("age", [0, 50, -30], ids=["new", "50 s old", "30 s ahead"])
def test_a_proof_id_is_kept_only_while_its_proof_could_be_accepted(stub_issuer, redis, age):
    app = app_for(stub_issuer, redis, PUBLIC_ORIGINS="http://localhost")
    token = bound_token(stub_issuer)
    iat = int(time.time()) - age
    assert call(app, token, [proof(token, iat=iat)]).status_code == 200
    [(_, until)] = proof_ids(redis).items()
    assert until == iat + 60 + 5  # the iat window, and 5 s for instances whose clocks differ
    [name] = [name for name in redis.scan_iter("*dpop-jti:*")]
    assert 0 < redis.ttl(name) <= 65 - age  # before: 180 s for every proof


def test_beyond_the_keys_bound_a_proof_gets_429_with_retry_after_and_nothing_is_stored(stub_issuer, redis):
    app = app_for(stub_issuer, redis, PUBLIC_ORIGINS="http://localhost", RATE_LIMIT_DPOP_PROOFS="3 per minute")
    token, other = bound_token(stub_issuer), bound_token(stub_issuer, OTHER_KEY)
    assert [call(app, token, [proof(token)]).status_code for _ in range(3)] == [200] * 3
    capture = LineCapture().attach("audit")
    try:
        refused = call(app, token, [proof(token)])
    finally:
        capture.detach("audit")
    assert (refused.status_code, refused.json["error"]) == (429, {"code": "too_many_requests", "message": TOO_MANY})
    assert 0 < int(refused.headers["Retry-After"]) <= 60
    assert len(proof_ids(redis)) == 3
    assert [json.loads(line)["reason"] for line in capture.lines] == ["dpop_proofs"]
    assert call(app, other, [proof(other, key=OTHER_KEY)]).status_code == 200  # every key has a bound of its own


def test_a_replayed_proof_spends_nothing_of_its_keys_bound(stub_issuer, redis):
    app = app_for(stub_issuer, redis, PUBLIC_ORIGINS="http://localhost", RATE_LIMIT_DPOP_PROOFS="2 per minute")
    token = bound_token(stub_issuer)
    captured = proof(token)
    assert call(app, token, [captured]).status_code == 200
    assert [call(app, token, [captured]).status_code for _ in range(5)] == [401] * 5
    assert call(app, token, [proof(token)]).status_code == 200  # the owner's second proof of the window
    assert call(app, token, [proof(token)]).status_code == 429


def test_the_proof_bound_is_600_a_minute_unless_set():
    assert Config(app_env("http://issuer.invalid")).RATE_LIMIT_DPOP_PROOFS == "600 per minute"
    with pytest.raises(ConfigError, match="RATE_LIMIT_DPOP_PROOFS must be"):
        Config(app_env("http://issuer.invalid", RATE_LIMIT_DPOP_PROOFS="lots"))


# ---------------------------------------------------------------- token_type DPoP without a key


@pytest.fixture
def introspecting(key):
    issuer = IntrospectingIssuer(key)
    yield issuer
    issuer.stop()


@pytest.mark.parametrize(
    ("changes", "reason"),
    [
        ({"token_type": "DPoP"}, "the access token is a DPoP token bound to no key (cnf.jkt)"),
        ({"token_type": "dpop"}, "the access token is a DPoP token bound to no key (cnf.jkt)"),
        ({"token_type": "DPoP", "cnf": {}}, "the access token is bound to a key in a way this API cannot check"),
        (
            {"token_type": "DPoP", "cnf": {"jkt": ""}},
            "the access token is bound to a key in a way this API cannot check",
        ),
    ],
    ids=["no cnf", "lower-case, no cnf", "cnf without jkt", "an empty jkt"],
)
def test_an_answer_saying_dpop_without_a_usable_key_is_refused_never_taken_as_bearer(introspecting, changes, reason):
    introspecting.changes = changes
    client = apps.introspecting_app(introspecting.issuer).test_client()
    with refusal_reasons() as reasons:
        response = client.get(PROFILE, headers={"Authorization": f"Bearer opaque-{secrets.token_hex(4)}"})
    assert (response.status_code, response.json["error"]) == (401, {"code": "invalid_token", "message": REFUSED})
    assert reasons == [reason]


def _refusal(response) -> tuple:
    dpop = [value for value in response.headers.getlist("WWW-Authenticate") if value.startswith("DPoP")]
    return response.status_code, response.json["error"]["code"], response.json["error"]["message"], dpop
