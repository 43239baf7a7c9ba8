"""The OpenAPI document takes what it describes from the app, not from a copy."""


def test_the_session_scheme_names_the_configured_cookie(unit_app, unit_client):
    document = unit_client.get("/api/v1/openapi.json").json
    assert document["components"]["securitySchemes"]["session"]["name"] == unit_app.config["SESSION_COOKIE_NAME"]
    assert document["servers"] == [{"url": "/api/v1"}]
