"""Refusal is not an outage: how the BFF reads the token endpoint on refresh (and what its log says of
an outage), what it sends the provider (extra authorization parameters, RFC 8707 `resource`, the logout
`state`), and a revocation that fails, against the stub provider's real HTTP endpoints."""

import json
import socket
from urllib.parse import parse_qsl, urlsplit

import pytest
import requests
from prometheus_client import REGISTRY

from app import metrics
from tests.helpers.apps import app_with_alice
from tests.helpers.clock import finishes_within
from tests.helpers.settings import CSRF


def signed_in(op, redis, **env):
    """A test client signed in through the stub provider, holding an access token that is already dead
    (one second of life, less than the second `still_valid` asks for), so the next API call must refresh
    it and an outage cannot fall back on it."""
    app = app_with_alice(op.issuer, redis, **env)
    client = app.test_client()
    op.expires_in = 1
    login = client.get("/auth/login")
    redirect = requests.get(login.headers["Location"], allow_redirects=False, timeout=5).headers["Location"]
    parts = urlsplit(redirect)
    assert client.get(f"{parts.path}?{parts.query}").status_code == 302
    return client


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def token_calls(outcome: str) -> float:
    """How many token endpoint calls /metrics counted with `outcome` so far."""
    return REGISTRY.get_sample_value("pp_idp_requests_total", {"endpoint": "token", "outcome": outcome}) or 0.0


def refreshes(outcome: str) -> float:
    """How many refreshes /metrics counted with `outcome` so far."""
    return REGISTRY.get_sample_value("pp_refreshes_total", {"outcome": outcome}) or 0.0


# case -> (status, body), and the reason (and the code as sent, when unlisted) its refresh.refused names
REFUSALS = {
    "400 invalid_grant": (400, {"error": "invalid_grant", "error_description": "token expired"}),
    "400 without a body": (400, None),
    "400 with another error": (400, {"error": "invalid_request"}),
    "400 with a vendor's own error": (400, {"error": "session_not_active"}),
    "401 invalid_client": (401, {"error": "invalid_client"}),
    "401 without a body": (401, None),
    "400 with a number for its error": (400, {"error": 7}),
    "400 with a list for a body": (400, ["invalid_grant"]),
    "400 with a vendor's code in markup": (400, {"error": "weird <b>code</b>"}),
    "200 invalid_grant": (200, {"error": "invalid_grant"}),  # Authlib raises an error body whatever the status
}
TOLD = {
    "400 invalid_grant": ("invalid_grant", None),
    "400 without a body": ("no_error_code", None),
    "400 with another error": ("invalid_request", None),
    "400 with a vendor's own error": ("unlisted_error", "session_not_active"),
    "401 invalid_client": ("invalid_client", None),
    "401 without a body": ("no_error_code", None),
    "400 with a number for its error": ("no_error_code", None),
    "400 with a list for a body": ("no_error_code", None),
    "400 with a vendor's code in markup": ("unlisted_error", "weirdbcodeb"),
    "200 invalid_grant": ("invalid_grant", None),
}


@pytest.mark.parametrize("case", list(REFUSALS))
def test_a_refused_refresh_ends_the_session_with_401(op, fake_redis, audit_lines, monkeypatch, case):
    monkeypatch.setattr(metrics, "_enabled", True)  # what a METRICS_TOKEN turns on, for this test only
    client = signed_in(op, fake_redis)
    op.token_failure = REFUSALS[case]
    audit_lines.lines.clear()
    before = (token_calls("refused"), refreshes("rejected"))
    response = client.get("/api/v1/me/profile", headers=CSRF)
    assert (token_calls("refused") - before[0], refreshes("rejected") - before[1]) == (1, 1)
    assert response.status_code == 401
    assert response.json["error"] == {"code": "unauthorized", "message": "the session has ended; sign in again"}
    assert op.token_requests[-1]["grant_type"] == "refresh_token"
    refused, ended = audit_lines.events()
    assert ((refused["event"], refused["reason"]), (ended["event"], ended["cause"])) == (
        ("refresh.refused", TOLD[case][0]),
        ("session.ended", TOLD[case][0]),
    )
    assert refused.get("error") == TOLD[case][1]
    assert client.get("/auth/session").json == {"authenticated": False}
    assert fake_redis.keys("*:tokens:*") == []


