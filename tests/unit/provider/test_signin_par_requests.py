"""The pushed authorization request (RFC 9126) as the app sends and judges it, against a stub issuer
serving real HTTP: the pushed form, the two-parameter redirect, and every answer that is not a 201
with a request_uri refused as a 502 with no fallback, logged with why and counted by outcome."""

import logging
import time

import pytest
from prometheus_client import REGISTRY

from app import metrics
from app.errors import LoginFailed, ProviderUnavailable
from app.provider import Provider, PublicClient
from app.provider.authorization import AuthorizationRequests, code_challenge
from tests.helpers.stub_issuer import StubIssuer

SCOPES = "openid svc:profile.private"
REQUEST_URI = "urn:ietf:params:oauth:request_uri:abc"
UNAVAILABLE = "sign-in unavailable: the identity provider did not accept the sign-in request"
PAR_ENDPOINT = "pushed_authorization_request_endpoint"
PAR_URL = "https://idp.example/par"


class ParIssuer(StubIssuer):
    """The stub issuer with a PAR endpoint in discovery (`listed` replaces members of its discovery, None
    dropping one) that answers `par_answer` (status, JSON body or None, and headers when a third member
    is given) and remembers each pushed form; `/par-moved` is a second PAR endpoint that accepts every
    form it is sent (`moved`)."""

    def __init__(self):
        super().__init__()
        self.par_answer: tuple = (201, {"request_uri": REQUEST_URI, "expires_in": 60})
        self.par_delay = 0.0
        self.listed: dict = {}
        self.pushed: list[dict] = []
        self.moved: list[dict] = []
        # The timeout test hangs up on a held request: its broken pipe is expected, not worth a trace.
        self._server.handle_error = lambda request, address: None

    def discovery(self) -> dict:
        document = {**super().discovery(), PAR_ENDPOINT: f"{self.issuer}/par", **self.listed}
        return {name: value for name, value in document.items() if value is not None}

    def answer(self, method, path, params, headers):
        if method == "POST" and path.endswith("/par"):
            self.pushed.append({**params, "authorization": headers.get("Authorization")})
            time.sleep(self.par_delay)
            status, body, *answer_headers = self.par_answer
            return status, (answer_headers or [{}])[0], body
        if method == "POST" and path.endswith("/par-moved"):
            self.moved.append(params)
            return 201, {}, {"request_uri": "urn:ietf:params:oauth:request_uri:moved", "expires_in": 60}
        return super().answer(method, path, params, headers)


@pytest.fixture(scope="module")
def par_issuer():
    issuer = ParIssuer()
    yield issuer
    issuer.stop()


@pytest.fixture
def issuer(par_issuer):
    par_issuer.par_delay, par_issuer.pushed, par_issuer.moved = 0.0, [], []
    par_issuer.listed = {}
    par_issuer.par_answer = (201, {"request_uri": REQUEST_URI, "expires_in": 60})
    return par_issuer


def url_of(issuer, par: str = "auto", timeout: float = 2, **params) -> str:
    provider = Provider(issuer.issuer, timeout=2, discovery_ttl=60, refetch_interval=10)
    authorization = AuthorizationRequests(provider, PublicClient("web", SCOPES, timeout=timeout), par=par)
    return authorization.url(redirect_uri="https://app/cb", state="s", nonce="n", verifier="v" * 43, params=params)


def test_the_pushed_form_holds_every_parameter_and_no_secret_and_the_redirect_only_two(issuer):
    url = url_of(issuer, login_hint="alice")
    assert url == f"{issuer.issuer}/auth?client_id=web&request_uri=urn%3Aietf%3Aparams%3Aoauth%3Arequest_uri%3Aabc"
    assert issuer.pushed == [
        {
            "client_id": "web",
            "response_type": "code",
            "redirect_uri": "https://app/cb",
            "scope": SCOPES,
            "state": "s",
            "nonce": "n",
            "code_challenge": code_challenge("v" * 43),
            "code_challenge_method": "S256",
            "login_hint": "alice",
            "authorization": None,
        }
    ]


