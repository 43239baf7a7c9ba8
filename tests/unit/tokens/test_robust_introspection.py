"""Introspection mode under abuse and with providers that leave `sub` out (issue 19, points 2 and 4),
against a stub RFC 7662 endpoint with a userinfo endpoint, over fakeredis: one body for every refused
token (the reason in the log), refusals remembered, provider calls for unknown tokens bounded per
client and in total, and the subject asked at userinfo when an answer names none."""

import base64
import hashlib
import json
import socket
import time

import fakeredis
import pytest
from prometheus_client import REGISTRY

from app import metrics
from app.challenges import SubjectUnknown
from app.errors import TokenChecksExhausted, TooManyTokenChecks
from app.extensions import services
from app.store.keys import Keys
from app.store.profile_record import Profile
from app.store.token_checks import TokenChecks
from app.tokens import introspection
from app.tokens.introspection import REFUSED
from config import Config, ConfigError
from tests.helpers.apps import introspecting_app
from tests.helpers.clock import FakeClock, finishes_within
from tests.helpers.refusals import refusal_reasons
from tests.helpers.settings import app_env

from .test_introspection import IntrospectingIssuer

NO_SUBJECT = SubjectUnknown("").message
CHALLENGE = f'Bearer realm="profile-poke", error="invalid_token", error_description="{REFUSED}"'


class UserinfoIssuer(IntrospectingIssuer):
    """The introspecting stub with a userinfo endpoint answering `self.userinfo` (status, body)."""

    def __init__(self, key):
        super().__init__(key)
        self.userinfo_endpoint: str | None = f"{self.issuer}/userinfo"
        self.userinfo = (200, {"sub": "user-sub-1", "preferred_username": "alice", "name": "Alice"})
        self.bearers: list[str] = []
        self.accepts: list[str] = []

    def discovery(self) -> dict:
        endpoint = {"userinfo_endpoint": self.userinfo_endpoint} if self.userinfo_endpoint else {}
        return {**super().discovery(), **endpoint}

    def answer(self, method, path, params, headers):
        if method == "GET" and path.endswith("/userinfo"):
            self.fetches["userinfo"] += 1
            self.bearers.append(headers.get("Authorization"))
            self.accepts.append(headers.get("Accept"))
            return self.userinfo[0], {}, self.userinfo[1]
        return super().answer(method, path, params, headers)


@pytest.fixture
def stub(key):
    issuer = UserinfoIssuer(key)
    yield issuer
    issuer.stop()


@pytest.fixture
def reasons():
    with refusal_reasons() as logged:
        yield logged


def client_for(stub, **env):
    return introspecting_app(stub.issuer, **env).test_client()


def read(client, token="opaque-token-1", address="192.0.2.1", path="/api/v1/me/profile"):
    return client.get(path, headers={"Authorization": f"Bearer {token}"}, environ_base={"REMOTE_ADDR": address})


def calls(stub) -> tuple[int, int]:
    return stub.fetches["introspection"], stub.fetches["userinfo"]


# ---------------------------------------------------------------- one body for every refusal


@pytest.mark.parametrize(
    ("shape", "reason"),
    [
        ({"active": False}, "the access token is not active"),
        ({"changes": {"iss": "https://evil.example"}}, "the access token has the wrong issuer"),
        ({"changes": {"aud": "another-api"}}, "the access token is not meant for this API"),
        ({"changes": {"token_type": "refresh_token"}}, "the token is not an access token"),
        ({"changes": {"scope": 42}}, "the access token's scope is malformed"),
        (
            {"failure": (400, {"error": "unsupported_token_type"})},
            "the access token is not one the provider can introspect",
        ),
        ({"token": "t" * 8193}, "the access token is too large"),
    ],
    ids=[
        "inactive",
        "another issuer",
        "another audience",
        "a refresh token",
        "a bad scope",
        "not introspectable",
        "too large",
    ],
)
def test_every_refused_token_gets_one_body_and_one_challenge_while_the_log_says_why(stub, reasons, shape, reason):
    stub.active = shape.get("active", True)
    stub.changes = shape.get("changes", {})
    stub.failure = shape.get("failure")
    response = read(client_for(stub), shape.get("token", "opaque-token-1"))
    assert response.status_code == 401
    assert response.json == {"error": {"code": "invalid_token", "message": REFUSED}}
    assert response.headers["WWW-Authenticate"] == CHALLENGE
    assert reasons == [reason]


