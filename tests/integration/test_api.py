"""The /api/v1 contract with real tokens from the dev provider and the real Redis."""

import secrets

import pytest
from joserfc import jwt
from joserfc.jwk import RSAKey

from app.store.keys import Keys
from app.store.pokes import COOLDOWN_MS
from tests.helpers.pokes import COOLDOWN_MESSAGE, simultaneous_pokes

pytestmark = pytest.mark.integration


def bearer(token: str) -> dict:
    return {"Authorization": f"Bearer {token}"}


def poke(client, token, body, **kwargs):
    return client.post("/api/v1/pokes", json=body, headers=bearer(token), **kwargs)


def test_public_profile_is_returned_directly(client):
    response = client.get("/api/v1/users/alice")
    assert response.status_code == 200
    assert response.json == {
        "username": "alice",
        "handle": "@alice",
        "display_name": "Alice Liddell",
        "aggregate_scores": {"overall": 87.5, "activity": 92},
    }


@pytest.mark.parametrize("name", ["ALICE", "Alice", "aLiCe"])
def test_usernames_match_case_insensitively(client, name):
    assert client.get(f"/api/v1/users/{name}").json["username"] == "alice"


@pytest.mark.parametrize("name", ["nobody", "dave", "a" * 65, "al ice", "bad/name", "%00", "o%0Ab", "%C2%A3%0A"])
def test_unknown_disabled_or_impossible_users_are_a_plain_text_404(client, name):
    response = client.get(f"/api/v1/users/{name}")
    assert response.status_code == 404
    assert response.mimetype == "text/plain"
    assert response.get_data(as_text=True).strip() == "user not found"


def test_public_profile_with_a_valid_token_works_and_with_a_bad_one_is_refused(client, idp):
    assert client.get("/api/v1/users/bob", headers=bearer(idp.user_token("alice"))).status_code == 200
    response = client.get("/api/v1/users/bob", headers=bearer("not.a.token"))
    assert response.status_code == 401
    assert response.json["error"] == {"code": "invalid_token", "message": "the access token is malformed"}


def test_own_profile_with_a_user_token(client, idp):
    response = client.get("/api/v1/me/profile", headers=bearer(idp.user_token("alice")))
    assert response.status_code == 200
    assert response.headers["Cache-Control"] == "no-store"
    assert response.json == {
        "data": {
            "handle": "@alice",
            "display_name": "Alice Liddell",
            "stats": {"steam": {"hours_played": 1204, "achievements": 311}, "github": {"commits": 2048, "stars": 95}},
            "aggregate_scores": {"overall": 87.5, "activity": 92},
        }
    }


def test_first_sight_of_a_subject_creates_its_profile(client, idp):
    response = client.get("/api/v1/me/profile", headers=bearer(idp.user_token("erin")))
    assert response.status_code == 200
    assert response.json == {
        "data": {"handle": "erin", "display_name": "Erin Brockovich", "stats": {}, "aggregate_scores": {}}
    }
    assert client.get("/api/v1/users/erin").status_code == 200


def test_a_subject_never_takes_another_subjects_profile(client, idp):
    response = client.get("/api/v1/me/profile", headers=bearer(idp.user_token("mallory")))
    assert response.status_code == 403
    assert response.json["error"] == {
        "code": "forbidden",
        "message": "this account's username belongs to another account",
    }


def test_a_subject_without_profile_or_username_is_forbidden(client, idp):
    response = client.get("/api/v1/me/profile", headers=bearer(idp.user_token("nameless")))
    assert response.status_code == 403
    assert response.json["error"] == {"code": "forbidden", "message": "this account has no profile"}


def test_disabled_user_is_forbidden_on_every_user_endpoint(client, idp):
    token = idp.user_token("dave")
    for response in (client.get("/api/v1/me/profile", headers=bearer(token)), poke(client, token, {"username": "bob"})):
        assert response.status_code == 403
        assert response.json["error"] == {"code": "forbidden", "message": "the account is disabled"}
        assert response.headers["WWW-Authenticate"].startswith("Bearer ")


