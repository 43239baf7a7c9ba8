"""`make bench`'s peers (bench/peers/) answer the success path as the service does, over the same
Redis data: same status and JSON body on the three routes, and a second poke within the day refused
by all with the contract's cooldown body. The peers run in-process (Flask's test client, Starlette's
TestClient), the service too, against the real Redis and the real dev provider."""

import re

import pytest
import redis as redis_py
from fastapi.testclient import TestClient

from app import create_app
from app.store.keys import Keys
from app.store.profile_record import Profile
from app.store.profiles import Profiles
from bench.peers import fastapi_peer, flask_peer
from config import Config
from tests.helpers.real_services import delete_prefix, import_demo_users, integration_env

pytestmark = [pytest.mark.integration, pytest.mark.single_redis]

PEERS = ("flask", "fastapi")
TARGETS = {"service": "target-service", "flask": "target-flask", "fastapi": "target-fastapi"}
COOLDOWN = re.compile(r"poke on cooldown \((23h59m\d+s|24h0m0s) remaining\)")


@pytest.fixture(scope="module")
def clients(idp, redis_url):
    """name -> a function (method, path, token, json) -> (status, body) for the service and each peer,
    all over one key prefix with the demo users and a poke target for each."""
    env = integration_env(idp, redis_url)
    service = create_app(Config(env))
    import_demo_users(service)
    store = redis_py.Redis.from_url(redis_url)
    for name in TARGETS.values():
        Profiles(store, Keys(env["REDIS_KEY_PREFIX"])).put(Profile(username=name, handle=name, display_name=name))
    store.close()
    flask_client = flask_peer.create_app(env).test_client()
    with TestClient(fastapi_peer.create_app(env)) as fastapi_client:
        yield {
            "service": _flask_caller(service.test_client()),
            "flask": _flask_caller(flask_client),
            "fastapi": _starlette_caller(fastapi_client),
        }
    delete_prefix(redis_url, env["REDIS_KEY_PREFIX"])


def _flask_caller(client):
    def call(method: str, path: str, token: str | None = None, json=None):
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        response = client.open(path, method=method, headers=headers, json=json)
        return response.status_code, response.get_json()

    return call


def _starlette_caller(client):
    def call(method: str, path: str, token: str | None = None, json=None):
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        response = client.request(method, path, headers=headers, json=json)
        return response.status_code, response.json()

    return call


@pytest.mark.parametrize("peer", PEERS)
def test_peer_answers_the_public_profile_as_the_service_does(clients, peer):
    expected = clients["service"]("GET", "/api/v1/users/bob")
    assert expected[0] == 200
    assert clients[peer]("GET", "/api/v1/users/bob") == expected


@pytest.mark.parametrize("peer", PEERS)
def test_peer_answers_the_own_profile_as_the_service_does(clients, peer, idp):
    token = idp.user_token("alice")
    expected = clients["service"]("GET", "/api/v1/me/profile", token)
    assert expected[0] == 200
    assert expected[1]["data"]["stats"]  # alice's stats are private: only this route shows them
    assert clients[peer]("GET", "/api/v1/me/profile", token) == expected


@pytest.mark.parametrize("name", ["service", *PEERS])
def test_first_poke_succeeds_and_a_second_within_the_day_is_refused_with_the_cooldown_body(clients, name, idp):
    token, body = idp.user_token("alice"), {"username": TARGETS[name]}
    assert clients[name]("POST", "/api/v1/pokes", token, body) == (200, {"success": True})
    status, refused = clients[name]("POST", "/api/v1/pokes", token, body)
    assert status == 400
    assert refused["success"] is False
    assert COOLDOWN.fullmatch(refused["error"]), refused


@pytest.mark.parametrize("peer", PEERS)
def test_peer_keeps_its_cooldowns_where_the_service_reads_them_and_reads_the_services(clients, peer, idp):
    token = idp.user_token({"flask": "bob", "fastapi": "carol"}[peer])
    poked_by_peer, poked_by_service = {"username": TARGETS[peer]}, {"username": TARGETS["service"]}
    assert clients[peer]("POST", "/api/v1/pokes", token, poked_by_peer) == (200, {"success": True})
    assert clients["service"]("POST", "/api/v1/pokes", token, poked_by_peer)[0] == 400
    assert clients["service"]("POST", "/api/v1/pokes", token, poked_by_service) == (200, {"success": True})
    status, refused = clients[peer]("POST", "/api/v1/pokes", token, poked_by_service)
    assert status == 400
    assert COOLDOWN.fullmatch(refused["error"]), refused
