"""What a sign-in proves, on the sign-in side, against the real dev provider and Redis: with max_age the
ID token's auth_time must be recent enough, and the session keeps the ID token's acr, amr, auth_time."""

import time

import pytest
import requests

from dev import oidc_driver
from tests.helpers.pages import error_page_message
from tests.helpers.real_services import PASSWORD
from tests.helpers.signin import callback_path, stored_session_tokens

pytestmark = pytest.mark.integration

STALE = "the identity provider did not sign you in within the last 60 s, as this sign-in asked; please sign in again"


@pytest.fixture
def stale_auth_time(idp):
    """Makes the shared provider report an auth_time older than the real one, for one test."""
    yield lambda seconds: oidc_driver.stale_auth_time(idp.base, seconds)
    oidc_driver.stale_auth_time(idp.base, 0)


def signed_in_with(app, params: dict):
    """A test client back from the provider with the sign-in `params`; and the callback's answer."""
    client = app.test_client()
    start = client.get("/auth/login", query_string=params)
    assert start.status_code == 302, start.get_data(as_text=True)
    callback = oidc_driver.login_at_idp(requests.Session(), start.headers["Location"], "alice", PASSWORD)
    return client, client.get(callback_path(callback))


def test_a_stale_auth_time_with_max_age_fails_the_sign_in(app, keys_of, stale_auth_time, audit_lines):
    stale_auth_time(3600)
    client, response = signed_in_with(app, {"max_age": "60"})
    assert (response.status_code, error_page_message(response)) == (502, STALE)
    assert client.get("/auth/session").json == {"authenticated": False}
    assert [key for key in keys_of(app) if ":tokens:" in key] == []
    assert [event["reason"] for event in audit_lines.events("signin.failed")] == ["stale_auth_time"]


def test_an_auth_time_within_max_age_and_the_leeway_signs_in(app, stale_auth_time):
    stale_auth_time(100)  # 60 s of max_age and 60 s of leeway cover it
    _, response = signed_in_with(app, {"max_age": "60"})
    assert response.status_code == 302


def test_a_stale_auth_time_without_max_age_signs_in(app, stale_auth_time):
    stale_auth_time(3600)
    _, response = signed_in_with(app, {})
    assert response.status_code == 302


def test_the_session_keeps_the_id_tokens_auth_time_acr_and_amr_with_their_types(app):
    client, response = signed_in_with(app, {"max_age": "300"})
    assert response.status_code == 302
    record = stored_session_tokens(app, client)
    assert isinstance(record["auth_time"], int) and time.time() - 60 < record["auth_time"] <= time.time() + 1
    assert record["acr"] is None or isinstance(record["acr"], str)
    assert record["amr"] is None or all(isinstance(method, str) for method in record["amr"])
    assert {"acr", "amr", "auth_time"} <= set(record)