@pytest.mark.parametrize(
    ("method", "path", "scope"),
    [("get", "/api/v1/me/profile", "svc:profile.private"), ("post", "/api/v1/pokes", "svc:interact.poke")],
)
def test_application_token_with_the_scope_is_forbidden(client, idp, method, path, scope):
    response = getattr(client, method)(path, json={"username": "bob"}, headers=bearer(idp.app_token(scope=scope)))
    assert response.status_code == 403
    assert response.json["error"] == {"code": "forbidden", "message": "a user-delegated token is required"}


def test_application_token_without_the_scope_gets_insufficient_scope_first(client, idp):
    response = client.get("/api/v1/me/profile", headers=bearer(idp.app_token(scope="svc:interact.poke")))
    assert response.status_code == 403
    assert response.json == {"error": {"code": "insufficient_scope", "message": "scope svc:profile.private required"}}


def test_a_user_token_without_the_poke_scope_cannot_poke(client, idp):
    token = idp.user_tokens("carol", client_id="profile-poke-web-limited")["access_token"]
    response = poke(client, token, {"username": "bob"})
    assert response.status_code == 403
    assert response.json == {"error": {"code": "insufficient_scope", "message": "scope svc:interact.poke required"}}
    assert response.headers["WWW-Authenticate"] == (
        'Bearer realm="profile-poke", error="insufficient_scope", scope="svc:interact.poke"'
    )


def test_a_token_for_another_api_is_invalid(client, idp):
    response = client.get("/api/v1/me/profile", headers=bearer(idp.app_token("other-service")))
    assert response.status_code == 401
    assert response.json["error"] == {"code": "invalid_token", "message": "the access token is not meant for this API"}


@pytest.mark.parametrize("method", ["get", "post"])
def test_no_token_is_unauthorized(client, method):
    path = "/api/v1/me/profile" if method == "get" else "/api/v1/pokes"
    response = getattr(client, method)(path, json={"username": "bob"})
    assert response.status_code == 401
    assert response.json["error"] == {"code": "unauthorized", "message": "authentication required"}
    assert response.headers["WWW-Authenticate"] == 'Bearer realm="profile-poke"'


def test_poke_then_cooldown_with_message_ttl_and_retry_after(client, idp, redis, app):
    token = idp.user_token("alice")
    first = poke(client, token, {"username": "Bob"})
    assert (first.status_code, first.json) == (200, {"success": True})
    second = poke(client, token, {"username": "bob"})
    assert second.status_code == 400
    assert second.json["success"] is False
    hours, minutes, seconds = map(int, COOLDOWN_MESSAGE.fullmatch(second.json["error"]).groups())
    remaining = hours * 3600 + minutes * 60 + seconds
    assert 24 * 3600 - 5 <= remaining <= 24 * 3600
    assert second.headers["Retry-After"] == str(remaining)
    pttl = redis.pttl(Keys(app.config["REDIS_KEY_PREFIX"]).cooldown("alice", "bob"))
    assert COOLDOWN_MS - 5000 <= pttl <= COOLDOWN_MS


def test_the_cooldown_is_per_target_and_per_poker(client, idp):
    assert poke(client, idp.user_token("alice"), {"username": "bob"}).status_code == 200
    assert poke(client, idp.user_token("alice"), {"username": "carol"}).status_code == 200
    assert poke(client, idp.user_token("carol"), {"username": "bob"}).status_code == 200


def test_cooldown_message_counts_down_from_the_stored_ttl(client, idp, redis, app):
    redis.set(Keys(app.config["REDIS_KEY_PREFIX"]).cooldown("alice", "bob"), 1, px=303_400)
    response = poke(client, idp.user_token("alice"), {"username": "bob"})
    assert response.json == {"success": False, "error": "poke on cooldown (0h5m4s remaining)"}


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"username": "nobody"}, "user not found: nobody"),
        ({"username": "dave"}, "user not found: dave"),
        ({"username": "alice"}, "cannot poke yourself"),
        ({"username": "ALICE"}, "cannot poke yourself"),
        ({}, "username is required"),
        ({"username": ""}, "username must not be empty"),
        ({"username": 42}, "username must be a string"),
        ({"username": None}, "username must be a string"),
        ({"username": "bob", "extra": 1}, "unknown field: extra"),
        (["bob"], "request body must be a JSON object"),
        ("bob", "request body must be a JSON object"),
    ],
)
def test_refused_pokes_answer_with_the_poke_body_and_write_nothing(client, idp, keys_of, app, body, message):
    before = keys_of(app)
    response = poke(client, idp.user_token("alice"), body)
    assert (response.status_code, response.json) == (400, {"success": False, "error": message})
    assert keys_of(app) == before