def fresh_tokens(op) -> dict:
    """A token response a refresh can use: a new access token the API accepts, and a new refresh token."""
    access_token = op.sign(op.access_claims(client_id="profile-poke-web", jti="refreshed"))
    return {"access_token": access_token, "token_type": "Bearer", "expires_in": 300, "refresh_token": "rt-rotated"}


def outages(lines) -> list[str]:
    """The messages of the log lines that say why the provider was taken for unavailable."""
    messages = [json.loads(line)["message"] for line in lines.lines]
    return [message for message in messages if message.startswith("identity provider unavailable")]


def test_a_refresh_answered_200_with_tokens_lets_the_call_through_and_keeps_the_session(op, fake_redis, monkeypatch):
    monkeypatch.setattr(metrics, "_enabled", True)  # what a METRICS_TOKEN turns on, for this test only
    before = token_calls("ok")
    client = signed_in(op, fake_redis)
    assert token_calls("ok") - before == 1  # the code exchange
    before_refreshed = refreshes("refreshed")
    op.token_failure = (200, fresh_tokens(op))  # every answer of the token endpoint: this one
    assert client.get("/api/v1/me/profile", headers=CSRF).status_code == 200
    assert op.token_requests[-1]["grant_type"] == "refresh_token"
    assert client.get("/auth/session").json["authenticated"] is True
    assert (token_calls("ok") - before, refreshes("refreshed") - before_refreshed) == (2, 1)


OUTAGES = {
    "500": lambda op, silent: setattr(op, "token_failure", (500, {"error": "server_error"})),
    "503 without a body": lambda op, silent: setattr(op, "token_failure", (503, None)),
    # Only a 2xx carries tokens, even when a 3xx's body holds some.
    "300 with tokens": lambda op, silent: setattr(op, "token_failure", (300, fresh_tokens(op))),
    "200 with another error": lambda op, silent: setattr(op, "token_failure", (200, {"error": "server_error"})),
    "timeout": lambda op, silent: setattr(op, "token_endpoint", f"http://127.0.0.1:{silent}/token"),
    "connection refused": lambda op, silent: setattr(op, "token_endpoint", f"http://127.0.0.1:{closed_port()}/token"),
}
# case -> what the log says of it: the status or the exception's class, never a body
LOGGED = {
    "500": "token endpoint answered 500",
    "503 without a body": "token endpoint answered 503",
    "300 with tokens": "token endpoint answered 300",
    "200 with another error": "refresh refused: server_error",
    "timeout": "token endpoint: ReadTimeout",
    "connection refused": "token endpoint: ConnectionError",
}


@pytest.mark.parametrize("case", list(OUTAGES))
def test_a_provider_outage_on_refresh_is_503_and_the_session_stays(op, fake_redis, audit_lines, case):
    # DISCOVERY_TTL=0: a moved token endpoint is seen at once. IDP_TIMEOUT=1: the sign-in's calls to the
    # stub answer well within it even on a busy machine, and the silent token endpoint never answers.
    client = signed_in(op, fake_redis, IDP_TIMEOUT="1", DISCOVERY_TTL="0")
    with socket.socket() as silent:  # accepts connections (the kernel's backlog) and never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        OUTAGES[case](op, silent.getsockname()[1])
        # Bounded here: a refresh without the timeout would hang until mutmut's own limit.
        response = finishes_within(5, lambda: client.get("/api/v1/me/profile", headers=CSRF))
    assert response.status_code == 503
    assert response.json["error"]["code"] == "unavailable"
    assert outages(audit_lines) == [f"identity provider unavailable: {LOGGED[case]}"]
    assert client.get("/auth/session").json["authenticated"] is True
    assert fake_redis.keys("*:tokens:*") != []


MALFORMED = {
    "no access token": {"token_type": "Bearer", "refresh_token": "rt-rotated", "expires_in": 300},
    "a numeric access token": {"access_token": 42, "token_type": "Bearer", "expires_in": 300},
    "a word for expires_in": {"access_token": "at-2", "expires_in": "soon", "expires_at": 2_000_000_000},
    "a list for expires_in": {"access_token": "at-2", "expires_in": [300]},
    "a list for a body": ["at-2"],
}
SENT = {
    "no access token": "no access token",
    "a numeric access token": "no access token",
    "a word for expires_in": "an expires_in that is not a number of seconds",
    "a list for expires_in": "an expires_in that is not a number of seconds",
    "a list for a body": "a token response that is not a JSON object",
}