@pytest.mark.parametrize(
    "answer",
    [
        (400, {"error": "invalid_request"}),
        (401, {"error": "invalid_client"}),
        (500, {"error": "server_error"}),
        (503, None),
        (200, {"request_uri": REQUEST_URI}),
        (202, {"request_uri": REQUEST_URI}),
        (201, {"expires_in": 60}),
        (201, {"request_uri": 7}),
        (201, {"request_uri": ""}),
        (201, {"request_uri": "u" * 2049}),
        (201, ["not", "an", "object"]),
        (201, None),
    ],
    ids=[
        *("400", "401", "500", "503 without a body", "200", "202", "201 without request_uri"),
        *("201 with a number", "201 with an empty one", "201 with a 2049-char one", "201 with a list", "201 empty"),
    ],
)
def test_an_answer_other_than_a_201_with_a_request_uri_is_a_502_with_no_fallback(issuer, answer):
    issuer.par_answer = answer
    with pytest.raises(LoginFailed) as refused:
        url_of(issuer)
    assert (refused.value.status, refused.value.message, refused.value.reason) == (502, UNAVAILABLE, "par_failed")


def test_a_request_uri_of_2048_characters_is_taken(issuer):
    issuer.par_answer = (201, {"request_uri": "u" * 2048, "expires_in": 60})
    assert url_of(issuer) == f"{issuer.issuer}/auth?client_id=web&request_uri={'u' * 2048}"


@pytest.mark.parametrize("status", [307, 308])
def test_a_par_endpoint_that_redirects_is_a_502_and_the_form_goes_nowhere_else(issuer, status):
    # Followed, a 307 or 308 would post the whole form again to wherever the Location points.
    issuer.par_answer = (status, None, {"Location": f"{issuer.issuer}/par-moved"})
    with pytest.raises(LoginFailed) as refused:
        url_of(issuer)
    assert (refused.value.status, refused.value.message, refused.value.reason) == (502, UNAVAILABLE, "par_failed")
    assert (len(issuer.pushed), issuer.moved) == (1, [])


# answer -> what the warning says of it: the status, the reason or the exception class, never the body
WHY = {
    "400": ((400, {"error": "invalid_request", "error_description": "state=s is bad"}), "refused (http_400)"),
    "499": ((499, {"error": "invalid_request"}), "refused (http_499)"),
    "500": ((500, {"error": "server_error", "error_description": "state=s is bad"}), "answered 500"),
    "302": ((302, None, {"Location": "https://elsewhere.example/"}), "answered 302"),
    "201 without a body": ((201, None), "a 201 without JSON"),
    "201 without request_uri": ((201, {"expires_in": 60}), "a 201 without a request_uri"),
    "201 with a 2049-char one": ((201, {"request_uri": "u" * 2049}), "a 201 without a request_uri"),
}


@pytest.mark.parametrize("case", list(WHY))
def test_a_failed_push_is_logged_with_why_and_never_the_answers_body(issuer, caplog, case):
    issuer.par_answer, why = WHY[case]
    with caplog.at_level(logging.WARNING, logger="app.provider.authorization"), pytest.raises(LoginFailed):
        url_of(issuer)
    assert [record.getMessage() for record in caplog.records] == [f"pushed authorization request failed: {why}"]


# answer -> the outcome /metrics counts the call under (endpoint `par`): a 4xx is the provider's refusal
OUTCOMES = {"201": ((201, {"request_uri": REQUEST_URI}), "ok")}
OUTCOMES.update({str(status): ((status, None), "refused") for status in (400, 401, 499)})
OUTCOMES.update({str(status): ((status, None), "error") for status in (302, 500, 503)})


@pytest.mark.parametrize("case", list(OUTCOMES))
def test_each_push_is_counted_as_a_provider_call_by_its_outcome(issuer, monkeypatch, case):
    monkeypatch.setattr(metrics, "_enabled", True)  # what a METRICS_TOKEN turns on, for this test only
    issuer.par_answer, outcome = OUTCOMES[case]

    def count() -> float:
        return REGISTRY.get_sample_value("pp_idp_requests_total", {"endpoint": "par", "outcome": outcome}) or 0.0

    before = count()
    if outcome == "ok":
        url_of(issuer)
    else:
        with pytest.raises(LoginFailed):
            url_of(issuer)
    assert count() - before == 1


