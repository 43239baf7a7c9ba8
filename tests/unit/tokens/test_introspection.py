"""Introspection mode's cache bound and outage handling, against a stub RFC 7662 endpoint: an answer
is kept no longer than the token's `exp` nor INTROSPECTION_CACHE_TTL, and an endpoint that cannot
answer is 503, never a 200 or a 401."""

import hashlib
import json
import socket
import time

import pytest
from joserfc import jws
from joserfc.jwk import ECKey
from prometheus_client import REGISTRY

from app import metrics
from app.tokens import introspection
from app.tokens.introspection import REFUSED
from tests.helpers.apps import introspecting_app
from tests.helpers.clock import FakeClock, finishes_within
from tests.helpers.refusals import refusal_reasons
from tests.helpers.stub_issuer import StubIssuer, b64url


class IntrospectingIssuer(StubIssuer):
    """The stub issuer with an introspection endpoint answering `self.answer_for(token)`."""

    def __init__(self, key):
        super().__init__(key)
        self.introspection_endpoint = f"{self.issuer}/introspect"
        self.active = True
        self.changes: dict = {}  # fields to change in an active answer (None leaves one out)
        self.failure: tuple[int, dict] | None = None  # status and body to answer with instead
        self.forms: list[dict] = []
        self.active_answer: dict | None = None  # an answer of another provider's shape, when set
        self.auth_methods: list[str] | None = None  # introspection_endpoint_auth_methods_supported, when set

    def discovery(self) -> dict:
        methods = {"introspection_endpoint_auth_methods_supported": self.auth_methods} if self.auth_methods else {}
        return {**super().discovery(), "introspection_endpoint": self.introspection_endpoint, **methods}

    def answer(self, method, path, params, headers):
        if method == "POST" and path.endswith("/introspect"):
            self.fetches["introspection"] += 1
            self.forms.append({**params, "authorization": headers.get("Authorization")})
            if self.failure:
                return self.failure[0], {}, self.failure[1]
            if not self.active:
                return 200, {}, {"active": False}
            claims = {
                "active": True,
                "iss": self.issuer,
                "aud": "profile-poke-api",
                "sub": "user-sub-1",
                "client_id": "profile-poke-web",
                "scope": "svc:profile.private",
                "exp": int(time.time()) + 300,
                "token_type": "Bearer",
            }
            claims = {**(self.active_answer or claims), **self.changes}
            return 200, {}, {name: value for name, value in claims.items() if value is not None}
        return super().answer(method, path, params, headers)


@pytest.fixture
def stub(key):
    issuer = IntrospectingIssuer(key)
    yield issuer
    issuer.stop()


def client_for(stub, **env):
    return introspecting_app(stub.issuer, **env).test_client()


def read(client, token="opaque-token-1"):
    return client.get("/api/v1/me/profile", headers={"Authorization": f"Bearer {token}"})


@pytest.fixture
def reasons():
    """The reasons logged for refused tokens (the client sees only REFUSED)."""
    with refusal_reasons() as logged:
        yield lambda: list(logged)


def test_answers_are_cached_no_longer_than_the_ttl(stub, monkeypatch, reasons):
    # The cache's clock is the test's: the second read comes within the TTL however slow the machine is.
    monkeypatch.setattr(introspection, "time", clock := FakeClock())
    client = client_for(stub, INTROSPECTION_CACHE_TTL="0.5")
    assert read(client).status_code == 200
    clock.advance(0.4)
    assert read(client).status_code == 200
    assert stub.fetches["introspection"] == 1
    stub.active = False  # revoked at the provider
    clock.advance(0.2)
    response = read(client)
    assert response.status_code == 401
    assert response.json["error"]["message"] == REFUSED
    assert reasons() == ["the access token is not active"]


def test_answers_are_cached_no_longer_than_the_token_lives(stub, monkeypatch):
    # The cache's clock is the test's: the token's last second ends when the test says, not after a wait.
    monkeypatch.setattr(introspection, "time", clock := FakeClock())
    stub.changes = {"exp": int(clock.time()) + 1}
    client = client_for(stub, INTROSPECTION_CACHE_TTL="60")
    assert read(client).status_code == 200
    stub.changes = {}
    clock.advance(1)
    assert read(client).status_code == 200
    assert stub.fetches["introspection"] == 2


def test_the_client_authenticates_with_http_basic_and_sends_the_token(stub):
    read(client_for(stub))
    [form] = stub.forms
    assert form["token"] == "opaque-token-1" and form["authorization"].startswith("Basic ")
    assert "client_secret" not in form