def test_the_refusal_log_line_never_holds_the_token(stub, reasons):
    stub.active = False
    read(client_for(stub), "a-secret-opaque-token")
    assert reasons and not any("a-secret-opaque-token" in reason for reason in reasons)


# ---------------------------------------------------------------- refusals remembered


def test_a_refused_token_asked_again_within_the_refusal_ttl_costs_no_provider_call(stub, monkeypatch, reasons):
    monkeypatch.setattr(introspection, "time", clock := FakeClock())
    client = client_for(stub, INTROSPECTION_REFUSAL_TTL="30")
    stub.active = False
    first, again = read(client, "junk-1"), None
    clock.advance(29)
    again = read(client, "junk-1")
    assert (first.status_code, again.status_code) == (401, 401)
    assert again.json == first.json and again.headers["WWW-Authenticate"] == CHALLENGE
    assert calls(stub) == (1, 0)
    clock.advance(1.5)  # the refusal is forgotten: a token the provider revives would work again
    stub.active = True
    assert read(client, "junk-1").status_code == 200
    assert calls(stub) == (2, 0)


def test_refusals_are_remembered_by_the_tokens_hash_never_the_token(stub):
    client = client_for(stub)
    stub.active = False
    read(client, "junk-token-kept-by-hash")
    services = client.application.extensions["profile_poke"]
    digest = hashlib.sha256(b"junk-token-kept-by-hash").digest()
    name = base64.urlsafe_b64encode(digest).rstrip(b"=").decode()
    assert list(services.access_tokens._answers._refusals._entries) == [name]  # this process's memory
    shared = {key: services.store.redis.get(key) for key in services.store.redis.scan_iter("*introspection:*")}
    assert list(shared) == [f"{services.store.keys.prefix}introspection:{name}".encode()]  # every instance's
    assert b"junk-token" not in b"".join(shared.values())


def test_an_outage_is_never_remembered_as_a_refusal(stub):
    client = client_for(stub)
    stub.failure = (500, {})
    assert read(client).status_code == 503
    stub.failure = None
    assert read(client).status_code == 200
    assert calls(stub) == (2, 0)


# ---------------------------------------------------------------- provider calls bounded


def test_unknown_tokens_from_one_address_beyond_its_bound_get_429_with_retry_after(stub):
    client = client_for(stub, RATE_LIMIT_INTROSPECTION="3 per minute")
    stub.active = False
    statuses = [read(client, f"junk-{n}").status_code for n in range(10)]
    assert statuses == [401] * 3 + [429] * 7
    assert calls(stub) == (3, 0)
    refused = read(client, "junk-10")
    assert refused.json["error"] == {
        "code": "too_many_requests",
        "message": "too many unknown access tokens from this address; try again later",
    }
    assert 0 < int(refused.headers["Retry-After"]) <= 60


def test_a_flooding_address_leaves_other_addresses_new_tokens_alone(stub):
    client = client_for(stub, RATE_LIMIT_INTROSPECTION="3 per minute")
    stub.active = False
    assert [read(client, f"junk-{n}").status_code for n in range(6)][-1] == 429
    stub.active = True
    assert read(client, "a-valid-token", address="198.51.100.7").status_code == 200


def test_unknown_tokens_sent_with_the_dpop_scheme_spend_the_same_bound(stub):
    client = client_for(stub, RATE_LIMIT_INTROSPECTION="2 per minute")
    stub.active = False
    dpop = [{"Authorization": f"DPoP junk-{n}"} for n in range(3)]
    sent = [client.get("/api/v1/me/profile", headers=h, environ_base={"REMOTE_ADDR": "192.0.2.1"}) for h in dpop]
    assert [response.status_code for response in sent] == [401, 401, 429]
    assert sent[-1].json["error"]["message"] == "too many unknown access tokens from this address; try again later"
    assert calls(stub) == (2, 0)


