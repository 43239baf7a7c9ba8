"""Step-up (RFC 9470) on the poke endpoint, against the real dev provider signed in at each of its two
levels (password: urn:profile-poke:acr:pwd; password and one-time code: urn:profile-poke:acr:pwd-otp)
and the real Redis: bearer tokens by their own claims, opaque tokens by the introspection answer,
DPoP-bound tokens, and cookie sessions by the session's values; after scope, user and account."""

import json
import time
from urllib.parse import urlsplit

import pytest
import requests

from app.sessions.interface import session_ref
from app.store.keys import Keys
from dev import oidc_driver
from dev.dpop import DpopKey
from dev.oidc_driver import ACR_OTP, ACR_PASSWORD
from tests.helpers.log_capture import remember_secrets
from tests.helpers.real_services import OPAQUE_CLIENT, PASSWORD, introspection_settings
from tests.helpers.settings import CSRF
from tests.helpers.signin import callback_path, cookie_value

pytestmark = pytest.mark.integration

STRONGER = f"a stronger sign-in is required (acr {ACR_OTP})"
STALE = "a more recent sign-in is required (at most 2 s ago)"
STEP_UP = {"STEP_UP_ACR": ACR_OTP, "LOGIN_ACR_VALUES": f"{ACR_PASSWORD} {ACR_OTP}"}
CHALLENGE = (
    'Bearer realm="profile-poke", error="insufficient_user_authentication", '
    f'error_description="{STRONGER}", acr_values="{ACR_OTP}"'
)


def bearer(token: str) -> dict:
    return {"Authorization": f"Bearer {token}"}


def poke(client, headers: dict, target: str = "bob"):
    return client.post("/api/v1/pokes", json={"username": target}, headers=headers)


def assert_step_up_refused(response, message: str = STRONGER, **members) -> None:
    """The RFC 9470 refusal: 401, the envelope with its members, and the Bearer challenge first."""
    assert response.status_code == 401, response.get_data(as_text=True)
    expected = members or {"acr_values": ACR_OTP}
    assert response.json == {"error": {"code": "insufficient_user_authentication", "message": message, **expected}}
    bearer_challenge = response.headers.getlist("WWW-Authenticate")[0]
    assert bearer_challenge.startswith('Bearer realm="profile-poke", error="insufficient_user_authentication", ')
    assert f'error_description="{message}"' in bearer_challenge
    for name, value in expected.items():
        assert f'{name}="{value}"' in bearer_challenge


def signed_in_at(app, username: str, acr_values: str | None = None):
    """An in-process client signed in through /auth/login (asking the provider for `acr_values`)."""
    client = app.test_client()
    query = {"acr_values": acr_values} if acr_values else {}
    start = client.get("/auth/login", query_string=query)
    assert start.status_code == 302, start.get_data(as_text=True)
    callback = oidc_driver.login_at_idp(requests.Session(), start.headers["Location"], username, PASSWORD)
    assert urlsplit(callback).path == "/auth/callback"
    done = client.get(callback_path(callback))
    assert done.status_code == 302, done.get_data(as_text=True)
    remember_secrets(cookie_value(client, app.config["SESSION_COOKIE_NAME"]))
    return client


# ---------------------------------------------------------------------------- bearer tokens


def test_a_token_from_a_password_sign_in_gets_the_rfc_9470_challenge(make_app, idp):
    client = make_app(**STEP_UP).test_client()
    response = poke(client, bearer(idp.user_tokens("alice")["access_token"]))
    assert_step_up_refused(response)
    assert response.headers.getlist("WWW-Authenticate")[0] == CHALLENGE
    assert response.headers["Cache-Control"] == "no-store"


def test_a_token_from_a_one_time_code_sign_in_pokes_and_the_refusal_before_it_wrote_nothing(make_app, idp):
    client = make_app(**STEP_UP).test_client()
    assert_step_up_refused(poke(client, bearer(idp.user_tokens("alice")["access_token"])))
    stronger = idp.user_tokens("alice", acr_values=ACR_OTP)["access_token"]
    response = poke(client, bearer(stronger))  # no cooldown: the refused poke was never recorded
    assert (response.status_code, response.json) == (200, {"success": True})