def test_a_par_endpoint_slower_than_the_timeout_is_a_502(issuer, caplog):
    issuer.par_delay = 1.0
    started = time.monotonic()
    with caplog.at_level(logging.WARNING, logger="app.provider.authorization"), pytest.raises(LoginFailed) as refused:
        url_of(issuer, timeout=0.3)
    assert refused.value.status == 502 and time.monotonic() - started < 0.9
    assert [record.getMessage() for record in caplog.records] == ["pushed authorization request failed: ReadTimeout"]


@pytest.mark.parametrize("listed", [None, [PAR_URL]], ids=["none", "a list, not a URL"])
def test_par_require_without_an_endpoint_in_discovery_is_a_502_naming_the_setting(issuer, listed):
    issuer.listed = {PAR_ENDPOINT: listed}
    with pytest.raises(LoginFailed) as refused:
        url_of(issuer, par="require")
    assert (refused.value.status, refused.value.reason) == (502, "par_failed")
    assert refused.value.message == (
        "sign-in unavailable: OIDC_PAR=require, but the identity provider offers no pushed authorization requests"
    )
    assert issuer.pushed == []


def test_par_auto_uses_the_front_channel_when_discovery_lists_a_par_endpoint_that_is_no_url(issuer):
    issuer.listed = {PAR_ENDPOINT: [PAR_URL]}
    assert "state=s" in url_of(issuer) and issuer.pushed == []


@pytest.mark.parametrize("par", ["off", "auto"])
def test_an_authorization_endpoint_with_a_query_keeps_it_and_gets_the_parameters_after_an_ampersand(issuer, par):
    issuer.listed = {"authorization_endpoint": f"{issuer.issuer}/auth?tenant=a"}
    assert url_of(issuer, par=par).startswith(f"{issuer.issuer}/auth?tenant=a&client_id=web&")


def test_discovery_without_an_authorization_endpoint_is_the_provider_unavailable(issuer):
    issuer.listed = {"authorization_endpoint": None}
    with pytest.raises(ProviderUnavailable) as raised:
        url_of(issuer)
    # what the operator's "identity provider unavailable: ..." line says
    assert str(raised.value) == "discovery lists no authorization_endpoint"
    assert issuer.pushed == []


def test_par_off_uses_the_front_channel_even_when_discovery_names_an_endpoint(issuer):
    assert "state=s" in url_of(issuer, par="off") and issuer.pushed == []


def test_an_unknown_par_mode_is_refused_at_construction(issuer):
    provider = Provider(issuer.issuer, timeout=2, discovery_ttl=60, refetch_interval=10)
    with pytest.raises(ValueError, match=r"^OIDC_PAR must be one of auto, require, off$"):
        AuthorizationRequests(provider, PublicClient("web", SCOPES, timeout=1), par="sometimes")


def test_a_prompt_value_discovery_does_not_list_is_a_400_naming_it_and_nothing_is_pushed(issuer):
    issuer.listed = {"prompt_values_supported": ["none", "login", "consent"]}
    with pytest.raises(LoginFailed) as refused:
        url_of(issuer, prompt="login select_account create")
    assert (refused.value.status, refused.value.code, refused.value.reason) == (400, "invalid_request", "bad_request")
    assert refused.value.message == (
        "invalid_request: the sign-in parameter prompt asks for select_account create, which the identity"
        " provider does not support"
    )
    assert issuer.pushed == []


@pytest.mark.parametrize("listed", [["none", "login", "consent", "select_account"], None])
def test_a_prompt_value_discovery_lists_or_any_when_it_lists_none_is_pushed(issuer, listed):
    issuer.listed = {"prompt_values_supported": listed}
    url_of(issuer, prompt="select_account")
    assert [form["prompt"] for form in issuer.pushed] == ["select_account"]
