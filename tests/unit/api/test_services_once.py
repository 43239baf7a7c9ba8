"""An API request looks the app's services up once: the view decorator takes them and hands them to the
view, so neither the guard's checks, the step-up check nor the view look them up again."""

import time

import pytest

from app.api import routes
from app.extensions import services
from app.store.profile_record import Profile
from tests.helpers.apps import app_with_alice


@pytest.fixture
def taken(monkeypatch) -> list[str]:
    """Each lookup of the services by an /api/v1 view, counted (the real lookup still answers)."""
    calls = []

    def counted():
        calls.append("services")
        return services()

    monkeypatch.setattr(routes, "services", counted)
    return calls


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("get", "/api/v1/users/bob", None),
        ("get", "/api/v1/me/profile", None),
        ("post", "/api/v1/pokes", {"username": "bob"}),
    ],
)
def test_each_api_request_takes_the_services_once(stub_issuer, fake_redis, taken, method, path, body):
    app = app_with_alice(stub_issuer.issuer, fake_redis, STEP_UP_MAX_AGE="300")  # the poke checks step-up too
    with app.app_context():
        services().store.profiles.put(Profile("bob", "@bob", "Bob Builder", sub="user-sub-2"))
    token = stub_issuer.sign(stub_issuer.access_claims(auth_time=int(time.time())))
    response = getattr(app.test_client(), method)(path, json=body, headers={"Authorization": f"Bearer {token}"})
    assert response.status_code == 200, response.get_data(as_text=True)
    assert taken == ["services"]
