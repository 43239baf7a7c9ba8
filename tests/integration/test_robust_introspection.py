"""Introspection mode against the real dev provider and the real Redis (issue 19, points 2 and 4):
junk tokens cost bounded provider calls, counted at the provider (/__dev/stats); a flood from one
address leaves everyone else's tokens working; and a provider whose introspection answers name no
subject (IDP_INTROSPECTION_WITHOUT_SUB) still serves opaque user tokens, through its userinfo."""

import secrets

import pytest

from app.tokens.introspection import REFUSED
from tests.helpers.real_services import LOGIN_CLIENTS, OPAQUE_CLIENT, introspection_settings, start_own_idp
from tests.helpers.refusals import refusal_reasons

pytestmark = pytest.mark.integration
FLOODER, NEIGHBOUR = "203.0.113.66", "198.51.100.7"


@pytest.fixture(scope="session")
def subless_idp(workdir, idp):
    """A second dev provider whose introspection answers carry `username` and `client_id` but no `sub`."""
    server, provider = start_own_idp(workdir, idp.app_ports, IDP_INTROSPECTION_WITHOUT_SUB="1")
    yield provider
    server.stop()


@pytest.fixture
def introspecting_app(make_app, idp):
    def build(provider=None, **overrides):
        provider = provider or idp
        settings = introspection_settings(provider)
        return make_app(provider, **{**settings, **overrides})

    return build


def opaque_token(provider, username="alice") -> str:
    token = provider.user_tokens(username, client_id=OPAQUE_CLIENT)["access_token"]
    assert token.count(".") == 0
    return token


def read(client, token: str, address: str = FLOODER):
    return client.get(
        "/api/v1/me/profile", headers={"Authorization": f"Bearer {token}"}, environ_base={"REMOTE_ADDR": address}
    )


# ---------------------------------------------------------------- point 4: amplification


def test_fifty_junk_tokens_from_one_address_make_at_most_the_bounds_provider_calls(introspecting_app, idp):
    client = introspecting_app().test_client()  # the default bound: 30 a minute per address
    idp.reset_stats()
    responses = [read(client, f"junk-token-{n}") for n in range(50)]
    assert idp.stats()["introspection"] == 30  # before: 50
    assert [r.status_code for r in responses] == [401] * 30 + [429] * 20
    assert {r.json["error"]["message"] for r in responses[:30]} == {REFUSED}
    limited = responses[-1]
    assert limited.json["error"]["code"] == "too_many_requests"
    assert 0 < int(limited.headers["Retry-After"]) <= 60


def test_while_one_address_floods_another_addresses_valid_tokens_still_work(introspecting_app, idp):
    client = introspecting_app(RATE_LIMIT_INTROSPECTION="10 per minute").test_client()
    cached, fresh = opaque_token(idp, "alice"), opaque_token(idp, "bob")
    assert read(client, cached, NEIGHBOUR).status_code == 200
    statuses = []
    for n in range(50):
        statuses.append(read(client, f"junk-token-{n}").status_code)
        if n == 25:  # mid-flood: one token already known, one never seen
            assert read(client, cached, NEIGHBOUR).status_code == 200
            assert read(client, fresh, NEIGHBOUR).status_code == 200
    assert statuses.count(429) == 40 and 503 not in statuses
    assert read(client, cached, FLOODER).status_code == 200  # a known token costs no call: never bounded


def test_a_refused_token_asked_again_within_the_refusal_ttl_makes_no_provider_call(introspecting_app, idp):
    client = introspecting_app(INTROSPECTION_REFUSAL_TTL="60").test_client()
    idp.reset_stats()
    with refusal_reasons() as reasons:
        first, again = read(client, "no-such-token"), read(client, "no-such-token")
    assert idp.stats()["introspection"] == 1
    assert (first.status_code, first.json, first.headers["WWW-Authenticate"]) == (
        again.status_code,
        again.json,
        again.headers["WWW-Authenticate"],
    )
    assert first.json["error"] == {"code": "invalid_token", "message": REFUSED}
    assert reasons == ["the access token is not active"]  # logged once: the second answer came from memory


def test_the_total_bound_gives_503_with_retry_after(introspecting_app, idp):
    client = introspecting_app(
        RATE_LIMIT_INTROSPECTION="2 per minute", RATE_LIMIT_INTROSPECTION_TOTAL="3 per minute"
    ).test_client()
    idp.reset_stats()
    assert [read(client, f"a-{n}", "192.0.2.1").status_code for n in range(2)] == [401, 401]
    assert read(client, "b-0", "192.0.2.2").status_code == 401
    spent = read(client, "b-1", "192.0.2.2")
    assert spent.status_code == 503
    assert spent.json["error"] == {"code": "unavailable", "message": "the identity provider is busy; try again later"}
    assert 0 < int(spent.headers["Retry-After"]) <= 60
    assert idp.stats()["introspection"] == 3


def test_the_bound_holds_across_instances_sharing_the_redis(introspecting_app, idp):
    shared = {"REDIS_KEY_PREFIX": f"test-{secrets.token_hex(4)}:", "RATE_LIMIT_INTROSPECTION": "4 per minute"}
    first, second = (introspecting_app(**shared).test_client() for _ in range(2))
    idp.reset_stats()
    statuses = [read(client, f"junk-{n}-{i}").status_code for n in range(4) for i, client in enumerate((first, second))]
    assert statuses == [401] * 4 + [429] * 4
    assert idp.stats()["introspection"] == 4


def test_every_refused_token_gets_one_body_and_challenge_whatever_the_reason(introspecting_app, idp):
    client = introspecting_app().test_client()
    with refusal_reasons() as reasons:
        inactive = read(client, "no-such-token")
        jwt = read(client, idp.app_token())
        huge = read(client, "t" * 9000)
    for response in (jwt, huge):
        assert (response.status_code, response.json, response.headers["WWW-Authenticate"]) == (
            401,
            inactive.json,
            inactive.headers["WWW-Authenticate"],
        )
    assert reasons == [
        "the access token is not active",
        "the access token is not one the provider can introspect",
        "the access token is too large",
    ]


# ---------------------------------------------------------------- point 2: no `sub`


def test_an_opaque_user_token_reads_the_own_profile_when_introspection_names_no_subject(introspecting_app, subless_idp):
    client = introspecting_app(subless_idp).test_client()
    token = opaque_token(subless_idp)
    subless_idp.reset_stats()
    first = read(client, token)
    assert first.status_code == 200, first.json
    assert first.json["data"]["handle"] == "@alice"
    assert read(client, token).status_code == 200
    stats = subless_idp.stats()
    assert (stats["introspection"], stats["userinfo"]) == (1, 1)  # cached with the answer


def test_a_token_of_a_client_that_is_not_a_login_client_never_asks_userinfo(introspecting_app, subless_idp):
    client = introspecting_app(subless_idp, LOGIN_CLIENT_IDS=LOGIN_CLIENTS).test_client()
    token = opaque_token(subless_idp)
    subless_idp.reset_stats()
    response = read(client, token)
    assert (response.status_code, response.json["error"]["message"]) == (403, "a user-delegated token is required")
    assert (subless_idp.stats()["introspection"], subless_idp.stats()["userinfo"]) == (1, 0)
