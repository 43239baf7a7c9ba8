"""Browser sign-in conformance, modelled on the OpenID Foundation's relying-party certification tests:
login, the stub provider's authorization and token endpoints, and the callback, with fakeredis."""

import hashlib
import json
import socket
import time
from types import SimpleNamespace
from urllib.parse import parse_qsl, urlencode, urlsplit

import pytest
import requests

from app import create_app
from app.extensions import services
from app.store.profile_record import Profile
from config import Config
from tests.helpers.pages import error_page_message
from tests.helpers.settings import CSRF, app_env
from tests.helpers.stub_issuer import b64url
from tests.helpers.stub_op import StubOP

CLIENT_ID = "profile-poke-web"
HOUR_AGO = int(time.time()) - 3600


@pytest.fixture(scope="module")
def keys():
    """RSA keys shared by the module (each takes a while to make): the provider's, its successor, a forgery."""
    return SimpleNamespace(
        first=StubOP.new_key("op-key-1"), second=StubOP.new_key("op-key-2"), forged=StubOP.new_key("op-key-1")
    )


@pytest.fixture
def op(keys):
    stub = StubOP(keys.first)
    yield stub
    stub.stop()


def make_app(op, redis, **overrides):
    """An app on fakeredis that trusts the stub provider, with Alice's profile linked to her subject."""
    app = create_app(Config(app_env(op.issuer, **overrides)), redis=redis)
    with app.app_context():
        services().store.profiles.put(Profile("alice", "@alice", "Alice Liddell", sub="user-sub-1"))
    return app


@pytest.fixture
def app(op, fake_redis):
    return make_app(op, fake_redis)


def authorize(client) -> str:
    """GET /auth/login, then the provider's authorization endpoint: the callback URL it sends the browser to."""
    login = client.get("/auth/login")
    assert login.status_code == 302
    response = requests.get(login.headers["Location"], allow_redirects=False, timeout=5)
    assert response.status_code == 302
    return response.headers["Location"]


def callback(client, url: str):
    parts = urlsplit(url)
    return client.get(f"{parts.path}?{parts.query}")


def sign_in(client):
    """A whole browser-style sign-in; the app's answer to the callback."""
    return callback(client, authorize(client))


def assert_no_session(client, redis):
    assert client.get("/auth/session").json == {"authenticated": False}
    assert redis.keys("*:tokens:*") == redis.keys("*:session:*") == []


def id_tokens(make):
    """Arrange for the provider to make its ID tokens with make(op, keys, default_claims)."""

    def arrange(op, keys):
        op.id_token = lambda claims: make(op, keys, claims)

    return arrange


def claims(**changes):
    """Arrange for ID tokens with these changes to the default claims (None leaves a claim out)."""
    return id_tokens(lambda op, keys, claims: op.sign_id({**claims, **changes}))


def token_failure(status: int, body: dict):
    """Arrange for the token endpoint to answer every request with `status` and `body`."""
    return lambda op, keys: setattr(op, "token_failure", (status, body))


def several_keys_and_no_kid(op, keys):
    op.published = [keys.first, keys.second]
    op.id_token = lambda claims: op.sign_id(claims, header={"kid": None})


def unreachable_token_endpoint(op, keys):
    with socket.socket() as probe:  # nobody listens on the port once the probe is closed
        probe.bind(("127.0.0.1", 0))
        op.token_endpoint = f"http://127.0.0.1:{probe.getsockname()[1]}/token"


def no_token_endpoint(op, keys):
    listed = op.discovery()
    op.discovery = lambda: {name: url for name, url in listed.items() if name != "token_endpoint"}


REFUSED = "the ID token was refused: "

