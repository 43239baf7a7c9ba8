"""A callback takes a pending sign-in only when its browser matches (issue 27, point 7), against the real
dev provider and Redis with PAR on: a `state` learned from browser A's callback URL (a shared screen, a
log, a trace), sent from browser B with A's code, without a code, or with an error, changes nothing: no
exchange, nothing written to Redis, A's login cookie untouched. A then finishes its sign-in."""

import pytest
import requests

from dev import oidc_driver
from tests.helpers.pages import error_page_message
from tests.helpers.real_services import PASSWORD
from tests.helpers.signin import callback_path, login_cookie, opened_sign_in, start_login, state_of

pytestmark = pytest.mark.integration

OTHER_BROWSER = (
    "this sign-in was started in another browser, or newer sign-ins in this one replaced it; please sign in again"
)
UNSOLICITED = "the sign-in did not complete; please sign in again"


def test_a_known_state_sent_from_another_browser_cancels_nothing_and_the_real_browser_completes(app, idp, keys_of):
    a, b = app.test_client(), app.test_client()
    callback = oidc_driver.login_at_idp(requests.Session(), start_login(a), "alice", PASSWORD)  # A has not come back
    state = state_of(callback)
    start_login(b)  # B is a browser with a sign-in of its own
    cookie_of_a = login_cookie(a, state)
    before = [key for key in keys_of(app) if ":limits" not in key]
    idp.reset_stats()
    tries = {
        "A's whole callback URL": callback_path(callback),
        "the state alone": f"/auth/callback?state={state}",
        "an error for it": f"/auth/callback?state={state}&error=access_denied&error_description=call+555-0100",
    }
    answers = {what: b.get(path) for what, path in tries.items()}
    assert {what: (answer.status_code, error_page_message(answer)) for what, answer in answers.items()} == {
        "A's whole callback URL": (400, OTHER_BROWSER),
        "the state alone": (400, OTHER_BROWSER),
        "an error for it": (400, UNSOLICITED),
    }
    assert idp.stats()["token"]["authorization_code"] == 0
    assert [key for key in keys_of(app) if ":limits" not in key] == before
    assert all("Set-Cookie" not in answer.headers for answer in answers.values())
    assert login_cookie(a, state) == cookie_of_a and opened_sign_in(app.config, state, cookie_of_a)
    assert b.get("/auth/session").json == {"authenticated": False}

    finished = a.get(callback_path(callback))
    assert (finished.status_code, finished.headers["Location"]) == (302, "/")
    assert a.get("/auth/session").json["user"] == "alice"
    assert idp.stats()["token"]["authorization_code"] == 1