@pytest.mark.parametrize("case", list(MALFORMED))
def test_a_malformed_refresh_answer_is_503_and_the_session_stays(op, fake_redis, audit_lines, case):
    client = signed_in(op, fake_redis)
    op.token_failure = (200, MALFORMED[case])
    response = client.get("/api/v1/me/profile", headers=CSRF)
    assert (response.status_code, response.json["error"]) == (
        503,
        {"code": "unavailable", "message": "the identity provider is unavailable"},
    )
    assert outages(audit_lines) == [f"identity provider unavailable: token endpoint sent {SENT[case]}"]
    assert op.token_requests[-1]["grant_type"] == "refresh_token"
    assert client.get("/auth/session").json["authenticated"] is True
    assert fake_redis.keys("*:tokens:*") != []


def test_auth_params_go_on_the_authorization_request_and_resource_on_the_token_request(op, fake_redis):
    params = "audience=https%3A%2F%2Fapi.example&resource=https%3A%2F%2Fapi.example%2F&state=ignored"
    client = signed_in(op, fake_redis, OIDC_AUTH_PARAMS=params)
    [authorization] = op.authorizations
    assert authorization["audience"] == "https://api.example"
    assert authorization["resource"] == "https://api.example/"
    assert authorization["state"] != "ignored"  # the flow's own parameters win
    [exchange] = op.token_requests
    assert exchange["resource"] == "https://api.example/" and "audience" not in exchange
    op.token_failure = (400, {"error": "invalid_grant"})
    client.get("/api/v1/me/profile", headers=CSRF)
    assert op.token_requests[-1]["grant_type"] == "refresh_token"
    assert op.token_requests[-1]["resource"] == "https://api.example/"


def test_auth_params_naming_the_flows_own_parameters_are_ignored_with_a_warning(op, fake_redis, caplog):
    client = signed_in(op, fake_redis, OIDC_AUTH_PARAMS="code_verifier=operator-set&state=x&audience=api")
    [authorization] = op.authorizations
    assert "code_verifier" not in authorization and authorization["audience"] == "api"
    [exchange] = op.token_requests
    assert exchange["code_verifier"] != "operator-set"  # the stub checked it against the challenge
    assert client.get("/auth/session").json["authenticated"] is True
    warnings = [record.getMessage() for record in caplog.records if record.name == "app.provider.authorization"]
    assert warnings == ["OIDC_AUTH_PARAMS: code_verifier, state ignored, the sign-in flow sets them itself"]


def logout_query(client) -> dict:
    url = client.post("/auth/logout", headers=CSRF).json["logout_url"]
    return dict(parse_qsl(urlsplit(url).query))


def test_the_logout_url_carries_a_fresh_random_state(op, fake_redis):
    first = logout_query(signed_in(op, fake_redis))
    second = logout_query(signed_in(op, fake_redis))
    assert len(first["state"]) >= 16 and first["state"] != second["state"]
    assert "logout_uri" not in first


def test_the_cognito_profile_sends_logout_uri_as_well(op, fake_redis):
    query = logout_query(signed_in(op, fake_redis, OIDC_PROVIDER_PROFILE="cognito", API_CLIENT_IDS="profile-poke-web"))
    assert query["logout_uri"] == query["post_logout_redirect_uri"] == "http://127.0.0.1:8000/"
    assert query["client_id"] == "profile-poke-web"


def test_a_failed_revocation_is_logged_by_its_class_only_counted_and_sign_out_goes_on(
    op, fake_redis, audit_lines, monkeypatch
):
    monkeypatch.setattr(metrics, "_enabled", True)  # what a METRICS_TOKEN turns on, for this test only
    labels = {"endpoint": "revocation", "outcome": "error"}
    before = REGISTRY.get_sample_value("pp_idp_requests_total", labels) or 0.0
    client = signed_in(op, fake_redis)
    op.revocation_status = 503
    response = client.post("/auth/logout", headers=CSRF)
    assert response.status_code == 200 and client.get("/auth/session").json == {"authenticated": False}
    [revoked] = op.revocations
    messages = [json.loads(line)["message"] for line in audit_lines.lines]
    assert [message for message in messages if "revocation" in message] == [
        "refresh token revocation failed: HTTPError"
    ]
    assert not [line for line in audit_lines.lines if revoked["token"] in line]
    assert REGISTRY.get_sample_value("pp_idp_requests_total", labels) - before == 1