# case -> (how the provider misbehaves, the app's status, the message on the app's error page)
NONCONFORMING = {
    "invalid iss": (claims(iss="https://evil.example/realms/stub"), 502, REFUSED + "wrong issuer"),
    "invalid aud": (claims(aud="another-client"), 502, REFUSED + "not issued to this client"),
    "invalid signature (published kid, other key)": (
        id_tokens(lambda op, keys, claims: op.sign_id(claims, key=keys.forged)),
        502, REFUSED + "the token's signature is invalid",
    ),
    "alg none": (
        id_tokens(lambda op, keys, claims: op.unsigned(claims, {"alg": "none", "kid": op.key.kid})),
        502, REFUSED + "the token's algorithm is not accepted",
    ),
    "mismatched nonce": (claims(nonce="another-nonce"), 502, REFUSED + "nonce mismatch"),
    "missing iat": (claims(iat=None), 502, REFUSED + "missing or future iat"),
    "missing sub": (claims(sub=None), 502, REFUSED + "no subject"),
    "expired": (claims(exp=HOUR_AGO, iat=HOUR_AGO - 300), 502, REFUSED + "expired"),
    "azp not the client with several audiences": (
        claims(aud=[CLIENT_ID, "profile-poke-api"], azp="profile-poke-api"), 502, REFUSED + "wrong authorized party"
    ),
    "HS256 signed with the RSA public key": (
        id_tokens(lambda op, keys, claims: op.unsigned(claims, {"alg": "HS256", "kid": op.key.kid})),
        502, REFUSED + "the token's algorithm is not accepted",
    ),
    "no kid while the JWKS has several keys": (
        several_keys_and_no_kid, 502, REFUSED + "the token was not signed by a known key"
    ),
    "missing id_token": (id_tokens(lambda *_: None), 502, "the identity provider sent no ID token"),
    "token endpoint answers invalid_grant": (
        token_failure(400, {"error": "invalid_grant"}), 400, "the sign-in could not be completed; please sign in again"
    ),
    "token endpoint answers 500": (
        token_failure(500, {"error": "server_error"}), 503, "the identity provider is unavailable"
    ),
    "token endpoint unreachable": (unreachable_token_endpoint, 503, "the identity provider is unavailable"),
    # Only a 2xx carries tokens: Authlib alone would sign in with these.
    "token endpoint answers 300 with tokens": (
        lambda op, keys: setattr(op, "token_status", 300), 503, "the identity provider is unavailable"
    ),
}  # fmt: skip


# case -> the reason of its signin.failed audit event (an outage writes none)
AUDITED = {case: "id_token_refused" for case, row in NONCONFORMING.items() if row[2].startswith(REFUSED)}
AUDITED.update({"missing id_token": "no_id_token", "token endpoint answers invalid_grant": "code_refused"})


@pytest.mark.parametrize("case", list(NONCONFORMING))
def test_a_nonconforming_provider_leaves_no_session_and_a_clear_error_page(
    op, app, keys, fake_redis, audit_lines, case
):
    arrange, status, message = NONCONFORMING[case]
    arrange(op, keys)
    client = app.test_client()
    response = sign_in(client)
    assert (response.status_code, error_page_message(response)) == (status, message)
    assert [event.get("reason") for event in audit_lines.events("signin.failed")] == (
        [AUDITED[case]] if case in AUDITED else []
    )
    assert_no_session(client, fake_redis)


# case -> (how the code exchange fails, the line the log says it with, the signin.failed reason or None)
EXCHANGE_FAILURES = {
    "invalid_grant": (
        token_failure(400, {"error": "invalid_grant", "error_description": "code already used"}),
        "code exchange refused: invalid_grant",
        "code_refused",
    ),
    "500": (
        token_failure(500, {"error": "server_error"}),
        "identity provider unavailable: token endpoint: HTTPError",
        None,
    ),
    "unreachable": (
        unreachable_token_endpoint,
        "identity provider unavailable: token endpoint: ConnectionError",
        None,
    ),
    "400 naming no error": (
        token_failure(400, {"message": "bad request"}),
        "identity provider unavailable: token endpoint answered 400",
        None,
    ),
    "no token endpoint": (no_token_endpoint, "identity provider unavailable: discovery lists no token_endpoint", None),
}


