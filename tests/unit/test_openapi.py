"""The OpenAPI document describes both front doors, /api/v1 and /auth, as the app has them: a valid
OpenAPI 3.1 document, every route the app registers there and nothing else, each operation named after
its view, the credentials by the names the app uses. tests/integration/test_fuzz.py calls each
operation as a generated client would."""

import copy
import re

import pytest
import schemathesis
from jsonschema_rs import ValidationError

from app import create_app
from app.prefixes import API_PREFIX, AUTH_PREFIX
from app.security import CSRF_HEADER
from config import Config
from tests.helpers.settings import app_env

ROUTE_PARAMETER = re.compile(r"<(?:[^:<>]+:)?([^<>]+)>")  # werkzeug's <converter:name>, OpenAPI's {name}
IMPLIED = {"HEAD", "OPTIONS"}  # Flask answers these for every GET route by itself


def document_of(app) -> dict:
    return app.test_client().get("/api/v1/openapi.json").json


@pytest.fixture(
    params=[{}, {"DPOP": "off", "LOGIN_ACR_VALUES": "urn:a urn:b", "STEP_UP_ACR": "urn:b", "STEP_UP_MAX_AGE": "300"}],
    ids=["defaults", "dpop-off-acr-step-up"],
)
def app(request, stub_issuer, fake_redis):
    return create_app(Config(app_env(stub_issuer.issuer, **request.param)), redis=fake_redis)


def test_the_document_is_valid_openapi_3_1(app):
    document = document_of(app)
    assert document["openapi"] == "3.1.0"
    schemathesis.openapi.from_dict(document).validate()
    # The validator is no formality: an answer without its description is refused.
    broken = copy.deepcopy(document)
    del broken["paths"][f"{AUTH_PREFIX}/login"]["get"]["responses"]["302"]["description"]
    with pytest.raises(ValidationError, match="description"):
        schemathesis.openapi.from_dict(broken).validate()


def test_every_route_under_the_api_and_auth_is_in_the_document_and_nothing_else(app):
    registered = {
        (ROUTE_PARAMETER.sub(r"{\1}", rule.rule), method.lower()): rule.endpoint.rpartition(".")[2]
        for rule in app.url_map.iter_rules()
        if rule.rule.startswith((f"{API_PREFIX}/", f"{AUTH_PREFIX}/"))
        for method in rule.methods - IMPLIED
    }
    documented = {
        (path, method): operation["operationId"]
        for path, operations in document_of(app)["paths"].items()
        for method, operation in operations.items()
    }
    assert documented == registered
    assert len(registered) == 13


def test_the_credentials_are_named_as_the_app_reads_them(app):
    document = document_of(app)
    schemes = document["components"]["securitySchemes"]
    assert schemes["session"] == {**schemes["session"], "in": "cookie", "name": app.config["SESSION_COOKIE_NAME"]}
    assert schemes["csrf"] == {**schemes["csrf"], "type": "apiKey", "in": "header", "name": CSRF_HEADER}
    assert [server["url"] for server in document["servers"]] == ["/"]  # paths are whole: /api/v1/..., /auth/...
    callback = document["paths"][f"{AUTH_PREFIX}/callback"]["get"]["parameters"]
    assert {"name": app.config["LOGIN_COOKIE_NAME"], "in": "cookie"}.items() <= callback[-1].items()


def test_a_sign_in_may_ask_for_the_acr_values_the_settings_allow_and_no_others(stub_issuer, fake_redis):
    def login_query(**settings) -> dict:
        app = create_app(Config(app_env(stub_issuer.issuer, **settings)), redis=fake_redis)
        operation = document_of(app)["paths"][f"{AUTH_PREFIX}/login"]["get"]
        return {parameter["name"]: parameter for parameter in operation["parameters"]} | {"": operation}

    allowed = login_query(LOGIN_ACR_VALUES="urn:a urn:b")
    assert allowed["acr_values"]["schema"]["items"] == {"enum": ["urn:a", "urn:b"]}
    assert allowed["acr_values"]["style"] == "spaceDelimited"
    none = login_query()
    assert "acr_values" not in none
    assert "`acr_values` is refused: LOGIN_ACR_VALUES names none" in none[""]["description"]


def test_everything_under_auth_is_declared_never_stored(app):
    # Declared required: the fuzz test then holds every real answer under /auth to it.
    for path, operations in document_of(app)["paths"].items():
        for method, operation in operations.items() if path.startswith(f"{AUTH_PREFIX}/") else ():
            for status, response in operation["responses"].items():
                no_store = response["headers"]["Cache-Control"]
                assert no_store["required"] and no_store["schema"] == {"const": "no-store"}, (path, method, status)
