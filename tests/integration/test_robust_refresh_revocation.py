"""A provider that revokes the old access token when a refresh rotates the refresh token (the dev
provider with IDP_REVOKE_ACCESS_ON_REFRESH=1, 62-second opaque tokens), the app in introspection mode
under gunicorn (2 workers x 4 threads) over the real Redis: cookie requests that read the session
before another request's refresh finished retry once with the newest token (issue 19 point 3)."""

import secrets
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
import requests
from prometheus_client.parser import text_string_to_metric_families

from app.sessions.interface import session_ref
from app.sessions.records import with_response
from app.sessions.sealing import Sealer
from app.store.keys import Keys
from app.store.tokensets import TokenSets
from dev import oidc_driver
from dev.services import free_port
from tests.helpers.real_services import LOGIN_CLIENTS, OPAQUE_CLIENT, integration_env, start_live_app, start_own_idp
from tests.helpers.settings import CSRF, SESSION_COOKIE
from tests.helpers.signin import sign_in, stored_tokens, wait_until_refresh_is_due

pytestmark = pytest.mark.integration
SIMULTANEOUS = 8


class Revoking:
    """The revoking provider and the app signed in through it, with the app's /metrics token."""

    def __init__(self, idp, live, metrics_token: str):
        self.idp, self.live, self.metrics_token = idp, live, metrics_token

    def own_profile(self, cookies: dict) -> requests.Response:
        return requests.get(f"{self.live.url}/api/v1/me/profile", cookies=cookies, headers=CSRF, timeout=30)

    def introspections(self) -> float:
        """How many introspection calls the app's workers have made so far (every outcome)."""
        headers = {"Authorization": f"Bearer {self.metrics_token}"}
        text = requests.get(f"{self.live.url}/metrics", headers=headers, timeout=10).text
        return sum(
            sample.value
            for family in text_string_to_metric_families(text)
            for sample in family.samples
            if sample.name == "pp_idp_requests_total" and sample.labels.get("endpoint") == "introspection"
        )

    def revoke(self, token: str) -> None:
        """Revoke an access token at the provider, as its client may."""
        revocation = oidc_driver.discover(self.idp.issuer)["revocation_endpoint"]
        response = requests.post(revocation, data={"token": token, "client_id": OPAQUE_CLIENT}, timeout=5)
        assert response.status_code == 200


@pytest.fixture(scope="module")
def revoking(workdir, redis_url):
    port = free_port()
    server, idp = start_own_idp(workdir, [port], IDP_REVOKE_ACCESS_ON_REFRESH="1", IDP_ACCESS_TOKEN_TTL="62")
    metrics_token = secrets.token_urlsafe(32)
    env = integration_env(
        idp,
        redis_url,
        OIDC_CLIENT_ID=OPAQUE_CLIENT,
        LOGIN_CLIENT_IDS=f"{LOGIN_CLIENTS},{OPAQUE_CLIENT}",
        ACCESS_TOKEN_VALIDATION="introspection",
        INTROSPECTION_CLIENT_ID="profile-poke-service",
        INTROSPECTION_CLIENT_SECRET=idp.secret,
        GUNICORN_THREADS="4",
        METRICS_TOKEN=metrics_token,
    )
    try:
        app_server, live = start_live_app(env, port, workdir)
    except Exception:
        server.stop()
        raise
    yield Revoking(idp, live, metrics_token)
    app_server.stop()
    server.stop()


def test_eight_simultaneous_cookie_requests_in_the_refresh_window_all_answer_200_with_one_refresh(revoking, redis):
    http = sign_in(revoking.live.url, "bob")
    before = stored_tokens(redis, revoking.live.env, http)
    assert before["access_token"].count(".") == 0  # opaque: only introspection can judge it
    wait_until_refresh_is_due(before)
    revoking.idp.reset_stats()
    cookies, start = http.cookies.get_dict(), threading.Barrier(SIMULTANEOUS)

    def call(_):
        start.wait(10)
        return revoking.own_profile(cookies)

    with ThreadPoolExecutor(max_workers=SIMULTANEOUS) as pool:
        responses = list(pool.map(call, range(SIMULTANEOUS)))
    statuses = [response.status_code for response in responses]
    refused = [response.json()["error"] for response in responses if response.status_code != 200]
    assert statuses == [200] * SIMULTANEOUS, f"{len(refused)} of {SIMULTANEOUS} refused: {statuses} {refused}"
    assert revoking.idp.stats()["token"]["refresh_token"] == 1
    after = stored_tokens(redis, revoking.live.env, http)
    assert after["access_token"] != before["access_token"]
    assert revoking.own_profile(cookies).status_code == 200  # the stored token is the one the provider kept


def test_a_cookie_request_whose_newest_token_is_refused_is_401_after_one_introspection_and_keeps_the_session(
    revoking, redis
):
    http = sign_in(revoking.live.url, "carol")
    revoking.revoke(stored_tokens(redis, revoking.live.env, http)["access_token"])
    revoking.idp.reset_stats()
    calls = revoking.introspections()
    response = revoking.own_profile(http.cookies.get_dict())
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "invalid_token"
    assert 'error="invalid_token"' in response.headers["WWW-Authenticate"]
    assert revoking.introspections() == calls + 1  # nothing changed in the session: no second call
    assert revoking.idp.stats()["token"]["refresh_token"] == 0
    assert http.get(f"{revoking.live.url}/auth/session", timeout=10).json()["authenticated"] is True


def test_a_retry_whose_newest_token_is_refused_too_is_401_after_exactly_two_introspections(revoking, redis):
    """Another instance refreshes while the request runs, and the provider refuses its new token too:
    the request retries once with it, then answers 401; it never loops."""
    live = revoking.live
    http = sign_in(live.url, "alice")
    cookie = http.cookies[SESSION_COOKIE]
    ref = session_ref(live.env["SECRET_KEY"], cookie)
    token_sets = TokenSets(redis, Keys(live.env["REDIS_KEY_PREFIX"]))
    # The other instance: holds the session's refresh lock, refreshes at the provider (which revokes
    # the token the session holds), and stores its tokens only 1 s later, while the request waits.
    assert token_sets.lock(ref, "other-instance", 30_000)
    record = stored_tokens(redis, live.env, http)
    answer = oidc_driver.refresh(revoking.idp.issuer, OPAQUE_CLIENT, record["refresh_token"]).json()
    revoking.revoke(answer["access_token"])

    def store_refreshed():
        time.sleep(1)
        sealed = Sealer(live.env["SECRET_KEY"], []).seal_record(cookie, with_response(record, answer, time.time()))
        assert token_sets.replace(ref, record["v"], sealed)
        token_sets.unlock(ref, "other-instance")

    other = threading.Thread(target=store_refreshed)
    calls = revoking.introspections()
    other.start()
    try:
        response = revoking.own_profile(http.cookies.get_dict())
    finally:
        other.join(10)
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "invalid_token"
    assert revoking.introspections() == calls + 2  # the token it read, then the newest: once, no loop
