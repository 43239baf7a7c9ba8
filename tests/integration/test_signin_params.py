"""Per-request sign-in parameters on GET /auth/login (prompt, login_hint, max_age, acr_values,
ui_locales) against the real dev provider and Redis: each bad one a 400 invalid_request naming it with
nothing written, good ones received by the provider through PAR and the front channel alike."""

from urllib.parse import urljoin, urlsplit

import pytest
import requests

from dev import oidc_driver
from tests.helpers.pages import error_page_message
from tests.helpers.real_services import PASSWORD
from tests.helpers.signin import callback_path, start_login

pytestmark = pytest.mark.integration

ACR = "urn:dev:loa:1 urn:dev:loa:2"
GOOD = {
    "prompt": "login consent",
    "login_hint": "alice",
    "max_age": "300",
    "acr_values": "urn:dev:loa:2",
    "ui_locales": "fr-CA en",
}


def received(idp, endpoint: str) -> list[dict]:
    """The sign-in parameters of each request the provider got at `endpoint` (par or authorization)."""
    return [entry for entry in idp.stats().get("authorization_requests", []) if entry["endpoint"] == endpoint]


def pending_keys(app, keys_of) -> list[str]:
    """The keys of sign-ins (there should be none before a callback); the rate limiter's aside."""
    return [key for key in keys_of(app) if ":login" in key]


BAD = [
    ("prompt", "none login"),
    ("prompt", "bogus"),
    ("prompt", "login  consent"),
    ("prompt", "login login"),
    ("prompt", ""),
    ("login_hint", "a" * 257),
    ("login_hint", "alice\x00"),
    ("login_hint", "alice\nbob"),
    ("login_hint", ""),
    ("max_age", "-1"),
    ("max_age", "31536001"),
    ("max_age", "1.5"),
    ("max_age", "+5"),
    ("max_age", "\u0663"),  # an Arabic-Indic digit, which int() would take
    ("max_age", ""),
    ("acr_values", "urn:dev:loa:3"),
    ("acr_values", "urn:dev:loa:1 urn:dev:loa:3"),
    ("acr_values", ""),
    ("ui_locales", "en_US"),
    ("ui_locales", "fr " * 22),
    ("ui_locales", "x" * 65),
    ("ui_locales", "<script>"),
]


@pytest.mark.parametrize(("name", "value"), BAD)
def test_a_bad_sign_in_parameter_is_a_400_invalid_request_naming_it_with_nothing_written(
    make_app, idp, keys_of, name, value
):
    app = make_app(LOGIN_ACR_VALUES=ACR)
    client = app.test_client()
    idp.reset_stats()
    response = client.get("/auth/login", query_string={name: value, "return_to": "/x"})
    message = error_page_message(response)
    assert response.status_code == 400
    assert message.startswith(f"invalid_request: the sign-in parameter {name} ")
    assert pending_keys(app, keys_of) == []
    assert "Set-Cookie" not in response.headers
    assert received(idp, "par") == [] and idp.stats()["authorization"] == 0


def test_any_acr_values_are_refused_when_login_acr_values_is_empty(app, keys_of):
    response = app.test_client().get("/auth/login", query_string={"acr_values": "urn:dev:loa:1"})
    assert response.status_code == 400
    assert error_page_message(response) == (
        "invalid_request: the sign-in parameter acr_values is not accepted: this app allows none"
        " (LOGIN_ACR_VALUES is empty)"
    )
    assert pending_keys(app, keys_of) == []


def test_a_sign_in_parameter_sent_twice_is_refused(app):
    response = app.test_client().get("/auth/login?prompt=login&prompt=none")
    assert response.status_code == 400
    assert error_page_message(response) == "invalid_request: the sign-in parameter prompt must be sent once"


@pytest.mark.parametrize("value", ["login", "consent", "select_account", "create", "none", "login consent"])
def test_each_prompt_value_the_contract_names_is_accepted(make_app, value):
    # Front channel: the dev provider itself refuses select_account and create (a PAR refusal, 502).
    app = make_app(OIDC_PAR="off")
    assert app.test_client().get("/auth/login", query_string={"prompt": value}).status_code == 302


def test_the_parameters_reach_the_provider_through_par(make_app, idp):
    app = make_app(LOGIN_ACR_VALUES=ACR)
    idp.reset_stats()
    start_login_with(app.test_client(), GOOD)
    [pushed] = received(idp, "par")
    assert {name: pushed["params"].get(name) for name in GOOD} == GOOD


def test_the_parameters_reach_the_provider_through_the_front_channel(make_app, idp):
    app = make_app(LOGIN_ACR_VALUES=ACR, OIDC_PAR="off")
    idp.reset_stats()
    location = start_login_with(app.test_client(), GOOD)
    requests.get(location, allow_redirects=False, timeout=10)
    [authorization] = received(idp, "authorization")
    assert authorization["pushed"] is False
    assert {name: authorization["params"].get(name) for name in GOOD} == GOOD
    assert received(idp, "par") == []


def test_a_per_request_parameter_wins_over_the_same_name_in_oidc_auth_params(make_app, idp):
    app = make_app(OIDC_AUTH_PARAMS="prompt=consent&ui_locales=de")
    idp.reset_stats()
    start_login_with(app.test_client(), {"prompt": "login"})
    [pushed] = received(idp, "par")
    assert (pushed["params"]["prompt"], pushed["params"]["ui_locales"]) == ("login", "de")


def test_prompt_login_asks_for_the_password_again_despite_a_provider_session(app):
    http = requests.Session()  # the browser: its provider session outlives the first sign-in
    client = app.test_client()
    callback = oidc_driver.login_at_idp(http, start_login(client), "alice", PASSWORD)
    assert client.get(callback_path(callback)).status_code == 302
    # Without prompt the provider session signs in at once: straight back to the app.
    assert urlsplit(at_idp(http, start_login(app.test_client()))).path == "/auth/callback"
    forced = at_idp(http, start_login_with(app.test_client(), {"prompt": "login"}))
    assert 'name="password"' in forced


def at_idp(http: requests.Session, url: str) -> str:
    """Follows the provider's redirects from `url`: the URL it sends the browser back to the app with,
    or the page it stops at (its HTML)."""
    origin = urlsplit(url).netloc
    for _ in range(10):
        response = http.get(url, allow_redirects=False, timeout=10)
        if not response.is_redirect:
            return response.text
        url = urljoin(url, response.headers["Location"])
        if urlsplit(url).netloc != origin:
            return url
    raise AssertionError("too many redirects at the provider")


def start_login_with(client, params: dict) -> str:
    response = client.get("/auth/login", query_string=params)
    assert response.status_code == 302, response.get_data(as_text=True)
    return response.headers["Location"]