@pytest.mark.parametrize("case", list(EXCHANGE_FAILURES))
def test_a_failed_code_exchange_is_logged_with_the_providers_code_or_the_failure_and_audited(
    op, keys, fake_redis, audit_lines, case
):
    arrange, line, reason = EXCHANGE_FAILURES[case]
    arrange(op, keys)
    sign_in(make_app(op, fake_redis, LOG_LEVEL="INFO").test_client())  # the default: a refusal is an info line
    messages = [json.loads(entry)["message"] for entry in audit_lines.lines]
    assert line in messages
    assert not [message for message in messages if "code already used" in message]
    assert [event.get("reason") for event in audit_lines.events("signin.failed")] == ([reason] if reason else [])


def test_a_well_formed_sign_in_links_the_user_and_starts_a_session(app, op):
    client = app.test_client()
    response = sign_in(client)
    assert response.status_code == 302 and response.headers["Location"] == "/"
    session = client.get("/auth/session").json
    assert session["authenticated"] is True and session["user"] == "alice"
    assert client.get("/api/v1/me/profile", headers=CSRF).json["data"]["handle"] == "@alice"
    assert client.post("/auth/logout", headers=CSRF).json["logout_url"].startswith(f"{op.issuer}/logout?")


def test_an_id_token_without_kid_is_accepted_when_the_jwks_has_one_key(app, op):
    op.id_token = lambda claims: op.sign_id(claims, header={"kid": None})
    client = app.test_client()
    assert sign_in(client).status_code == 302
    assert client.get("/auth/session").json["authenticated"] is True


def test_a_signing_key_rotation_is_picked_up_without_a_restart(op, keys, fake_redis, clock):
    client = make_app(op, fake_redis, JWKS_REFETCH_INTERVAL="0.2").test_client()
    assert sign_in(client).status_code == 302
    assert op.fetches["jwks"] == 1
    op.key, op.published = keys.second, [keys.second]  # a new key with a new kid replaces the old one
    clock.advance(0.25)
    assert sign_in(client).status_code == 302
    assert client.get("/api/v1/me/profile", headers=CSRF).status_code == 200  # its access token, too
    assert op.fetches["jwks"] == 2


def test_the_code_goes_back_with_its_pkce_verifier_and_no_client_secret(app, op):
    assert sign_in(app.test_client()).status_code == 302
    [authorization], [token_request] = op.authorizations, op.token_requests
    assert authorization["code_challenge_method"] == "S256"
    verifier = token_request["code_verifier"]
    assert b64url(hashlib.sha256(verifier.encode()).digest()) == authorization["code_challenge"]
    assert token_request["client_id"] == CLIENT_ID
    assert "client_secret" not in token_request and token_request["authorization"] is None


def test_an_injected_code_is_refused_because_its_pkce_verifier_does_not_match(app, op, fake_redis):
    victim, attacker = app.test_client(), app.test_client()
    victim_callback = dict(parse_qsl(urlsplit(authorize(victim)).query))
    injected = dict(parse_qsl(urlsplit(authorize(attacker)).query))["code"]  # issued for the attacker's challenge
    response = victim.get(f"/auth/callback?{urlencode({**victim_callback, 'code': injected})}")
    assert (response.status_code, error_page_message(response)) == (
        400,
        "the sign-in could not be completed; please sign in again",
    )
    assert op.token_requests[-1]["code"] == injected  # the state matched: PKCE is what refused it
    assert_no_session(victim, fake_redis)


def test_a_callback_naming_another_issuer_is_refused_before_any_token_request(app, op, fake_redis, audit_lines):
    client = app.test_client()
    url = urlsplit(authorize(client))
    query = {**dict(parse_qsl(url.query)), "iss": "https://evil.example/realms/stub"}
    response = client.get(f"{url.path}?{urlencode(query)}")
    assert (response.status_code, error_page_message(response)) == (
        400,
        "the sign-in response came from another issuer",
    )
    assert [event.get("reason") for event in audit_lines.events("signin.failed")] == ["wrong_issuer"]
    assert op.fetches["token"] == 0
    assert_no_session(client, fake_redis)
