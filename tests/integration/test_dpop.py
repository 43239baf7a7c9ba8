"""DPoP end to end: bound tokens from the real dev provider, the app under gunicorn over the real Redis,
two instances sharing it (replays and nonces), and a proxy that terminates TLS."""

import pytest
import requests

from dev import dpop_client
from dev.dpop import ALGORITHMS, DpopKey
from dev.services import free_port, start_gunicorn
from tests.helpers.real_services import delete_prefix, integration_env, start_live_app
from tests.helpers.tls_proxy import TlsProxy

pytestmark = pytest.mark.integration

PROFILE = "/api/v1/me/profile"
PUBLIC_NAME = "https://api.example.test"  # a load balancer's name for both instances
# Who signs in with each algorithm's key, and whom they poke (each pair once: the cooldown holds a day).
PAIRS = {"ES256": ("alice", "bob"), "PS256": ("alice", "carol"), "RS256": ("bob", "carol")}


def start_pair(idp, redis_url, workdir, public: list[str] | None = None, **overrides) -> tuple:
    """Two gunicorn instances with one environment (one Redis, key prefix and SECRET_KEY), reached at
    the `public` origins (by default, each at its own URL)."""
    ports = [free_port(), free_port()]
    origins = public or [f"http://127.0.0.1:{port}" for port in ports]
    env = integration_env(idp, redis_url, PROXY_HOPS="1", PUBLIC_ORIGINS=",".join(origins), **overrides)
    first, live = start_live_app(env, ports[0], workdir)
    second = start_gunicorn(ports[1], env=env, log_path=workdir / f"app-{ports[1]}.log")
    return (first, second), (live.url, f"http://127.0.0.1:{ports[1]}"), env


@pytest.fixture(scope="module")
def tls_port():
    """The port of the TLS proxy of test_through_a_proxy..., known before the instances start."""
    return free_port()


@pytest.fixture(scope="module")
def instances(idp, redis_url, workdir, tls_port):
    # Behind a load balancer's public name, or the TLS proxy of one test: never at their own URLs.
    servers, urls, env = start_pair(idp, redis_url, workdir, public=[PUBLIC_NAME, f"https://127.0.0.1:{tls_port}"])
    yield urls
    for server in servers:
        server.stop()
    delete_prefix(redis_url, env["REDIS_KEY_PREFIX"])


@pytest.fixture(scope="module")
def nonced(idp, redis_url, workdir):
    servers, urls, env = start_pair(idp, redis_url, workdir, DPOP_NONCE="on")
    yield urls
    for server in servers:
        server.stop()
    delete_prefix(redis_url, env["REDIS_KEY_PREFIX"])


@pytest.fixture(scope="module")
def bound(idp):
    """A DPoP key per algorithm, and an access token from the provider bound to it."""
    tokens = {}
    for alg in ALGORITHMS:
        key = DpopKey.generate(alg)
        tokens[alg] = (key, idp.user_tokens(PAIRS[alg][0], dpop_key=key)["access_token"])
    return tokens


def dpop(method: str, url: str, key: DpopKey, token: str, *, htu: str | None = None, nonce=None, **kwargs):
    proof = key.proof(method, htu or url, access_token=token, nonce=nonce)
    headers = {"Authorization": f"DPoP {token}", "DPoP": proof, **kwargs.pop("headers", {})}
    return requests.request(method, url, headers=headers, timeout=10, **kwargs)


def why(response) -> tuple[int, str]:
    return response.status_code, response.json()["error"]["message"]


@pytest.mark.parametrize("alg", ALGORITHMS)
def test_a_bound_token_from_the_provider_reads_the_profile_and_pokes_with_each_algorithm(instances, bound, alg):
    key, token = bound[alg]
    first, second = instances
    user, target = PAIRS[alg]
    profile = dpop("GET", first + PROFILE, key, token, htu=PUBLIC_NAME + PROFILE)
    assert (profile.status_code, profile.json()["data"]["handle"]) == (200, f"@{user}")
    poke = dpop(
        "POST", second + "/api/v1/pokes", key, token, htu=PUBLIC_NAME + "/api/v1/pokes", json={"username": target}
    )
    assert (poke.status_code, poke.json()) == (200, {"success": True})


def test_the_same_bound_token_as_bearer_is_refused(instances, bound):
    _, token = bound["ES256"]
    response = requests.get(instances[0] + PROFILE, headers={"Authorization": f"Bearer {token}"}, timeout=10)
    assert why(response) == (401, "a DPoP-bound access token must be sent with the DPoP scheme and a proof")
    assert response.headers["WWW-Authenticate"].startswith('Bearer realm="profile-poke", error="invalid_token"')


def test_a_proof_replayed_against_the_other_instance_is_refused(instances, bound):
    key, token = bound["ES256"]
    first, second = instances
    # Both instances behind one public name, as behind a load balancer: the proof fits either.
    proof = key.proof("GET", PUBLIC_NAME + PROFILE, access_token=token)
    headers = {"Authorization": f"DPoP {token}", "DPoP": proof, "X-Forwarded-Proto": "https"}
    assert requests.get(first + PROFILE, headers=headers, timeout=10).status_code == 200
    replayed = requests.get(second + PROFILE, headers=headers, timeout=10)
    assert why(replayed) == (401, "this DPoP proof was already used (jti)")
    assert 'error="invalid_dpop_proof"' in replayed.headers.get("WWW-Authenticate")


def test_the_server_nonce_of_one_instance_is_accepted_by_the_other(nonced, bound):
    key, token = bound["PS256"]
    first, second = nonced
    asked = dpop("GET", first + PROFILE, key, token)
    assert why(asked) == (401, "the DPoP proof must carry the server's nonce (DPoP-Nonce)")
    assert asked.json()["error"]["code"] == "use_dpop_nonce"
    nonce = asked.headers["DPoP-Nonce"]
    answered = dpop("GET", second + PROFILE, key, token, nonce=nonce)
    assert answered.status_code == 200, answered.text


def test_through_a_proxy_that_terminates_tls_the_public_https_url_is_the_htu(instances, bound, workdir, tls_port):
    key, token = bound["RS256"]
    proxy = TlsProxy(instances[0], workdir, port=tls_port)
    try:
        public = proxy.url + PROFILE
        response = dpop("GET", public, key, token, verify=str(proxy.cert_path))
        assert response.status_code == 200, response.text
        inner = dpop("GET", public, key, token, htu=instances[0] + PROFILE, verify=str(proxy.cert_path))
        assert why(inner) == (401, "the DPoP proof is for another URL (htu)")
    finally:
        proxy.stop()


def test_the_documented_client_answers_the_nonce_challenge_by_itself(nonced, bound):
    key, token = bound["ES256"]
    response = dpop_client.call("GET", nonced[1] + PROFILE, token, key)
    assert (response.status_code, response.json()["data"]["handle"]) == (200, "@alice")
