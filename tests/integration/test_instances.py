"""Two gunicorn instances over one Redis: any instance serves any session, the cooldown holds
across them, and concurrent refreshes arriving at both lose no refresh token."""

import itertools
from concurrent.futures import ThreadPoolExecutor

import pytest
import requests

from dev.services import start_gunicorn
from tests.helpers.settings import CSRF
from tests.helpers.signin import sign_in, stored_tokens, wait_until_refresh_is_due

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def second_instance(live_app, idp, workdir):
    """Another gunicorn with the first one's settings (same Redis, prefix and secret), on its own port."""
    port = idp.app_ports[2]
    server = start_gunicorn(port, env=live_app.env, log_path=workdir / f"app-{port}.log")
    yield f"http://127.0.0.1:{port}"
    server.stop()


def test_a_session_started_on_one_instance_works_on_the_other(live_app, second_instance):
    http = sign_in(live_app.url, "erin")
    response = requests.get(f"{second_instance}/api/v1/me/profile", cookies=http.cookies, headers=CSRF, timeout=10)
    assert response.status_code == 200
    assert response.json()["data"]["display_name"] == "Erin Brockovich"
    session = requests.get(f"{second_instance}/auth/session", cookies=http.cookies, timeout=10).json()
    assert session["user"] == "erin"


def test_the_cooldown_holds_across_instances(live_app, second_instance, idp):
    headers = {"Authorization": f"Bearer {idp.user_token('erin')}"}
    first = requests.post(f"{live_app.url}/api/v1/pokes", json={"username": "carol"}, headers=headers, timeout=10)
    second = requests.post(f"{second_instance}/api/v1/pokes", json={"username": "carol"}, headers=headers, timeout=10)
    assert first.status_code == 200
    assert second.status_code == 400
    assert second.json()["error"].startswith("poke on cooldown (")


def test_concurrent_refreshes_on_both_instances_lose_no_refresh_token(live_app, second_instance, idp, redis):
    http = sign_in(live_app.url, "alice")
    wait_until_refresh_is_due(stored_tokens(redis, live_app.env, http))
    idp.reset_stats()
    cookies = http.cookies.get_dict()
    urls = itertools.islice(itertools.cycle([live_app.url, second_instance]), 20)

    def own_profile(base):
        return requests.get(f"{base}/api/v1/me/profile", cookies=cookies, headers=CSRF, timeout=15).status_code

    with ThreadPoolExecutor(max_workers=20) as pool:
        assert list(pool.map(own_profile, urls)) == [200] * 20
    assert idp.stats()["token"]["refresh_token"] == 1
    wait_until_refresh_is_due(stored_tokens(redis, live_app.env, http))
    assert own_profile(second_instance) == 200
    assert idp.stats()["token"]["refresh_token"] == 2