def test_a_known_token_costs_no_call_and_is_never_bounded(stub):
    client = client_for(stub, RATE_LIMIT_INTROSPECTION="2 per minute")
    assert read(client, "valid").status_code == 200
    stub.active = False
    assert [read(client, f"junk-{n}").status_code for n in range(3)] == [401, 429, 429]
    assert read(client, "valid").status_code == 200  # remembered: no provider call, no bound
    assert read(client, "junk-0").status_code == 401  # a remembered refusal is no provider call either
    assert calls(stub) == (2, 0)


def test_beyond_the_total_bound_unknown_tokens_get_503_with_retry_after(stub):
    client = client_for(stub, RATE_LIMIT_INTROSPECTION="2 per minute", RATE_LIMIT_INTROSPECTION_TOTAL="3 per minute")
    stub.active = False
    assert [read(client, f"a-{n}", address="192.0.2.1").status_code for n in range(2)] == [401, 401]
    assert read(client, "b-0", address="192.0.2.2").status_code == 401
    spent = read(client, "b-1", address="192.0.2.2")
    assert spent.status_code == 503
    assert spent.json["error"] == {"code": "unavailable", "message": "the identity provider is busy; try again later"}
    assert 0 < int(spent.headers["Retry-After"]) <= 60
    assert calls(stub) == (3, 0)


def test_an_address_beyond_its_own_bound_spends_none_of_the_total(stub):
    client = client_for(stub, RATE_LIMIT_INTROSPECTION="2 per minute", RATE_LIMIT_INTROSPECTION_TOTAL="4 per minute")
    stub.active = False
    assert [read(client, f"a-{n}").status_code for n in range(20)].count(401) == 2
    assert [read(client, f"b-{n}", address="192.0.2.9").status_code for n in range(2)] == [401, 401]


def test_the_addresses_of_one_ipv6_64_share_one_bound(stub):
    client = client_for(stub, RATE_LIMIT_INTROSPECTION="2 per minute")
    stub.active = False
    addresses = ["2001:db8:1:2::1", "2001:db8:1:2::2", "2001:db8:1:2:ffff::3"]
    assert [read(client, f"junk-{n}", address=a).status_code for n, a in enumerate(addresses)] == [401, 401, 429]
    assert read(client, "junk-x", address="2001:db8:1:3::1").status_code == 401  # another /64


def test_token_checks_count_in_fixed_windows_that_end():
    redis = fakeredis.FakeRedis()
    checks = TokenChecks(
        redis, Keys("t:"), per_client="2 per second", per_network="50 per second", total="100 per second"
    )
    checks.admit("192.0.2.1")
    checks.admit("192.0.2.1")
    with pytest.raises(TooManyTokenChecks) as refused:
        checks.admit("192.0.2.1")
    assert refused.value.headers() == {"Retry-After": "1"}
    assert 0 < redis.pttl("t:token-checks:192.0.2.1") <= 1000
    time.sleep(1.1)
    checks.admit("192.0.2.1")  # a new window


def test_a_spent_pool_about_to_renew_asks_for_a_retry_after_one_second():
    redis = fakeredis.FakeRedis()
    redis.set(Keys("t:").token_checks(), 1_000, px=900)  # spent, and its window ends within the second
    checks = TokenChecks(
        redis, Keys("t:"), per_client="2 per minute", per_network="50 per minute", total="10 per minute"
    )
    checks.admit("192.0.2.1")
    checks.admit("192.0.2.2")  # the network's share, what one client may spend, is still served
    with pytest.raises(TokenChecksExhausted) as refused:
        checks.admit("192.0.2.3")
    assert refused.value.headers() == {"Retry-After": "1"}


def test_a_counter_that_lost_its_ttl_gets_one_again():
    redis = fakeredis.FakeRedis()
    redis.set("t:token-checks:192.0.2.1", 5)  # no TTL: it must not count forever
    TokenChecks(
        redis, Keys("t:"), per_client="30 per minute", per_network="60 per minute", total="600 per minute"
    ).admit("192.0.2.1")
    assert 0 < redis.ttl("t:token-checks:192.0.2.1") <= 60


