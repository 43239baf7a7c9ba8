"""Fixtures for the provider-profile tests: an app configured for one vendor, over fakeredis and a
stub issuer that signs tokens shaped like that vendor's."""

from dataclasses import dataclass

import fakeredis
import pytest

from app import create_app
from app.extensions import services
from app.store.profile_record import Profile
from config import Config
from tests.helpers.settings import app_env
from tests.helpers.stub_issuer import StubIssuer


@dataclass
class VendorApi:
    """An app that trusts `stub` with the environment of one provider profile."""

    app: object
    stub: StubIssuer

    def call(self, claims: dict, path: str = "/api/v1/me/profile", *, header: dict | None = None):
        token = self.stub.sign({k: v for k, v in claims.items() if v is not None}, header=header)
        return self.app.test_client().get(path, headers={"Authorization": f"Bearer {token}"})

    def poke(self, claims: dict, target: str = "bob"):
        token = self.stub.sign({k: v for k, v in claims.items() if v is not None})
        return self.app.test_client().post(
            "/api/v1/pokes", json={"username": target}, headers={"Authorization": f"Bearer {token}"}
        )

    def add_profile(self, username: str, sub: str | None = None) -> None:
        with self.app.app_context():
            services().store.profiles.put(Profile(username, f"@{username}", username.title(), sub=sub))

    def profile(self, username: str) -> Profile | None:
        with self.app.app_context():
            return services().store.profiles.get(username)


@pytest.fixture
def vendor_api(key):
    """Builds a VendorApi from environment overrides; `trailing_slash` makes the issuer end in `/`."""
    stubs = []

    def build(*, trailing_slash: bool = False, **env) -> VendorApi:
        stub = StubIssuer(key)
        stubs.append(stub)
        if trailing_slash:
            stub.issuer += "/"
        app = create_app(Config(app_env(stub.issuer, **env)), redis=fakeredis.FakeRedis())
        return VendorApi(app, stub)

    yield build
    for stub in stubs:
        stub.stop()
