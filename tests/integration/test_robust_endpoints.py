"""Endpoints missing from OpenID discovery (issue 19, point 1), against real dev providers that leave
`introspection_endpoint` and `revocation_endpoint` out of discovery (IDP_DISCOVERY_OMIT) and list
them only in RFC 8414 metadata at the RFC's own URL, or nowhere (IDP_SERVER_METADATA); over the
real Redis. Before: every introspected API call was 503 "the identity provider is unavailable",
and logout left the refresh token alive."""

import json
import time

import pytest
import requests

from dev import oidc_driver
from dev.services import free_port
from tests.helpers.real_services import (
    OPAQUE_CLIENT,
    delete_prefix,
    integration_env,
    introspection_settings,
    start_live_app,
    start_own_idp,
)
from tests.helpers.settings import CSRF
from tests.helpers.signin import signed_in_client, stored_session_tokens

pytestmark = pytest.mark.integration
OMITTED = "introspection_endpoint,revocation_endpoint"
INTROSPECT_PATH = "/protocol/openid-connect/token/introspect"
MESSAGE = "the identity provider lists no introspection_endpoint; set OIDC_INTROSPECTION_ENDPOINT"


@pytest.fixture(scope="session")
def rfc8414_only_idp(workdir, idp):
    """A provider whose two endpoints are only in its RFC 8414 metadata, at the RFC 8414 3.1 URL."""
    server, provider = start_own_idp(workdir, idp.app_ports, IDP_DISCOVERY_OMIT=OMITTED, IDP_SERVER_METADATA="rfc8414")
    yield provider
    server.stop()


@pytest.fixture(scope="session")
def undiscoverable_idp(workdir, idp):
    """A provider that lists the two endpoints nowhere (they answer all the same): only settings can name them."""
    server, provider = start_own_idp(workdir, idp.app_ports, IDP_DISCOVERY_OMIT=OMITTED, IDP_SERVER_METADATA="off")
    yield provider
    server.stop()


def introspecting(make_app, provider, **overrides):
    settings = introspection_settings(provider)
    return make_app(provider, **{**settings, **overrides})


def read_profile(client, provider):
    token = provider.user_tokens("alice", client_id=OPAQUE_CLIENT)["access_token"]
    return client.get("/api/v1/me/profile", headers={"Authorization": f"Bearer {token}"})


def test_the_dev_providers_leave_the_endpoints_out_of_discovery(rfc8414_only_idp, undiscoverable_idp):
    for provider in (rfc8414_only_idp, undiscoverable_idp):
        discovery = oidc_driver.discover(provider.issuer)
        assert "token_endpoint" in discovery
        assert not {"introspection_endpoint", "revocation_endpoint"} & set(discovery)


def test_introspection_listed_only_in_rfc_8414_metadata_serves_api_calls(make_app, rfc8414_only_idp):
    client = introspecting(make_app, rfc8414_only_idp).test_client()
    rfc8414_only_idp.reset_stats()
    response = read_profile(client, rfc8414_only_idp)
    assert (response.status_code, response.json["data"]["handle"]) == (200, "@alice")
    assert rfc8414_only_idp.stats()["server_metadata"] == 1  # the RFC 8414 3.1 URL answered at once
    assert read_profile(client, rfc8414_only_idp).status_code == 200
    assert rfc8414_only_idp.stats()["server_metadata"] == 1  # cached: no provider call per request
    assert client.get("/readyz").json["identity_provider"] == "ok"


def test_introspection_listed_nowhere_works_with_the_explicit_setting(make_app, undiscoverable_idp):
    endpoint = undiscoverable_idp.issuer + INTROSPECT_PATH
    client = introspecting(make_app, undiscoverable_idp, OIDC_INTROSPECTION_ENDPOINT=endpoint).test_client()
    response = read_profile(client, undiscoverable_idp)
    assert (response.status_code, response.json["data"]["handle"]) == (200, "@alice")
    assert client.get("/readyz").status_code == 200