@pytest.mark.parametrize(
    ("settings", "named"),
    [
        ({"RATE_LIMIT_INTROSPECTION": "700 per minute"}, "RATE_LIMIT_INTROSPECTION must not allow more"),
        ({"RATE_LIMIT_INTROSPECTION": "lots"}, "RATE_LIMIT_INTROSPECTION must be a rate limit"),
        ({"RATE_LIMIT_INTROSPECTION_TOTAL": "0 per minute"}, "RATE_LIMIT_INTROSPECTION_TOTAL must be one rate"),
        ({"RATE_LIMIT_INTROSPECTION": "5/second;30/minute"}, "RATE_LIMIT_INTROSPECTION must be one rate"),
        ({"INTROSPECTION_REFUSAL_TTL": "-1"}, "INTROSPECTION_REFUSAL_TTL must not be negative"),
    ],
)
def test_bounds_that_cannot_work_stop_start_up_naming_the_setting(settings, named):
    with pytest.raises(ConfigError, match=named):
        Config(app_env("http://issuer.invalid", **settings))


def test_the_default_bounds_are_30_a_minute_per_client_and_600_in_total():
    config = Config(app_env("http://issuer.invalid"))
    assert (config.RATE_LIMIT_INTROSPECTION, config.RATE_LIMIT_INTROSPECTION_TOTAL) == (
        "30 per minute",
        "600 per minute",
    )
    assert config.INTROSPECTION_REFUSAL_TTL == 30


# ---------------------------------------------------------------- no `sub`: userinfo


def test_an_answer_without_sub_takes_the_subject_from_userinfo_once_per_token(stub):
    stub.changes = {"sub": None}
    client = client_for(stub)
    first = read(client)
    assert first.status_code == 200, first.json
    assert first.json["data"]["handle"] == "@alice"
    assert read(client).status_code == 200
    assert calls(stub) == (1, 1)  # cached with the answer
    assert stub.bearers == ["Bearer opaque-token-1"]


def test_userinfo_gives_only_who_the_user_is_never_scopes_audience_or_client(stub):
    stub.changes = {"sub": None, "scope": "svc:interact.poke"}
    stub.userinfo = (200, {"sub": "user-sub-1", "scope": "svc:profile.private", "aud": "x", "client_id": "y"})
    response = read(client_for(stub))
    assert (response.status_code, response.json["error"]["code"]) == (403, "insufficient_scope")


@pytest.mark.parametrize(
    ("answer", "userinfo"),
    [
        ({"sub": None}, {"sub": "sub-of-a-new-user", "preferred_username": "carol"}),
        ({"sub": None, "preferred_username": "carol"}, {"sub": "sub-of-a-new-user"}),
    ],
    ids=["userinfo gives the username the answer lacks", "the answer keeps the username userinfo lacks"],
)
def test_the_username_comes_from_whichever_of_answer_and_userinfo_names_it(stub, answer, userinfo):
    stub.changes = answer
    stub.userinfo = (200, userinfo)
    client = client_for(stub, LINK_UNCLAIMED_PROFILES="true")  # carol's profile is linked by username
    with client.application.app_context():
        services().store.profiles.put(Profile("carol", "@carol", "Carol"))
    response = read(client)
    assert response.status_code == 200, response.json
    assert response.json["data"]["handle"] == "@carol"


def test_an_answer_naming_no_client_is_no_users_token_and_never_asks_userinfo(stub):
    stub.changes = {"client_id": None}
    client = client_for(stub)
    response = read(client)
    assert (response.status_code, response.json["error"]["message"]) == (403, "a user-delegated token is required")
    stub.changes = {"client_id": None, "sub": None}
    response = read(client, "opaque-token-2")
    assert (response.status_code, response.json["error"]["message"]) == (401, REFUSED)
    assert calls(stub) == (2, 0)


def test_an_app_tokens_answer_without_sub_never_asks_userinfo(stub):
    stub.changes = {"sub": None, "client_id": "reporting-service"}
    client = client_for(stub)
    response = read(client)
    assert (response.status_code, response.json["error"]["message"]) == (403, "a user-delegated token is required")
    assert read(client, path="/api/v1/users/alice").status_code == 200
    assert calls(stub) == (1, 0)


def test_an_okta_answer_without_its_user_id_takes_it_from_userinfos_sub(stub):
    stub.changes = {"sub": "alice@example.com", "scope": "svc:profile.private"}
    stub.userinfo = (200, {"sub": "user-sub-1", "email": "alice@example.com"})
    response = read(client_for(stub, OIDC_PROVIDER_PROFILE="okta"))
    assert response.status_code == 200, response.json
    assert calls(stub) == (1, 1)