def test_an_unreachable_endpoint_is_503(stub):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        stub.introspection_endpoint = f"http://127.0.0.1:{sock.getsockname()[1]}/introspect"
    response = read(client_for(stub, IDP_TIMEOUT="0.5"))
    assert response.status_code == 503
    assert response.json["error"]["code"] == "unavailable"


def test_an_answer_for_another_audience_is_refused(stub, reasons):
    client = client_for(stub, API_AUDIENCE="another-api")
    response = read(client)
    assert response.status_code == 401
    assert response.json["error"]["message"] == REFUSED
    assert reasons() == ["the access token is not meant for this API"]


def test_an_okta_introspection_answer_gives_its_user_the_scopes_it_names(stub):
    now = int(time.time())
    # Okta's documented answer: RFC 7662 names (scope, client_id), not its access tokens' scp and cid.
    stub.active_answer = {
        "active": True,
        "scope": "openid svc:profile.private",
        "username": "alice@example.com",
        "exp": now + 300,
        "iat": now,
        "sub": "alice@example.com",
        "aud": "profile-poke-api",
        "iss": stub.issuer,
        "jti": "AT.okta-1",
        "token_type": "Bearer",
        "client_id": "profile-poke-web",
        "uid": "user-sub-1",
    }
    response = read(client_for(stub, OIDC_PROVIDER_PROFILE="okta"))
    assert response.status_code == 200, response.json
    assert response.json["data"]["handle"] == "@alice"


def refusal(response) -> tuple[int, str]:
    return response.status_code, response.json["error"]["message"]


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"iss": "https://evil.example/realms/stub"}, "the access token has the wrong issuer"),
        ({"aud": ["another-api", "a-third-api"]}, "the access token is not meant for this API"),
        ({"token_type": "refresh_token"}, "the token is not an access token"),
    ],
    ids=["another issuer", "an audience list without this API", "a refresh token"],
)
def test_an_active_answer_that_does_not_fit_is_refused_naming_why(stub, changes, message, reasons):
    stub.changes = changes
    assert refusal(read(client_for(stub))) == (401, REFUSED)
    assert reasons() == [message]  # the why goes to the log only


@pytest.mark.parametrize(
    "changes",
    [
        {"iss": None},
        {"aud": None},
        {"aud": ["another-api", "profile-poke-api"]},
        {"token_type": None},
        {"token_type": "access_token"},
    ],
    ids=["no iss", "no aud", "an audience list naming this API", "no token_type", "token_type access_token"],
)
def test_an_active_answer_may_leave_out_what_rfc_7662_makes_optional(stub, changes):
    stub.changes = changes
    assert read(client_for(stub)).status_code == 200


def test_a_400_about_the_token_is_a_401(stub, reasons):
    stub.failure = (400, {"error": "unsupported_token_type"})
    assert refusal(read(client_for(stub))) == (401, REFUSED)
    assert reasons() == ["the access token is not one the provider can introspect"]


@pytest.mark.parametrize("body", [{"error": "invalid_client"}, ["not", "an", "object"]])
def test_any_other_400_is_an_outage_not_a_bad_token(stub, body):
    stub.failure = (400, body)
    assert refusal(read(client_for(stub))) == (503, "the identity provider is unavailable")


def test_the_token_is_sent_with_the_access_token_hint(stub):
    read(client_for(stub))
    assert (stub.forms[0]["token"], stub.forms[0]["token_type_hint"]) == ("opaque-token-1", "access_token")


def test_a_provider_that_takes_only_client_secret_post_gets_the_credentials_in_the_form(stub):
    stub.auth_methods = ["client_secret_post"]
    assert read(client_for(stub)).status_code == 200
    [form] = stub.forms
    assert (form["client_id"], form["client_secret"], form["authorization"]) == ("api", "api-secret", None)


def test_different_tokens_are_introspected_and_cached_apart(stub):
    client = client_for(stub)
    assert read(client, "opaque-token-1").status_code == 200
    stub.active = False
    assert refusal(read(client, "opaque-token-2")) == (401, REFUSED)
    assert [form["token"] for form in stub.forms] == ["opaque-token-1", "opaque-token-2"]


