"""The guard's step-up check on its own (fakeredis, the stub issuer): bearer tokens judged by their own
acr/auth_time claims, cookie sessions by the session's, after the account check, DPoP requests
challenged in both schemes."""

import time

import pytest
from flask import g

from app import create_app
from app.api.guard import Caller
from app.challenges import Forbidden, InsufficientUserAuthentication
from app.extensions import services
from app.provider.vendors import PROFILES
from app.store.profile_record import Profile
from app.tokens.principal import build_principal
from config import Config
from tests.helpers.settings import CSRF, SESSION_COOKIE, app_env

OTP, PWD = "urn:acr:otp", "urn:acr:pwd"
SCOPE = "svc:interact.poke"
SID = "the-session-cookie"


@pytest.fixture
def step_up_app(stub_issuer, fake_redis):
    app = create_app(
        Config(app_env(stub_issuer.issuer, STEP_UP_ACR=OTP, LOGIN_ACR_VALUES=OTP, STEP_UP_MAX_AGE="300")),
        redis=fake_redis,
    )
    with app.app_context():
        services().store.profiles.put(Profile("alice", "@alice", "Alice Liddell", sub="user-sub-1"))
    return app


def step_up(app, **headers):
    """authorize(), then stepped_up(), in a request carrying `headers`; the Caller it passed."""
    with app.test_request_context("/api/v1/pokes", method="POST", headers=headers):
        caller = services().guard.authorize(SCOPE)
        services().guard.stepped_up(caller)
        return caller, g.get("dpop_failure")


def bearer(stub_issuer, **claims) -> dict:
    return {"Authorization": f"Bearer {stub_issuer.sign(stub_issuer.access_claims(**claims))}"}


def test_a_token_with_an_acceptable_and_recent_sign_in_passes(step_up_app, stub_issuer):
    now = int(time.time())
    caller, _ = step_up(step_up_app, **bearer(stub_issuer, acr=OTP, auth_time=now - 10))
    assert (caller.username, caller.acr, caller.auth_time) == ("alice", OTP, now - 10)


@pytest.mark.parametrize(
    ("claims", "message", "audited"),
    [
        ({"acr": PWD}, f"a stronger sign-in is required (acr {OTP})", {"reason": "acr", "acr": PWD}),
        ({}, f"a stronger sign-in is required (acr {OTP})", {"reason": "acr"}),
        (
            {"acr": OTP, "auth_time": 1},
            "a more recent sign-in is required (at most 300 s ago)",
            {"reason": "max_age", "acr": OTP},
        ),
        (
            {"acr": OTP, "auth_time": "recent"},
            "a recent sign-in is required and the time of this one (auth_time) is unknown",
            {"reason": "no_auth_time", "acr": OTP},
        ),
        (
            {"acr": [OTP], "auth_time": int(time.time())},
            f"a stronger sign-in is required (acr {OTP})",
            {"reason": "acr"},
        ),
    ],
)
def test_a_token_is_judged_by_its_own_claims(step_up_app, stub_issuer, audit_lines, claims, message, audited):
    with pytest.raises(InsufficientUserAuthentication) as refused:
        step_up(step_up_app, **bearer(stub_issuer, **claims))
    assert refused.value.message == message
    assert refused.value.members() == {"acr_values": OTP, "max_age": 300}
    [event] = audit_lines.events("stepup.refused")
    assert {name: event[name] for name in event if name in {"reason", "user", "acr", "route"}} == {
        "user": "alice",
        "route": "/api/v1/pokes",
        **audited,
    }


def test_a_disabled_account_is_refused_before_its_sign_in_is_judged(step_up_app, stub_issuer):
    with step_up_app.app_context():
        services().store.profiles.put(Profile("alice", "@alice", "Alice", sub="user-sub-1", disabled=True))
    with pytest.raises(Forbidden, match="the account is disabled"):
        step_up(step_up_app, **bearer(stub_issuer, acr=PWD))


def test_a_cookie_call_is_judged_by_its_sessions_sign_in_not_its_tokens_claims(step_up_app, stub_issuer):
    token = stub_issuer.sign(stub_issuer.access_claims(acr=OTP, auth_time=int(time.time())))
    with step_up_app.app_context():
        services().session_tokens.start(
            SID,
            username="alice",
            sub="user-sub-1",
            response={"access_token": token, "expires_in": 300},
            acr=PWD,
            auth_time=int(time.time()),
        )
    with pytest.raises(InsufficientUserAuthentication):
        step_up(step_up_app, Cookie=f"{SESSION_COOKIE}={SID}", **CSRF)


@pytest.mark.parametrize("authorization", ["DPoP x", "  dpop x"])
def test_a_dpop_request_refused_for_step_up_names_the_parameters_for_the_dpop_challenge(step_up_app, authorization):
    with step_up_app.test_request_context("/api/v1/pokes", headers={"Authorization": authorization}):
        with pytest.raises(InsufficientUserAuthentication) as refused:
            services().guard.stepped_up(Caller("alice", None, PWD, int(time.time())))
        assert g.dpop_failure == (refused.value.code, refused.value.message, refused.value.parameters())


def test_a_bearer_request_refused_for_step_up_leaves_the_dpop_challenge_plain(step_up_app):
    with step_up_app.test_request_context("/api/v1/pokes", headers={"Authorization": "Bearer x"}):
        with pytest.raises(InsufficientUserAuthentication):
            services().guard.stepped_up(Caller("alice", None, PWD, int(time.time())))
        assert g.get("dpop_failure") is None


def test_step_up_off_checks_nothing(unit_app, stub_issuer, fake_redis):
    with unit_app.app_context():
        services().store.profiles.put(Profile("alice", "@alice", "Alice", sub="user-sub-1", disabled=True))
    caller, _ = step_up(unit_app, **bearer(stub_issuer))  # not even the account: the poke script reads it
    assert caller.username == "alice"


@pytest.mark.parametrize(
    ("claims", "acr", "auth_time"),
    [
        ({"acr": OTP, "auth_time": 1_700_000_000}, OTP, 1_700_000_000),
        ({"acr": OTP, "auth_time": 1_700_000_000.5}, OTP, 1_700_000_000),
        ({"acr": "", "auth_time": True}, None, None),
        ({"acr": 3, "auth_time": float("nan")}, None, None),
        ({}, None, None),
    ],
)
def test_a_principal_reads_acr_and_auth_time_only_when_well_formed(claims, acr, auth_time):
    base = {"sub": "s", "client_id": "web", "scope": SCOPE}
    principal = build_principal({**base, **claims}, PROFILES["generic"], {"web"}, expires_at=0.0)
    assert (principal.acr, principal.auth_time) == (acr, auth_time)
