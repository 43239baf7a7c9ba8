"""The two sign-in settings of issue 16: OIDC_PAR (auto, require or off, nothing else) and
LOGIN_ACR_VALUES (the acr_values a sign-in may ask for)."""

import pytest

from config import Config, ConfigError
from tests.helpers.settings import app_env


@pytest.mark.parametrize(
    ("value", "expected"), [("", "auto"), ("auto", "auto"), ("REQUIRE", "require"), ("off", "off")]
)
def test_oidc_par_is_auto_require_or_off(value, expected):
    assert expected == Config(app_env("http://issuer.invalid", OIDC_PAR=value)).OIDC_PAR


def test_any_other_oidc_par_stops_the_start_naming_it():
    with pytest.raises(ConfigError, match="OIDC_PAR must be auto, require or off"):
        Config(app_env("http://issuer.invalid", OIDC_PAR="sometimes"))


def test_login_acr_values_are_read_space_or_comma_separated_and_default_to_none():
    assert Config(app_env("http://issuer.invalid")).LOGIN_ACR_VALUES == []
    env = app_env("http://issuer.invalid", LOGIN_ACR_VALUES="urn:loa:1, urn:loa:2 urn:loa:3")
    assert Config(env).LOGIN_ACR_VALUES == ["urn:loa:1", "urn:loa:2", "urn:loa:3"]
