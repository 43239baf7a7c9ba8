"""Forwarding headers under the real gunicorn with app.json's settings (Heroku's router in front): a
client's headers never move a route or the path it answers under, nor the URL a DPoP proof is for
(`htu` is the configured public origin plus the path, whatever scheme or host a header names)."""

import json
import secrets

import pytest
import requests

from dev.dpop import DpopKey
from dev.services import ROOT, free_port
from tests.helpers.real_services import delete_prefix, integration_env, start_live_app

pytestmark = pytest.mark.integration

METRICS_TOKEN = secrets.token_urlsafe(24)
PROFILE = "/api/v1/me/profile"
PUBLIC = "https://profile-poke.herokuapp.test"  # the app's public origin: its OIDC_REDIRECT_URI's on Heroku
# Headers a client may send to move the app under another path (gunicorn maps SCRIPT_NAME and
# PATH_INFO from a trusted forwarder; other stacks read the rest).
PATH_HEADERS = [
    {"SCRIPT_NAME": "/x"},
    {"SCRIPT_NAME": "/x", "PATH_INFO": "/metrics"},
    {"X-Forwarded-Prefix": "/x"},
    {"X-Script-Name": "/x"},
    {"Forwarded": "for=203.0.113.9;host=example.test;proto=https;path=/x"},
    {"X-Original-URL": "/metrics"},
    {"X-Rewrite-URL": "/metrics"},
]


def app_json_settings() -> dict:
    """Every environment value app.json sets on Heroku."""
    env = json.loads((ROOT / "app.json").read_text())["env"]
    return {name: spec["value"] for name, spec in env.items() if "value" in spec}


@pytest.fixture(scope="module")
def heroku_app(idp, redis_url, workdir):
    """The app under gunicorn.conf.py with app.json's settings and /metrics on."""
    env = integration_env(idp, redis_url, **app_json_settings(), METRICS_TOKEN=METRICS_TOKEN, PUBLIC_ORIGINS=PUBLIC)
    server, live = start_live_app(env, free_port(), workdir)
    yield live
    server.stop()
    delete_prefix(redis_url, env["REDIS_KEY_PREFIX"])


def get(live, path: str, headers: dict, **kwargs):
    return requests.get(live.url + path, headers=headers, timeout=10, allow_redirects=False, **kwargs)


def test_app_json_trusts_only_the_headers_herokus_router_sets():
    settings = app_json_settings()
    assert settings["PROXY_HOPS"] == "1" and settings["PROXY_FORWARDS_HOST"] == "false"


def test_metrics_answers_under_its_own_path(heroku_app):
    response = get(heroku_app, "/metrics", {"Authorization": f"Bearer {METRICS_TOKEN}"})
    assert response.status_code == 200 and "# TYPE" in response.text


@pytest.mark.parametrize("headers", PATH_HEADERS, ids=lambda headers: "+".join(headers))
def test_no_client_header_serves_metrics_under_another_path(heroku_app, headers):
    response = get(heroku_app, "/x/metrics", {"Authorization": f"Bearer {METRICS_TOKEN}", **headers})
    assert response.status_code == 404
    assert "# TYPE" not in response.text


@pytest.mark.parametrize("script_name", ["/api", "/zzz", "/api/v1/users"])
def test_a_script_name_header_neither_moves_nor_breaks_an_api_route(heroku_app, script_name):
    response = get(heroku_app, "/api/v1/users/alice", {"SCRIPT_NAME": script_name})
    assert (response.status_code, response.json()["username"]) == (200, "alice")


@pytest.mark.parametrize("headers", PATH_HEADERS[2:], ids=lambda headers: "+".join(headers))
def test_an_api_route_answers_under_its_own_path_whatever_the_headers(heroku_app, headers):
    response = get(heroku_app, "/api/v1/users/alice", headers)
    assert (response.status_code, response.json()["username"]) == (200, "alice")


@pytest.fixture(scope="module")
def bound(idp):
    key = DpopKey.generate("ES256")
    return key, idp.user_tokens("alice", dpop_key=key)["access_token"]


def dpop_profile(live, bound, htu: str, headers: dict):
    key, token = bound
    proof = key.proof("GET", htu, access_token=token)
    return get(live, PROFILE, {"Authorization": f"DPoP {token}", "DPoP": proof, **headers})


def refusal(response) -> tuple[int, str]:
    return response.status_code, response.json()["error"]["message"]


@pytest.mark.parametrize(
    "headers",
    [
        {"X-Forwarded-Proto": "https"},
        {"X-Forwarded-Proto": "http"},
        {"X-Forwarded-Proto": "http", "X-Forwarded-Ssl": "on"},
        {"X-Forwarded-Proto": "https", "X-Forwarded-Host": "api.elsewhere.test"},
    ],
    ids=["https", "http", "a client's X-Forwarded-Ssl", "a client's X-Forwarded-Host"],
)
def test_a_proof_for_the_public_origin_passes_whatever_scheme_or_host_a_header_names(heroku_app, bound, headers):
    assert dpop_profile(heroku_app, bound, PUBLIC + PROFILE, headers).status_code == 200


@pytest.mark.parametrize(
    ("htu", "headers"),
    [
        ("https://api.elsewhere.test", {"X-Forwarded-Proto": "https", "X-Forwarded-Host": "api.elsewhere.test"}),
        ("http://profile-poke.herokuapp.test", {"X-Forwarded-Proto": "http"}),
        (None, {}),
    ],
    ids=["the host a client forwards", "the scheme the router forwards", "the address the router dialled"],
)
def test_a_proof_for_any_other_origin_is_refused_whatever_the_headers_say(heroku_app, bound, htu, headers):
    response = dpop_profile(heroku_app, bound, (htu or heroku_app.url) + PROFILE, headers)
    assert refusal(response) == (401, "the DPoP proof is for another URL (htu)")
