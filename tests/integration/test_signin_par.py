"""Pushed authorization requests (RFC 9126, OIDC_PAR) against the real dev provider and Redis: the
browser sees only client_id and request_uri, the provider received the pushed request, and a PAR
that fails is a 502 page with nothing pending and no front-channel fallback, a start the rate limit
refuses is never pushed. Also the `state` format."""

import base64
import re
import time
from urllib.parse import parse_qs, parse_qsl, urlsplit

import pytest
import requests

from dev import oidc_driver
from tests.helpers.pages import error_page_message
from tests.helpers.real_services import PASSWORD, start_own_idp
from tests.helpers.signin import callback_path, start_login

pytestmark = pytest.mark.integration

UNAVAILABLE = "sign-in unavailable: the identity provider did not accept the sign-in request"
BASE64URL = re.compile(r"[A-Za-z0-9_-]+")
LIMITED = "too many requests from this address; try again later"


@pytest.fixture(scope="module")
def idp_without_par(workdir, idp):
    """A dev provider with IDP_PAR=off: its discovery names no PAR endpoint."""
    server, provider = start_own_idp(workdir, idp.app_ports, IDP_PAR="off")
    yield provider
    server.stop()


@pytest.fixture
def par_fault(idp):
    """Makes the shared provider's PAR endpoint misbehave for one test, and heals it afterwards."""
    yield lambda mode, **options: oidc_driver.par_mode(idp.base, mode, **options)
    oidc_driver.par_mode(idp.base, "ok")


def pushed_requests(idp) -> list[dict]:
    return [entry for entry in idp.stats().get("authorization_requests", []) if entry["endpoint"] == "par"]


def nothing_pending(app, keys_of, response) -> bool:
    """No pending sign-in: no cookie set in the browser, and no key of a sign-in in Redis."""
    return "Set-Cookie" not in response.headers and [key for key in keys_of(app) if ":login" in key] == []


def test_the_dev_provider_names_a_par_endpoint_in_discovery_and_idp_par_off_removes_it(idp, idp_without_par):
    assert oidc_driver.discover(idp.issuer)["pushed_authorization_request_endpoint"].endswith("/ext/par/request")
    assert "pushed_authorization_request_endpoint" not in oidc_driver.discover(idp_without_par.issuer)


def test_with_par_the_redirect_carries_exactly_client_id_and_request_uri_and_the_provider_received_the_push(app, idp):
    client = app.test_client()
    idp.reset_stats()
    location = client.get("/auth/login", query_string={"login_hint": "alice", "return_to": "/p"}).headers["Location"]
    assert location.startswith(oidc_driver.discover(idp.issuer)["authorization_endpoint"] + "?")
    pairs = parse_qsl(urlsplit(location).query)
    assert [name for name, _ in pairs] == ["client_id", "request_uri"]
    assert dict(pairs)["client_id"] == "profile-poke-web"
    assert dict(pairs)["request_uri"].startswith("urn:ietf:params:oauth:request_uri:")
    [pushed] = pushed_requests(idp)
    assert pushed["status"] == 201
    assert pushed["params"]["client_id"] == "profile-poke-web" and pushed["params"]["login_hint"] == "alice"
    assert pushed["params"]["redirect_uri"] == idp.redirect_uri()
    callback = oidc_driver.login_at_idp(requests.Session(), location, "alice", PASSWORD)
    assert client.get(callback_path(callback)).headers["Location"] == "/p"
    assert client.get("/auth/session").json["user"] == "alice"
    [authorization] = [e for e in idp.stats()["authorization_requests"] if e["endpoint"] == "authorization"][:1]
    assert authorization["pushed"] is True and authorization["params"]["login_hint"] == "alice"


def test_the_pushed_request_is_sent_as_a_public_client_without_a_secret(app, idp):
    idp.reset_stats()
    start_login(app.test_client())
    [pushed] = pushed_requests(idp)
    assert pushed["params"]["client_id"] == "profile-poke-web"
    assert "client_secret" not in str(pushed)