def test_any_listed_acr_will_do(make_app, idp):
    client = make_app(
        STEP_UP_ACR=f"urn:other:acr {ACR_PASSWORD}", LOGIN_ACR_VALUES=f"urn:other:acr {ACR_PASSWORD}"
    ).test_client()
    response = poke(client, bearer(idp.user_tokens("alice")["access_token"]))
    assert response.status_code == 200, response.get_data(as_text=True)


def test_a_sign_in_older_than_step_up_max_age_gets_the_challenge_with_max_age(make_app, idp):
    client = make_app(STEP_UP_MAX_AGE="2").test_client()
    token = idp.user_tokens("alice", acr_values=ACR_OTP)["access_token"]
    time.sleep(3)
    response = poke(client, bearer(token))
    assert_step_up_refused(response, STALE, max_age=2)
    assert response.headers.getlist("WWW-Authenticate")[0] == (
        'Bearer realm="profile-poke", error="insufficient_user_authentication", '
        f'error_description="{STALE}", max_age="2"'
    )


def test_a_fresh_sign_in_passes_step_up_max_age(make_app, idp):
    client = make_app(STEP_UP_MAX_AGE="60", **STEP_UP).test_client()
    response = poke(client, bearer(idp.user_tokens("alice", acr_values=ACR_OTP)["access_token"]))
    assert response.status_code == 200, response.get_data(as_text=True)


def test_both_settings_name_both_members(make_app, idp):
    client = make_app(STEP_UP_MAX_AGE="60", **STEP_UP).test_client()
    response = poke(client, bearer(idp.user_tokens("alice")["access_token"]))
    assert_step_up_refused(response, acr_values=ACR_OTP, max_age=60)
    assert response.headers.getlist("WWW-Authenticate")[0] == f'{CHALLENGE}, max_age="60"'


def test_without_step_up_settings_a_password_sign_in_pokes(make_app, idp):
    response = poke(make_app().test_client(), bearer(idp.user_tokens("alice")["access_token"]))
    assert response.status_code == 200


def test_a_dpop_bound_token_gets_the_challenge_in_both_schemes(make_app, idp):
    key = DpopKey.generate("ES256")
    token = idp.user_tokens("alice", dpop_key=key)["access_token"]
    client = make_app(**STEP_UP, PUBLIC_ORIGINS="http://localhost").test_client()  # the test client's
    url = "http://localhost/api/v1/pokes"
    headers = {"Authorization": f"DPoP {token}", "DPoP": key.proof("POST", url, access_token=token)}
    response = poke(client, headers)
    assert_step_up_refused(response)
    assert response.headers.getlist("WWW-Authenticate") == [
        CHALLENGE,
        'DPoP algs="ES256 PS256 RS256", error="insufficient_user_authentication", '
        f'error_description="{STRONGER}", acr_values="{ACR_OTP}"',
    ]


# ---------------------------------------------------------------------------- the order of checks


def test_a_token_without_the_poke_scope_hears_insufficient_scope_not_step_up(make_app, idp):
    token = idp.user_tokens("carol", client_id="profile-poke-web-limited")["access_token"]
    response = poke(make_app(**STEP_UP).test_client(), bearer(token))
    assert response.status_code == 403
    assert response.json == {"error": {"code": "insufficient_scope", "message": "scope svc:interact.poke required"}}


def test_an_application_token_hears_forbidden_not_step_up(make_app, idp):
    response = poke(make_app(**STEP_UP).test_client(), bearer(idp.app_token(scope="svc:interact.poke")))
    assert response.status_code == 403
    assert response.json["error"] == {"code": "forbidden", "message": "a user-delegated token is required"}


@pytest.mark.parametrize("acr_values", [None, ACR_OTP], ids=["password", "one-time code"])
def test_a_disabled_account_hears_forbidden_not_step_up_at_either_level(make_app, idp, acr_values):
    token = idp.user_tokens("dave", acr_values=acr_values)["access_token"]
    response = poke(make_app(**STEP_UP).test_client(), bearer(token))
    assert response.status_code == 403
    assert response.json["error"] == {"code": "forbidden", "message": "the account is disabled"}


def test_no_credentials_hear_unauthorized_not_step_up(make_app):
    response = poke(make_app(**STEP_UP).test_client(), {})
    assert response.status_code == 401
    assert response.json["error"]["code"] == "unauthorized"


def test_step_up_guards_pokes_only(make_app, idp):
    client = make_app(**STEP_UP).test_client()
    response = client.get("/api/v1/me/profile", headers=bearer(idp.user_tokens("alice")["access_token"]))
    assert response.status_code == 200


