"""The app's URL rules build URLs as Werkzeug's do, though their builders are compiled only when used."""

import pytest
from flask import url_for
from werkzeug.routing import Map

from app.routing import LazyBuilderRule


@pytest.mark.parametrize(
    ("endpoint", "values", "url"),
    [
        ("api.public_profile", {"username": "alice"}, "/api/v1/users/alice"),
        ("auth.end_one_session", {"session_id": "a b"}, "/auth/sessions/a%20b"),
        ("auth.login", {"return_to": "/me?x=1"}, "/auth/login?return_to=/me?x%3D1"),  # unknown values: the query
        ("static", {"filename": "demo.js"}, "/static/demo.js"),
    ],
)
def test_a_url_is_built_for_an_endpoint_as_werkzeug_builds_it(unit_app, endpoint, values, url):
    with unit_app.test_request_context():
        assert url_for(endpoint, **values) == url
        assert url_for(endpoint, **values) == url  # the builder compiled by the first call, used again


def test_a_url_for_an_external_caller_names_the_host(unit_app):
    with unit_app.test_request_context(base_url="https://pp.example"):
        assert url_for("auth.callback", _external=True) == "https://pp.example/auth/callback"


def test_a_url_without_its_unknown_values_is_built_as_werkzeug_builds_it(unit_app):
    urls = unit_app.url_map.bind("pp.example")
    assert urls.build("auth.login", {"return_to": "/me"}, append_unknown=False) == "/auth/login"


def test_a_url_variable_may_be_named_like_the_builders_own_arguments():
    urls = Map([LazyBuilderRule("/docs/<rule>/<self>", endpoint="docs")]).bind("pp.example")
    assert urls.build("docs", {"rule": "r1", "self": "s1"}) == "/docs/r1/s1"