@pytest.mark.parametrize("mode", ["refuse", "error", "no_request_uri", "status_200"])
def test_a_par_that_fails_is_a_502_page_with_nothing_pending_and_no_fallback(app, idp, keys_of, par_fault, mode):
    par_fault(mode)
    client = app.test_client()
    idp.reset_stats()
    response = client.get("/auth/login", query_string={"return_to": "/x"})
    assert (response.status_code, error_page_message(response)) == (502, UNAVAILABLE)
    assert "Location" not in response.headers
    assert nothing_pending(app, keys_of, response)
    assert idp.stats()["authorization"] == 0  # the browser was not sent to the front channel


def test_a_par_that_times_out_is_a_502_page_with_nothing_pending(make_app, idp, keys_of, par_fault):
    app = make_app(IDP_TIMEOUT="1")
    app.test_client().get("/auth/session")
    with app.app_context():
        app.extensions["profile_poke"].provider.metadata()  # discovery read before the PAR endpoint hangs
    par_fault("hang", ms=4000)
    pushed = len(pushed_requests(idp))
    started = time.monotonic()
    response = app.test_client().get("/auth/login")
    assert (response.status_code, error_page_message(response)) == (502, UNAVAILABLE)
    assert time.monotonic() - started < 3.5
    assert nothing_pending(app, keys_of, response)
    # The provider records the held push when it lets go of it: wait for that here, or it lands in the
    # stats of whichever test comes next (on a loaded machine, one that counts pushes).
    deadline = time.monotonic() + 15
    while len(pushed_requests(idp)) == pushed and time.monotonic() < deadline:
        time.sleep(0.2)


def test_oidc_par_require_fails_with_502_when_discovery_names_no_par_endpoint(make_app, idp_without_par, keys_of):
    app = make_app(idp_without_par, OIDC_PAR="require")
    response = app.test_client().get("/auth/login")
    assert response.status_code == 502
    assert "OIDC_PAR=require, but the identity provider offers no pushed" in error_page_message(response)
    assert nothing_pending(app, keys_of, response)


def test_oidc_par_auto_uses_the_front_channel_when_discovery_names_no_par_endpoint(make_app, idp_without_par):
    app = make_app(idp_without_par)
    client = app.test_client()
    query = parse_qs(urlsplit(start_login(client)).query)
    assert {"state", "nonce", "code_challenge", "redirect_uri"} <= set(query)
    callback = oidc_driver.login_at_idp(requests.Session(), start_login(client), "bob", PASSWORD)
    assert client.get(callback_path(callback)).status_code == 302
    assert client.get("/auth/session").json["user"] == "bob"


def test_oidc_par_off_sends_the_parameters_through_the_browser_and_pushes_nothing(make_app, idp):
    app = make_app(OIDC_PAR="off")
    idp.reset_stats()
    query = parse_qs(urlsplit(start_login(app.test_client())).query)
    assert query["client_id"] == ["profile-poke-web"] and "request_uri" not in query
    assert pushed_requests(idp) == []


def test_the_state_is_60_base64url_characters_of_its_expiry_random_bytes_and_a_mac(make_app):
    app = make_app(OIDC_PAR="off")
    browser, other = app.test_client(), app.test_client()
    before = time.time()
    states = [parse_qs(urlsplit(start_login(client)).query)["state"][0] for client in (browser, browser, other)]
    for state in states:
        assert BASE64URL.fullmatch(state) and len(state) == 60 and "=" not in state
        raw = base64.urlsafe_b64decode(state)
        assert before + 600 <= int.from_bytes(raw[:7], "big") / 1e6 <= time.time() + 600
    assert len({base64.urlsafe_b64decode(state)[7:33] for state in states}) == 3  # 26 random bytes each


def test_a_sign_in_the_rate_limit_refuses_is_never_pushed_to_the_provider(make_app, idp):
    app = make_app(RATE_LIMIT_LOGIN="1 per minute")
    idp.reset_stats()
    assert app.test_client().get("/auth/login").status_code == 302
    refused = app.test_client().get("/auth/login")  # another browser, the same address
    assert (refused.status_code, error_page_message(refused)) == (429, LIMITED)
    assert "Set-Cookie" not in refused.headers
    assert len(pushed_requests(idp)) == 1
