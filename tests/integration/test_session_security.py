"""Session security past the basics, against the real provider and Redis: a refresh token revoked
at sign-out is dead at the provider, and refreshed ID tokens are checked like the first one."""

import pytest
import requests

from dev import oidc_driver
from tests.helpers.settings import CSRF
from tests.helpers.signin import signed_in_client, stored_session_tokens

pytestmark = pytest.mark.integration


def test_a_refresh_token_revoked_at_logout_gets_invalid_grant_from_the_provider(app, idp):
    client = signed_in_client(app, "alice", requests.Session())
    revoked = stored_session_tokens(app, client)["refresh_token"]
    assert client.post("/auth/logout", headers=CSRF).status_code == 200
    answer = oidc_driver.refresh(idp.issuer, "profile-poke-web", revoked)
    assert (answer.status_code, answer.json()["error"]) == (400, "invalid_grant")
    # The same request with a refresh token nobody revoked succeeds: the refusal is the revocation.
    other = signed_in_client(app, "bob", requests.Session())
    alive = oidc_driver.refresh(idp.issuer, "profile-poke-web", stored_session_tokens(app, other)["refresh_token"])
    assert alive.status_code == 200 and alive.json()["refresh_token"]
