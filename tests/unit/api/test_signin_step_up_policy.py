"""Step-up (RFC 9470) in the small: the policy's decisions, its settings, the challenge and envelope
it answers with, and the OpenAPI document that states it."""

import pytest

from app import create_app
from app.api.step_up import StepUpPolicy, needs_step_up, step_up_required
from app.challenges import InsufficientUserAuthentication
from config import Config, ConfigError
from tests.helpers.settings import app_env

PWD, OTP = "urn:profile-poke:acr:pwd", "urn:profile-poke:acr:pwd-otp"
NOW = 1_800_000_000


def refusal(policy: StepUpPolicy, **sign_in) -> InsufficientUserAuthentication:
    with pytest.raises(InsufficientUserAuthentication) as refused:
        policy.check(now=NOW, **sign_in)
    return refused.value


def test_an_unset_policy_is_off_and_lets_anything_through():
    policy = StepUpPolicy()
    assert not policy.active
    policy.check(acr=None, auth_time=None, now=NOW)


def test_an_acr_not_listed_is_refused_naming_the_acceptable_ones():
    refused = refusal(StepUpPolicy((OTP, "urn:other")), acr=PWD, auth_time=NOW)
    assert refused.message == f"a stronger sign-in is required (acr {OTP} or urn:other)"
    assert refused.members() == {"acr_values": f"{OTP} urn:other"}
    assert refused.reason == "acr"  # what the stepup.refused audit event names


def test_a_token_without_acr_is_refused_when_an_acr_is_required():
    assert refusal(StepUpPolicy((OTP,)), acr=None, auth_time=NOW).code == "insufficient_user_authentication"


def test_any_listed_acr_passes():
    StepUpPolicy((OTP, PWD)).check(acr=PWD, auth_time=None, now=NOW)


def test_a_sign_in_older_than_max_age_is_refused_and_one_exactly_max_age_old_passes():
    policy = StepUpPolicy(max_age=300)
    policy.check(acr=None, auth_time=NOW - 300, now=NOW)
    refused = refusal(policy, acr=None, auth_time=NOW - 301)
    assert refused.message == "a more recent sign-in is required (at most 300 s ago)"
    assert refused.members() == {"max_age": 300}
    assert refused.reason == "max_age"


def test_an_unknown_auth_time_is_refused_when_max_age_is_set():
    refused = refusal(StepUpPolicy(max_age=300), acr=None, auth_time=None)
    assert refused.message == "a recent sign-in is required and the time of this one (auth_time) is unknown"
    assert refused.reason == "no_auth_time"


def test_the_challenge_names_acr_values_and_max_age_as_rfc_9470_says():
    refused = refusal(StepUpPolicy((OTP,), 60), acr=PWD, auth_time=NOW)
    assert refused.status == 401
    assert refused.headers() == {
        "WWW-Authenticate": 'Bearer realm="profile-poke", error="insufficient_user_authentication", '
        f'error_description="a stronger sign-in is required (acr {OTP})", acr_values="{OTP}", max_age="60"'
    }
    assert refused.members() == {"acr_values": OTP, "max_age": 60}


def settings(**overrides) -> Config:
    return Config(app_env("https://issuer.example/realms/dev", **overrides))


def test_the_settings_are_off_unless_set():
    config = settings()
    assert (config.STEP_UP_ACR, config.STEP_UP_MAX_AGE) == ((), None)


def test_the_settings_read_space_separated_acr_values_and_seconds():
    config = settings(STEP_UP_ACR=f" {OTP}  urn:other ", LOGIN_ACR_VALUES=f"{OTP} urn:other", STEP_UP_MAX_AGE="0")
    assert (config.STEP_UP_ACR, config.STEP_UP_MAX_AGE) == ((OTP, "urn:other"), 0)


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("STEP_UP_ACR", 'urn:"quoted"', "STEP_UP_ACR must be space-separated acr values"),
        ("STEP_UP_ACR", "back\\slash", "STEP_UP_ACR must be space-separated acr values"),
        ("STEP_UP_MAX_AGE", "soon", "STEP_UP_MAX_AGE must be a number"),
        ("STEP_UP_MAX_AGE", "-1", "STEP_UP_MAX_AGE must not be negative"),
    ],
)
def test_a_bad_setting_stops_start_up_naming_it(name, value, message):
    with pytest.raises(ConfigError, match=message):
        settings(**{name: value})


def test_a_step_up_acr_the_login_would_refuse_stops_start_up_naming_it():
    with pytest.raises(ConfigError, match="STEP_UP_ACR names urn:other, which LOGIN_ACR_VALUES must list too"):
        settings(STEP_UP_ACR=f"{OTP} urn:other", LOGIN_ACR_VALUES=f"{PWD} {OTP}")


def test_the_openapi_document_gives_the_poke_its_step_up_401(stub_issuer, fake_redis):
    app = create_app(
        Config(app_env(stub_issuer.issuer, STEP_UP_ACR=OTP, LOGIN_ACR_VALUES=OTP, STEP_UP_MAX_AGE="300")),
        redis=fake_redis,
    )
    paths = app.test_client().get("/api/v1/openapi.json").json["paths"]
    poke_401 = paths["/api/v1/pokes"]["post"]["responses"]["401"]["description"]
    assert "insufficient_user_authentication" in poke_401
    assert f"`{OTP}`" in poke_401 and "at most 300 s old" in poke_401
    assert (
        "insufficient_user_authentication" not in paths["/api/v1/me/profile"]["get"]["responses"]["401"]["description"]
    )


def test_a_view_declared_sensitive_is_marked_and_otherwise_left_as_it_is():
    # Called here, not only through the routes: their decorator runs at import, before any test.
    def view():
        return "the view's answer"

    assert step_up_required(view) is view
    assert needs_step_up(view) is True
    assert view() == "the view's answer"
    assert needs_step_up(lambda: None) is False