# ---------------------------------------------------------------------------- introspection


def test_an_opaque_token_is_judged_by_the_introspection_answer(make_app, idp):
    client = make_app(**introspection_settings(idp), **STEP_UP).test_client()
    weaker = idp.user_tokens("alice", client_id=OPAQUE_CLIENT)["access_token"]
    stronger = idp.user_tokens("alice", client_id=OPAQUE_CLIENT, acr_values=ACR_OTP)["access_token"]
    assert weaker.count(".") == 0 and stronger.count(".") == 0  # nothing to read locally
    assert_step_up_refused(poke(client, bearer(weaker)))
    assert poke(client, bearer(stronger)).status_code == 200


def test_an_opaque_token_whose_sign_in_is_too_old_gets_the_challenge(make_app, idp):
    client = make_app(**introspection_settings(idp), STEP_UP_MAX_AGE="2").test_client()
    token = idp.user_tokens("alice", client_id=OPAQUE_CLIENT, acr_values=ACR_OTP)["access_token"]
    time.sleep(3)
    assert_step_up_refused(poke(client, bearer(token)), STALE, max_age=2)


# ---------------------------------------------------------------------------- cookie sessions


def test_a_session_signed_in_with_a_password_gets_the_challenge(make_app):
    client = signed_in_at(make_app(**STEP_UP), "alice")
    assert client.get("/auth/session").json["acr"] == ACR_PASSWORD
    assert_step_up_refused(poke(client, CSRF))


def test_a_session_signed_in_again_with_the_one_time_code_pokes(make_app):
    app = make_app(**STEP_UP)
    assert_step_up_refused(poke(signed_in_at(app, "alice"), CSRF))
    client = signed_in_at(app, "alice", acr_values=ACR_OTP)
    session = client.get("/auth/session").json
    assert (session["acr"], session["amr"]) == (ACR_OTP, ["pwd", "otp"])
    response = poke(client, CSRF)
    assert (response.status_code, response.json) == (200, {"success": True})


def test_a_session_whose_sign_in_is_too_old_gets_the_challenge(make_app):
    client = signed_in_at(make_app(STEP_UP_MAX_AGE="2"), "alice")
    assert poke(client, CSRF, target="carol").status_code == 200
    time.sleep(3)
    assert_step_up_refused(poke(client, CSRF), STALE, max_age=2)


def test_a_session_is_judged_by_its_own_record_not_by_its_access_token(make_app, redis):
    app = make_app(**STEP_UP)
    client = signed_in_at(app, "alice", acr_values=ACR_OTP)
    key = Keys(app.config["REDIS_KEY_PREFIX"]).token_set(
        session_ref(app.config["SECRET_KEY"], cookie_value(client, app.config["SESSION_COOKIE_NAME"]))
    )
    stored = json.loads(redis.get(key))
    # The access token still says pwd-otp; the session's record now says a password only.
    redis.set(key, json.dumps({**stored, "acr": ACR_PASSWORD}), keepttl=True)
    assert_step_up_refused(poke(client, CSRF))


def test_a_step_up_refusal_is_one_audit_event_saying_what_fell_short(make_app, idp, audit_lines):
    client = make_app(**STEP_UP).test_client()
    token = idp.user_tokens("alice")["access_token"]
    audit_lines.lines.clear()
    assert_step_up_refused(poke(client, bearer(token)))
    refusals = [event for event in audit_lines.events() if event["event"] == "stepup.refused"]
    assert [(e["reason"], e["user"], e["acr"], e["route"]) for e in refusals] == [
        ("acr", "alice", ACR_PASSWORD, "/api/v1/pokes")
    ]
    assert token not in json.dumps(refusals)


def test_a_step_up_refusal_for_an_old_sign_in_is_audited_as_max_age(make_app, idp, audit_lines):
    client = make_app(STEP_UP_MAX_AGE="2").test_client()
    token = idp.user_tokens("alice", acr_values=ACR_OTP)["access_token"]
    time.sleep(3)
    audit_lines.lines.clear()
    assert_step_up_refused(poke(client, bearer(token)), STALE, max_age=2)
    assert [e["reason"] for e in audit_lines.events() if e["event"] == "stepup.refused"] == ["max_age"]