def test_malformed_json_is_a_400(client, idp):
    response = client.post(
        "/api/v1/pokes", data="{not json", content_type="application/json", headers=bearer(idp.user_token("alice"))
    )
    assert (response.status_code, response.json) == (400, {"success": False, "error": "request body is not valid JSON"})


def test_a_huge_body_is_a_413(client, idp):
    response = poke(client, idp.user_token("alice"), {"username": "b" * 100_000})
    assert (response.status_code, response.json) == (413, {"success": False, "error": "request body is too large"})


def test_a_non_json_content_type_is_a_415(client, idp):
    response = client.post(
        "/api/v1/pokes",
        data="username=bob",
        content_type="application/x-www-form-urlencoded",
        headers=bearer(idp.user_token("alice")),
    )
    assert (response.status_code, response.json) == (
        415,
        {"success": False, "error": "Content-Type must be application/json"},
    )


def test_fifty_simultaneous_pokes_of_one_target_succeed_exactly_once(live_app, idp):
    responses = simultaneous_pokes(live_app.url, idp.user_token("carol"), "bob")
    codes = sorted(response.status_code for response in responses)
    assert codes == [200] + [400] * 49
    assert all(COOLDOWN_MESSAGE.fullmatch(r.json()["error"]) for r in responses if r.status_code == 400)


@pytest.mark.parametrize(
    ("method", "path", "status", "code"),
    [
        ("get", "/api/v1/nothing-here", 404, "not_found"),
        ("delete", "/api/v1/pokes", 405, "method_not_allowed"),
        ("put", "/api/v1/me/profile", 405, "method_not_allowed"),
    ],
)
def test_unknown_routes_and_methods_get_the_json_envelope(client, method, path, status, code):
    response = getattr(client, method)(path)
    assert response.status_code == status
    assert response.json["error"]["code"] == code
    if status == 405:
        assert response.headers["Allow"]


def test_a_flood_of_random_key_ids_costs_the_provider_at_most_one_jwks_fetch(client, idp):
    key = RSAKey.generate_key(2048)
    assert client.get("/api/v1/me/profile", headers=bearer(idp.user_token("alice"))).status_code == 200
    idp.reset_stats()
    for _ in range(40):
        header = {"alg": "RS256", "typ": "at+jwt", "kid": secrets.token_hex(8)}
        forged = jwt.encode(header, {"iss": idp.issuer, "sub": "x", "aud": "profile-poke-api"}, key)
        refused = client.get("/api/v1/me/profile", headers=bearer(forged))
        assert refused.json["error"] == {
            "code": "invalid_token",
            "message": "the access token was not signed by a known key",
        }
    assert idp.stats()["jwks"] <= 1


@pytest.mark.parametrize("body", [{"username": "bob"}, {"username": "DAVE"}, {"username": "nobody"}, {}, ["x"]])
def test_a_disabled_poker_hears_403_before_anything_else_and_nothing_is_written(client, idp, keys_of, app, body):
    before = keys_of(app)
    response = poke(client, idp.user_token("dave"), body)
    assert (response.status_code, response.json["error"]) == (
        403,
        {"code": "forbidden", "message": "the account is disabled"},
    )
    assert keys_of(app) == before


def test_a_cooldown_that_lost_its_ttl_still_holds(client, idp, redis, app):
    redis.set(Keys(app.config["REDIS_KEY_PREFIX"]).cooldown("alice", "bob"), 1)
    response = poke(client, idp.user_token("alice"), {"username": "bob"})
    assert response.json == {"success": False, "error": "poke on cooldown (24h0m0s remaining)"}