def test_a_token_over_the_size_limit_is_refused_without_asking_the_provider(stub, reasons):
    assert refusal(read(client_for(stub), "t" * 8193)) == (401, REFUSED)
    assert reasons() == ["the access token is too large"]
    assert read(client_for(stub), "t" * 8192).status_code == 200
    assert [len(form["token"]) for form in stub.forms] == [8192]


def test_an_answer_without_exp_is_accepted(stub):
    stub.changes = {"exp": None}
    assert read(client_for(stub)).status_code == 200


def test_an_audience_that_only_contains_this_apis_name_is_refused(stub, reasons):
    stub.changes = {"aud": "profile-poke-api-v2"}
    assert refusal(read(client_for(stub))) == (401, REFUSED)
    assert reasons() == ["the access token is not meant for this API"]


def test_a_lowercase_bearer_token_type_is_accepted(stub):
    stub.changes = {"token_type": "bearer"}
    assert read(client_for(stub)).status_code == 200


@pytest.mark.parametrize("answer", [["active", True], {"active": "yes"}], ids=["a list", "active as text"])
def test_an_answer_that_is_not_rfc_7662_is_an_outage(stub, answer):
    stub.failure = (200, answer)
    assert refusal(read(client_for(stub))) == (503, "the identity provider is unavailable")


def test_an_endpoint_that_never_answers_is_an_outage_after_the_timeout(stub):
    with socket.socket() as silent:  # accepts connections (the kernel's backlog) and never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        stub.introspection_endpoint = f"http://127.0.0.1:{silent.getsockname()[1]}/introspect"
        client = client_for(stub, IDP_TIMEOUT="0.3")
        # Bounded here: a call without the timeout would hang until mutmut's own limit, a kill by timeout.
        assert finishes_within(3, lambda: read(client)).status_code == 503


def test_each_introspection_is_counted_as_a_provider_call(stub, monkeypatch):
    monkeypatch.setattr(metrics, "_enabled", True)  # what a METRICS_TOKEN turns on, for this test only
    labels = {"endpoint": "introspection", "outcome": "ok"}
    before = REGISTRY.get_sample_value("pp_idp_requests_total", labels) or 0.0
    assert read(client_for(stub)).status_code == 200
    assert REGISTRY.get_sample_value("pp_idp_requests_total", labels) - before == 1


def test_an_answer_naming_scopes_in_the_profiles_own_claim_is_read_from_it(stub):
    now = int(time.time())
    stub.active_answer = {
        "active": True,
        "scp": ["openid", "svc:profile.private"],
        "exp": now + 300,
        "sub": "alice@example.com",
        "aud": "profile-poke-api",
        "iss": stub.issuer,
        "client_id": "profile-poke-web",
        "uid": "user-sub-1",
    }
    assert read(client_for(stub, OIDC_PROVIDER_PROFILE="okta")).status_code == 200


def test_an_introspected_dpop_bound_token_works_with_its_proof_and_never_as_bearer(stub):
    key = ECKey.generate_key("P-256")
    stub.changes = {"token_type": "DPoP", "cnf": {"jkt": key.thumbprint()}}
    client = client_for(stub, PUBLIC_ORIGINS="http://localhost")
    token, url = "opaque-bound-token", "http://localhost/api/v1/me/profile"
    claims = {
        "jti": "p-1",
        "htm": "GET",
        "htu": url,
        "iat": int(time.time()),
        "ath": b64url(hashlib.sha256(token.encode()).digest()),
    }
    proof = jws.serialize_compact(
        {"typ": "dpop+jwt", "alg": "ES256", "jwk": key.as_dict(private=False)}, json.dumps(claims), key
    )
    bound = client.get("/api/v1/me/profile", headers={"Authorization": f"DPoP {token}", "DPoP": proof})
    assert bound.status_code == 200, bound.json
    as_bearer = read(client, token)
    assert (as_bearer.status_code, as_bearer.json["error"]["message"]) == (
        401,
        "a DPoP-bound access token must be sent with the DPoP scheme and a proof",
    )


@pytest.mark.parametrize("token_type", ["DPoP", "dpop", "DPOP"])
def test_an_introspected_dpop_token_type_without_cnf_is_refused_never_taken_as_bearer(stub, reasons, token_type):
    # RFC 9449 6.2: `token_type: DPoP` says the token is bound; an answer that names no key cannot be checked.
    stub.changes = {"token_type": token_type}
    assert refusal(read(client_for(stub))) == (401, REFUSED)
    assert reasons() == ["the access token is a DPoP token bound to no key (cnf.jkt)"]
