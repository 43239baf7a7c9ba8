"""Two habits of real providers, against the dev provider switched to behave that way, over the real
Redis: token responses without `scope` (RFC 6749 5.1 lets a provider leave it out when it is the scope
requested; POST /__dev/token-scope) grant what was asked for, while one that lists fewer is judged by
what it lists; and RFC 8414 metadata answered with 200 and an HTML page (IDP_SERVER_METADATA=html, its
login page where metadata would be) is "not offered", like a 404: under gunicorn, one warning naming
OIDC_REVOCATION_ENDPOINT per worker at start and no error, and sign-outs that never call it an outage."""

import base64
import hashlib
import json
import secrets
import time
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest
import requests

from dev import oidc_driver
from dev.services import free_port
from tests.helpers.pages import error_page_message
from tests.helpers.real_services import PASSWORD, delete_prefix, integration_env, start_live_app, start_own_idp
from tests.helpers.settings import CSRF
from tests.helpers.signin import callback_path, sign_in, signed_in_client, start_login

pytestmark = pytest.mark.integration
REQUESTED = ["openid", "svc:interact.poke", "svc:profile.private"]
WARNING = "the identity provider lists no revocation_endpoint and OIDC_REVOCATION_ENDPOINT is not set; doing without it"


@pytest.fixture
def scope_left_out(idp):
    """The shared dev provider leaving `scope` out of its token responses, for one test."""
    oidc_driver.token_scope(idp.base, "omitted")
    yield
    oidc_driver.token_scope(idp.base, "listed")


def test_the_dev_provider_leaves_scope_out_of_its_token_responses_when_told(idp, scope_left_out):
    assert "scope" not in idp.user_tokens("alice")


def test_a_sign_in_whose_token_response_leaves_out_scope_is_granted_what_it_asked_for(make_app, scope_left_out):
    client = signed_in_client(make_app(), "alice")
    session = client.get("/auth/session").json
    assert (session["authenticated"], session["scopes"]) == (True, REQUESTED)
    assert client.get("/api/v1/me/profile", headers=CSRF).json["data"]["handle"] == "@alice"


def test_a_spa_exchange_whose_token_response_leaves_out_scope_signs_in(make_app, idp, scope_left_out):
    app = make_app()
    redirect_uri = app.config["BASE_URL"]
    verifier = secrets.token_urlsafe(64)
    query = {
        "client_id": "profile-poke-web",
        "response_type": "code",
        "redirect_uri": redirect_uri,
        "scope": " ".join(REQUESTED),
        "state": secrets.token_urlsafe(16),
        "code_challenge": base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode(),
        "code_challenge_method": "S256",
    }
    authorize = f"{oidc_driver.discover(idp.issuer)['authorization_endpoint']}?{urlencode(query)}"
    callback = oidc_driver.login_at_idp(requests.Session(), authorize, "carol", PASSWORD)
    code = parse_qs(urlsplit(callback).query)["code"][0]
    client = app.test_client()
    body = {"code": code, "code_verifier": verifier, "redirect_uri": redirect_uri}
    response = client.post("/auth/exchange", json=body, headers=CSRF)
    assert response.status_code == 200, response.json
    assert (response.json["user"], response.json["scopes"]) == ("carol", REQUESTED)


def test_a_token_response_listing_fewer_scopes_is_still_judged_by_what_it_lists(make_app, idp):
    app = make_app(OIDC_CLIENT_ID="profile-poke-web-limited")
    client = app.test_client()
    callback = oidc_driver.login_at_idp(requests.Session(), start_login(client), "alice", PASSWORD)
    response = client.get(callback_path(callback))
    assert (response.status_code, error_page_message(response)) == (
        403,
        "the identity provider did not grant svc:interact.poke, which this app needs",
    )


@pytest.fixture(scope="module")
def html_metadata_app(workdir, redis_url):
    """The app under gunicorn (two workers) and a provider of its own that leaves revocation_endpoint out
    of discovery and answers both RFC 8414 metadata URLs with 200 and its HTML sign-in page."""
    port = free_port()
    idp_server, provider = start_own_idp(
        workdir, [port], IDP_SERVER_METADATA="html", IDP_DISCOVERY_OMIT="revocation_endpoint"
    )
    env = integration_env(provider, redis_url)
    app_server, live = start_live_app(env, port, workdir, workers=2)
    yield live, provider
    app_server.stop()
    idp_server.stop()
    delete_prefix(redis_url, env["REDIS_KEY_PREFIX"])


def logged(live) -> list[dict]:
    return [json.loads(line) for line in live.log_path.read_text().splitlines() if line.startswith("{")]


def warnings_naming_the_setting(live) -> list[dict]:
    return [line for line in logged(live) if "OIDC_REVOCATION_ENDPOINT" in line["message"]]


def test_the_dev_provider_answers_its_metadata_urls_with_an_html_page(html_metadata_app):
    _, provider = html_metadata_app
    parts = urlsplit(provider.issuer)
    for url in (
        f"{provider.issuer}/.well-known/oauth-authorization-server",
        f"{parts.scheme}://{parts.netloc}/.well-known/oauth-authorization-server{parts.path}",
    ):
        answer = requests.get(url, timeout=5)
        assert (answer.status_code, answer.headers["Content-Type"]) == (200, "text/html; charset=utf-8")
    assert "revocation_endpoint" not in oidc_driver.discover(provider.issuer)


def test_each_worker_starts_with_one_warning_naming_the_setting_and_no_error(html_metadata_app):
    live, _ = html_metadata_app
    deadline = time.monotonic() + 15
    while len(warnings_naming_the_setting(live)) < 2 and time.monotonic() < deadline:
        time.sleep(0.1)
    warnings = warnings_naming_the_setting(live)
    assert [(line["level"], line["message"]) for line in warnings] == [("warning", WARNING)] * 2
    assert [line for line in logged(live) if line["level"] in {"error", "critical"}] == []
    text = live.log_path.read_text()
    assert "could not be fetched" not in text and "not checked at start-up" not in text
    assert "[ERROR]" not in text and "Traceback" not in text


def test_signing_out_revokes_nothing_and_calls_nothing_an_outage(html_metadata_app):
    live, _ = html_metadata_app
    for username in ("alice", "bob", "carol"):
        http = sign_in(live.url, username)
        assert http.post(f"{live.url}/auth/logout", headers=CSRF, timeout=10).status_code == 200
    text = live.log_path.read_text()
    assert "revocation failed" not in text and "ProviderUnavailable" not in text
    assert len(warnings_naming_the_setting(live)) == 2  # still one per worker
    ready = requests.get(f"{live.url}/readyz", timeout=5)
    assert (ready.status_code, ready.json()["identity_provider"]) == (200, "ok")