def test_introspection_listed_nowhere_without_the_setting_is_a_503_naming_it_not_an_outage(
    make_app, undiscoverable_idp
):
    client = introspecting(make_app, undiscoverable_idp).test_client()
    ready = client.get("/readyz")
    assert (ready.status_code, ready.json) == (
        503,
        {"status": "not ready", "redis": "ok", "identity_provider": MESSAGE},
    )
    response = read_profile(client, undiscoverable_idp)
    assert (response.status_code, response.json["error"]) == (503, {"code": "unavailable", "message": MESSAGE})
    assert "the identity provider is unavailable" not in response.get_data(as_text=True)


def test_logout_revokes_the_refresh_token_at_a_revocation_endpoint_only_in_rfc_8414_metadata(
    make_app, rfc8414_only_idp
):
    app = make_app(rfc8414_only_idp)
    client = signed_in_client(app, "alice", requests.Session())
    revoked = stored_session_tokens(app, client)["refresh_token"]
    rfc8414_only_idp.reset_stats()
    assert client.post("/auth/logout", headers=CSRF).status_code == 200
    assert rfc8414_only_idp.stats()["revocation"] == 1
    answer = oidc_driver.refresh(rfc8414_only_idp.issuer, "profile-poke-web", revoked)
    assert (answer.status_code, answer.json()["error"]) == (400, "invalid_grant")


def test_logout_revokes_at_the_revocation_endpoint_setting_when_the_provider_lists_none(make_app, undiscoverable_idp):
    endpoint = undiscoverable_idp.issuer + "/protocol/openid-connect/revoke"
    app = make_app(undiscoverable_idp, OIDC_REVOCATION_ENDPOINT=endpoint)
    client = signed_in_client(app, "alice", requests.Session())
    revoked = stored_session_tokens(app, client)["refresh_token"]
    assert client.post("/auth/logout", headers=CSRF).status_code == 200
    answer = oidc_driver.refresh(undiscoverable_idp.issuer, "profile-poke-web", revoked)
    assert (answer.status_code, answer.json()["error"]) == (400, "invalid_grant")


def test_without_any_revocation_endpoint_logout_warns_once_naming_the_setting(make_app, undiscoverable_idp, capfd):
    app = make_app(undiscoverable_idp)
    for _ in range(2):
        client = signed_in_client(app, "alice", requests.Session())
        assert client.post("/auth/logout", headers=CSRF).status_code == 200
    lines = [json.loads(line) for line in capfd.readouterr().out.splitlines() if line.startswith("{")]
    assert [line["message"] for line in lines if "OIDC_REVOCATION_ENDPOINT" in line["message"]] == [
        "the identity provider lists no revocation_endpoint and OIDC_REVOCATION_ENDPOINT is not set; doing without it"
    ]


def test_gunicorn_logs_the_missing_setting_at_start_up_and_readyz_names_it(undiscoverable_idp, redis_url, workdir):
    env = integration_env(
        undiscoverable_idp,
        redis_url,
        ACCESS_TOKEN_VALIDATION="introspection",
        INTROSPECTION_CLIENT_ID="profile-poke-service",
        INTROSPECTION_CLIENT_SECRET=undiscoverable_idp.secret,
    )
    server, live = start_live_app(env, free_port(), workdir, workers=1)
    try:
        ready = requests.get(f"{live.url}/readyz", timeout=5)
        assert (ready.status_code, ready.json()["identity_provider"]) == (503, MESSAGE)
        deadline = time.monotonic() + 10
        while f"misconfigured: {MESSAGE}" not in live.log_path.read_text() and time.monotonic() < deadline:
            time.sleep(0.1)
        logged = [json.loads(line) for line in live.log_path.read_text().splitlines() if "misconfigured" in line]
        assert [(line["level"], line["message"]) for line in logged] == [("error", f"misconfigured: {MESSAGE}")]
    finally:
        server.stop()
        delete_prefix(redis_url, env["REDIS_KEY_PREFIX"])
