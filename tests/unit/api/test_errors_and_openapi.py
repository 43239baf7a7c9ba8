"""Envelopes for the unexpected, headers on every response, and the OpenAPI document."""

import pytest

from app import create_app
from config import Config
from tests.helpers.settings import app_env


def test_an_unexpected_failure_is_a_500_envelope_without_a_trace(stub_issuer, fake_redis):
    app = create_app(Config(app_env(stub_issuer.issuer)), redis=fake_redis)

    @app.get("/api/v1/explode")
    def explode():
        raise RuntimeError("secret internals")

    response = app.test_client().get("/api/v1/explode")
    assert response.status_code == 500
    assert response.json == {"error": {"code": "internal_error", "message": "something went wrong"}}
    assert "secret internals" not in response.get_data(as_text=True)


def test_security_headers_are_on_every_page(unit_client):
    for path in ("/", "/api/v1/users/nobody", "/auth/session", "/static/demo.js"):
        headers = unit_client.get(path).headers
        csp = headers["Content-Security-Policy"]
        assert "script-src 'self'" in csp and "unsafe-inline" not in csp and "frame-ancestors 'none'" in csp
        assert headers["X-Content-Type-Options"] == "nosniff"
        assert headers["Referrer-Policy"] == "no-referrer"


@pytest.mark.parametrize("path", ["/auth/session", "/api/v1/me/profile"])
def test_private_responses_are_not_stored(unit_client, path):
    assert unit_client.get(path).headers["Cache-Control"] == "no-store"


def test_the_openapi_document_describes_every_operation_and_status(unit_client):
    document = unit_client.get("/api/v1/openapi.json").json
    assert document["openapi"] == "3.1.0"
    paths = document["paths"]
    assert set(paths["/api/v1/pokes"]["post"]["responses"]) >= {"200", "400", "401", "403", "413", "415", "500", "503"}
    assert set(paths["/api/v1/me/profile"]["get"]["responses"]) >= {"200", "401", "403", "500", "503"}
    not_found = paths["/api/v1/users/{username}"]["get"]["responses"]["404"]
    assert list(not_found["content"]) == ["text/plain"]
    schemes = document["components"]["securitySchemes"]
    assert schemes["bearer"]["type"] == "openIdConnect"
    assert schemes["bearer"]["openIdConnectUrl"].endswith("/.well-known/openid-configuration")
    assert {"bearer": ["svc:interact.poke"]} in paths["/api/v1/pokes"]["post"]["security"]
    assert set(document["components"]["schemas"]) >= {"PokeRequest", "PokeResult", "ErrorEnvelope", "PublicProfile"}
    assert document["components"]["schemas"]["PokeRequest"]["additionalProperties"] is False


@pytest.mark.parametrize(
    ("seconds", "text"), [(86400, "24h0m0s"), (86398, "23h59m58s"), (303, "0h5m3s"), (1, "0h0m1s")]
)
def test_durations_always_show_hours_minutes_and_seconds(seconds, text):
    from app.api.pokes import format_duration

    assert format_duration(seconds) == text


def test_the_openapi_document_declares_the_dpop_scheme_beside_bearer(unit_client):
    document = unit_client.get("/api/v1/openapi.json").json
    assert document["components"]["securitySchemes"]["dpop"]["type"] == "http"
    assert document["components"]["securitySchemes"]["dpop"]["scheme"] == "DPoP"
    assert document["paths"]["/api/v1/me/profile"]["get"]["security"] == [
        {"bearer": ["svc:profile.private"]},
        {"dpop": ["svc:profile.private"]},
        {"session": [], "csrf": []},
    ]
    assert document["paths"]["/api/v1/users/{username}"]["get"]["security"] == [{}, {"bearer": []}, {"dpop": []}]


def test_each_operation_shows_the_scope_its_view_declares(stub_issuer, fake_redis):
    # The scope names are settings: the view's declaration is what the document reads, not a copy.
    env = app_env(stub_issuer.issuer, PROFILE_SCOPE="api://pp/Profile.Read", POKE_SCOPE="api://pp/Poke", DPOP="off")
    document = create_app(Config(env), redis=fake_redis).test_client().get("/api/v1/openapi.json").json
    assert document["paths"]["/api/v1/me/profile"]["get"]["security"] == [
        {"bearer": ["api://pp/Profile.Read"]},
        {"session": [], "csrf": []},
    ]
    assert document["paths"]["/api/v1/pokes"]["post"]["security"] == [
        {"bearer": ["api://pp/Poke"]},
        {"session": [], "csrf": []},
    ]
    assert "dpop" not in document["components"]["securitySchemes"]
