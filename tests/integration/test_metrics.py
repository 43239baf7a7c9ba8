"""GET /metrics from real gunicorn workers after real traffic: every counter moves, labels carry route
templates and outcomes (never a username, token or path), and only METRICS_TOKEN opens it."""

import secrets
import time

import pytest
import requests
from prometheus_client.parser import text_string_to_metric_families

from dev.services import free_port, start_gunicorn
from tests.helpers.real_services import integration_env, start_live_app
from tests.helpers.settings import CSRF, SESSION_COOKIE
from tests.helpers.signin import sign_in

pytestmark = pytest.mark.integration
SHORT_TOKEN_REFRESH_DUE = 2.5  # profile-poke-web-short tokens live 62 s; refresh starts at 60 s left


@pytest.fixture(scope="module")
def metered(idp, redis_url, workdir):
    """The app under gunicorn (two workers) with a METRICS_TOKEN and the short-lived-token client."""
    token = secrets.token_urlsafe(32)
    env = integration_env(idp, redis_url, 2, OIDC_CLIENT_ID="profile-poke-web-short", METRICS_TOKEN=token)
    server, live = start_live_app(env, idp.app_ports[2], workdir)
    yield live, token
    server.stop()


def scrape(url: str, token: str) -> tuple[str, dict]:
    """The exposition text of /metrics and its samples as {(name, sorted labels): value}."""
    response = requests.get(f"{url}/metrics", headers={"Authorization": f"Bearer {token}"}, timeout=10)
    assert response.status_code == 200, response.text
    assert response.headers["Cache-Control"] == "no-store"
    samples = {}
    for family in text_string_to_metric_families(response.text):
        for sample in family.samples:
            samples[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return response.text, samples


def value(samples: dict, name: str, **labels) -> float:
    """The sum of every sample of `name` whose labels include `labels`."""
    wanted = set(labels.items())
    return sum(v for (n, found), v in samples.items() if n == name and wanted <= set(found))


def test_every_counter_moves_with_real_traffic_and_no_label_names_a_user_token_or_path(metered, idp):
    live, token = metered
    _, before = scrape(live.url, token)
    bearer = idp.user_token("carol")
    auth = {"Authorization": f"Bearer {bearer}"}
    api = f"{live.url}/api/v1"
    assert requests.get(f"{api}/users/bob", timeout=10).status_code == 200
    assert requests.get(f"{api}/users/nobody-by-that-name", timeout=10).status_code == 404
    assert requests.get(f"{live.url}/no/such/page-xyzzy", timeout=10).status_code == 404
    assert requests.get(f"{api}/me/profile", headers=auth, timeout=10).status_code == 200
    target = {"username": "bob"}
    first = requests.post(f"{api}/pokes", json=target, headers=auth, timeout=10)
    second = requests.post(f"{api}/pokes", json=target, headers=auth, timeout=10)
    unknown = requests.post(f"{api}/pokes", json={"username": "nobody-by-that-name"}, headers=auth, timeout=10)
    own = requests.post(f"{api}/pokes", json={"username": "carol"}, headers=auth, timeout=10)
    malformed = requests.post(f"{api}/pokes", json={"username": 7}, headers=auth, timeout=10)
    statuses = [r.status_code for r in (first, second, unknown, own, malformed)]
    assert statuses == [200, 400, 400, 400, 400]
    browser = sign_in(live.url, "alice")  # discovery, jwks and token calls at the provider
    time.sleep(SHORT_TOKEN_REFRESH_DUE)
    assert requests.get(f"{api}/me/profile", cookies=browser.cookies, headers=CSRF, timeout=15).status_code == 200
    _, during = scrape(live.url, token)
    assert browser.post(f"{live.url}/auth/logout", headers=CSRF, timeout=10).status_code == 200
    text, after = scrape(live.url, token)

    moved = {
        "public 200": (
            "pp_http_request_duration_seconds_count",
            {"route": "/api/v1/users/<path:username>", "status": "200"},
        ),
        "public 404": (
            "pp_http_request_duration_seconds_count",
            {"route": "/api/v1/users/<path:username>", "status": "404"},
        ),
        "no route": (
            "pp_http_request_duration_seconds_count",
            {"route": "unmatched", "method": "GET", "status": "404"},
        ),
        "own profile": ("pp_http_request_duration_seconds_count", {"route": "/api/v1/me/profile", "status": "200"}),
        "poke route": (
            "pp_http_request_duration_seconds_count",
            {"route": "/api/v1/pokes", "method": "POST", "status": "400"},
        ),
        "poked": ("pp_pokes_total", {"outcome": "poked"}),
        "cooldown": ("pp_pokes_total", {"outcome": "cooldown"}),
        "unknown target": ("pp_pokes_total", {"outcome": "unknown_target"}),
        "self": ("pp_pokes_total", {"outcome": "self"}),
        "invalid": ("pp_pokes_total", {"outcome": "invalid"}),
        "refreshed": ("pp_refreshes_total", {"outcome": "refreshed"}),
        "token calls": ("pp_idp_requests_total", {"endpoint": "token", "outcome": "ok"}),
        "token timing": ("pp_idp_request_duration_seconds_count", {"endpoint": "token"}),
        "revocation": ("pp_idp_requests_total", {"endpoint": "revocation", "outcome": "ok"}),
    }
    for what, (name, labels) in moved.items():
        assert value(after, name, **labels) > value(before, name, **labels), what
    assert value(during, "pp_active_sessions") == value(before, "pp_active_sessions") + 1
    assert value(after, "pp_active_sessions") == value(before, "pp_active_sessions")
    assert "_created" not in text, "not the multiprocess registry: one scrape would miss other workers' counts"
    for secret in (
        "alice",
        "carol",
        "nobody-by-that-name",
        "xyzzy",
        "/api/v1/users/bob",
        bearer,
        browser.cookies.get(SESSION_COOKIE) or "cookie-gone",
    ):
        assert secret not in text, "a label names a user, a token or a raw path"


def test_an_unknown_method_is_labelled_other(metered):
    live, token = metered
    requests.request("BREW", f"{live.url}/api/v1/users/bob", timeout=10)
    text, samples = scrape(live.url, token)
    assert value(samples, "pp_http_request_duration_seconds_count", method="other") >= 1
    assert "BREW" not in text


@pytest.mark.parametrize("header", [None, "Bearer wrong", "Basic x", "bearer {token}", "Bearer {token}x"])
def test_only_the_metrics_token_opens_it_and_a_refusal_reveals_nothing(metered, header):
    live, token = metered
    headers = {"Authorization": header.format(token=token)} if header else {}
    response = requests.get(f"{live.url}/metrics", headers=headers, timeout=10)
    assert response.status_code == 401
    assert response.text == "unauthorized\n"
    assert response.headers["WWW-Authenticate"] == 'Bearer realm="metrics"'


def test_without_a_metrics_token_there_is_no_metrics_route(live_app):
    assert "METRICS_TOKEN" not in live_app.env
    response = requests.get(f"{live_app.url}/metrics", headers={"Authorization": "Bearer "}, timeout=10)
    assert response.status_code == 404


def test_redis_errors_are_counted(metered, workdir):
    live, token = metered
    port = free_port()
    env = {**live.env, "REDIS_URL": f"redis://127.0.0.1:{free_port()}/0", "REDIS_SOCKET_TIMEOUT": "0.5"}
    server = start_gunicorn(port, env=env, log_path=workdir / f"app-{port}.log")
    try:
        assert requests.get(f"http://127.0.0.1:{port}/api/v1/users/bob", timeout=10).status_code == 503
        _, samples = scrape(f"http://127.0.0.1:{port}", token)
    finally:
        server.stop()
    assert value(samples, "pp_redis_errors_total", error="ConnectionError") >= 1
    assert (
        value(samples, "pp_http_request_duration_seconds_count", route="/api/v1/users/<path:username>", status="503")
        == 1
    )