@pytest.mark.parametrize(
    ("userinfo", "reason"),
    [
        ((401, {"error": "invalid_token"}), "userinfo answered 401"),
        ((403, {"error": "insufficient_scope"}), "userinfo answered 403"),
        ((200, {"preferred_username": "alice"}), "userinfo names no sub"),
        ((200, {"sub": ""}), "userinfo names no sub"),
        ((200, ["sub", "user-sub-1"]), "userinfo answered no JSON object"),
        ((200, {"sub": "user-sub-1", "preferred_username": "mallory"}), "userinfo names preferred_username other"),
        (None, "discovery lists no userinfo_endpoint"),
    ],
    ids=["401", "403", "no sub", "empty sub", "a list", "another username", "no endpoint"],
)
def test_a_token_neither_introspection_nor_userinfo_names_is_401_saying_so(stub, reasons, userinfo, reason):
    stub.changes = {"sub": None, "preferred_username": "alice"}
    if userinfo is None:
        stub.userinfo_endpoint = None
    else:
        stub.userinfo = userinfo
    client = client_for(stub)
    response = read(client)
    assert response.status_code == 401
    assert response.json["error"] == {"code": "invalid_token", "message": NO_SUBJECT}
    assert [logged.startswith(reason) for logged in reasons] == [True]
    assert read(client).json["error"]["message"] == NO_SUBJECT
    assert stub.fetches["introspection"] == 1  # remembered like any refusal


@pytest.mark.parametrize("status", [500, 502])
def test_a_userinfo_failing_with_a_5xx_is_503_and_never_remembered(stub, status):
    stub.changes = {"sub": None}
    stub.userinfo = (status, {})
    client = client_for(stub)
    response = read(client)
    assert (response.status_code, response.json["error"]["code"]) == (503, "unavailable")
    stub.userinfo = (200, {"sub": "user-sub-1"})
    assert read(client).status_code == 200
    assert calls(stub) == (2, 2)


def logged(lines) -> list[str]:
    return [json.loads(line)["message"] for line in lines.lines]


def test_an_unreachable_userinfo_is_503_and_the_log_names_it(stub, audit_lines):
    stub.changes = {"sub": None}
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        stub.userinfo_endpoint = f"http://127.0.0.1:{sock.getsockname()[1]}/userinfo"
    response = read(client_for(stub, IDP_TIMEOUT="0.5"))
    assert (response.status_code, response.json["error"]["code"]) == (503, "unavailable")
    assert logged(audit_lines) == ["identity provider unavailable: userinfo endpoint: ConnectionError"]


def test_a_userinfo_that_never_answers_is_503_after_the_timeout(stub, audit_lines):
    stub.changes = {"sub": None}
    with socket.socket() as silent:  # accepts connections (the kernel's backlog) and never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        stub.userinfo_endpoint = f"http://127.0.0.1:{silent.getsockname()[1]}/userinfo"
        client = client_for(stub, IDP_TIMEOUT="0.3")
        # Bounded here: a call without the timeout would hang until mutmut's own limit.
        response = finishes_within(5, lambda: read(client))
    assert (response.status_code, response.json["error"]["code"]) == (503, "unavailable")
    assert logged(audit_lines) == ["identity provider unavailable: userinfo endpoint: ReadTimeout"]


def test_userinfo_is_asked_for_json_and_counted_as_a_userinfo_call(stub, monkeypatch):
    monkeypatch.setattr(metrics, "_enabled", True)  # what a METRICS_TOKEN turns on, for this test only

    def calls_counted() -> float:
        return REGISTRY.get_sample_value("pp_idp_requests_total", {"endpoint": "userinfo", "outcome": "ok"}) or 0.0

    before = calls_counted()
    stub.changes = {"sub": None}
    assert read(client_for(stub)).status_code == 200
    assert stub.accepts == ["application/json"]
    assert calls_counted() - before == 1


def test_a_username_claim_that_is_not_a_string_names_no_one(stub):
    stub.changes = {"sub": None, "preferred_username": "alice"}
    stub.userinfo = (200, {"sub": "user-sub-1", "preferred_username": 42})  # not a name that could differ
    response = read(client_for(stub))
    assert response.status_code == 200, response.json
    assert response.json["data"]["handle"] == "@alice"  # found by its subject link, not by a name
