"""The provider profiles' names have one home, the table in app/provider/vendors.py: the setting is
checked against it, and every place an operator chooses a profile lists exactly its names."""

import re
from dataclasses import replace
from pathlib import Path

import pytest

from app import create_app
from app.provider.vendors import PROFILES, provider_profile
from config import Config, ConfigError
from tests.helpers.settings import app_env

ROOT = Path(__file__).resolve().parents[3]
NAME = re.compile(r"`([a-z0-9]+)`")


def line_of(path: str, start: str) -> str:
    return next(line for line in (ROOT / path).read_text().splitlines() if line.startswith(start))


def test_an_unknown_profile_stops_the_start_naming_every_profile_of_the_table(stub_issuer, fake_redis):
    with pytest.raises(ConfigError, match="OIDC_PROVIDER_PROFILE must be one of ") as refused:
        create_app(Config(app_env(stub_issuer.issuer, OIDC_PROVIDER_PROFILE="ping")), redis=fake_redis)
    assert str(refused.value).rpartition(" of ")[2].split(", ") == list(PROFILES)


@pytest.mark.parametrize("name", list(PROFILES))
def test_each_profile_of_the_table_starts(stub_issuer, fake_redis, name):
    create_app(Config(app_env(stub_issuer.issuer, OIDC_PROVIDER_PROFILE=name)), redis=fake_redis)


def test_the_docs_offer_exactly_the_profiles_of_the_table():
    env_example = line_of(".env.example", "OIDC_PROVIDER_PROFILE=").partition("#")[2]
    assert [word for word in re.findall(r"[a-z0-9]+", env_example) if word != "or"] == list(PROFILES)
    readme = line_of("README.md", "| `OIDC_PROVIDER_PROFILE` |").split("|")[2]
    assert NAME.findall(readme) == list(PROFILES)
    lines = (ROOT / "docs/providers.md").read_text().splitlines()
    table = lines[lines.index(line_of("docs/providers.md", "| profile |")) + 2 :]
    rows = [line.split("|")[1] for line in table[: table.index("")]]
    assert [name for row in rows for name in NAME.findall(row)] == list(PROFILES)


def test_the_claim_settings_replace_the_profiles_claims_and_only_those_set():
    entra = PROFILES["entra"]
    assert provider_profile("entra") == entra
    assert provider_profile("entra", subject_claim="uid") == replace(entra, subject_claim="uid")
    assert provider_profile("entra", scope_claim="perms") == replace(entra, scope_claim="perms")
    every = provider_profile("entra", subject_claim="uid", scope_claim="perms", username_claim="login")
    assert every == replace(
        entra, subject_claim="uid", scope_claim="perms", username_claim="login", id_username_claim="login"
    )
