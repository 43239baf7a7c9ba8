"""Audit events and counters from the app under gunicorn (two workers): the provider's back-channel
logout is one event, an event's line carries the response's request id, and every counter's known
series is in /metrics at 0 before anything happens (multiprocess mode), then counts the events."""

import json
import secrets
import time

import pytest
import requests
from prometheus_client.parser import text_string_to_metric_families

from app.audit import known_series
from app.metrics import AUDIT_EVENTS, KNOWN_LABELS
from dev import oidc_driver
from dev.services import free_port
from tests.helpers.log_capture import audit_lines_of, remember_secrets
from tests.helpers.real_services import PASSWORD, integration_env, start_live_app, start_own_idp

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def served(workdir, redis_url):
    """The app under gunicorn with a METRICS_TOKEN, and a provider of its own that sends it back-channel
    logouts."""
    port = free_port()
    uri = f"http://127.0.0.1:{port}/auth/backchannel-logout"
    idp_server, idp = start_own_idp(workdir, [port], IDP_BACKCHANNEL_LOGOUT_URI=uri)
    token = secrets.token_urlsafe(32)
    app_server, live = start_live_app(
        integration_env(idp, redis_url, METRICS_TOKEN=token, LOG_LEVEL="INFO"), port, workdir
    )
    yield live, idp, token
    app_server.stop()
    idp_server.stop()


def scrape(live, token) -> dict:
    response = requests.get(f"{live.url}/metrics", headers={"Authorization": f"Bearer {token}"}, timeout=10)
    assert response.status_code == 200
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(response.text)
        for sample in family.samples
    }


def test_every_known_series_of_every_counter_is_there_at_zero_before_anything_happens(served):
    live, _, token = served
    samples = scrape(live, token)
    known = {**KNOWN_LABELS, AUDIT_EVENTS: known_series()}
    for metric, label_sets in known.items():
        for labels in label_sets:
            key = (f"{metric._name}_total", tuple(sorted(zip(metric._labelnames, labels, strict=True))))
            # Each worker reads the provider's discovery document at start (app.health's endpoint check).
            started = metric._name == "pp_idp_requests" and labels == ("discovery", "ok")
            assert key in samples and (started or samples[key] == 0), key
    assert len(samples) >= sum(map(len, known.values()))


def sign_in_with_id(base: str, username: str, request_id: str) -> tuple[requests.Session, requests.Response]:
    http = requests.Session()
    start = http.get(f"{base}/auth/login", allow_redirects=False, timeout=10)
    callback = oidc_driver.login_at_idp(http, start.headers["Location"], username, PASSWORD)
    done = http.get(callback, headers={"X-Request-ID": request_id}, allow_redirects=False, timeout=10)
    assert done.status_code == 302
    remember_secrets(*http.cookies.get_dict().values(), callback.partition("code=")[2].partition("&")[0])
    return http, done


def events(live, name: str) -> list[dict]:
    return [event for event in audit_lines_of(live.log_path.read_text()) if event["event"] == name]


def test_the_providers_back_channel_logout_is_one_event_naming_the_ended_session(served):
    live, idp, token = served
    http, done = sign_in_with_id(live.url, "bob", "4f0c2d1e-7a3b-4c5d-9e8f-0a1b2c3d4e5f")
    (signed_in,) = [event for event in events(live, "signin.succeeded") if event["user"] == "bob"]
    access = [json.loads(line) for line in live.log_path.read_text().splitlines() if '"path": "/auth/callback"' in line]
    assert signed_in["request_id"] == done.headers["X-Request-ID"] == "4f0c2d1e-7a3b-4c5d-9e8f-0a1b2c3d4e5f"
    assert [line["request_id"] for line in access] == [signed_in["request_id"]]
    end_session = oidc_driver.discover(idp.issuer)["end_session_endpoint"]
    oidc_driver.confirm_logout(http, f"{end_session}?client_id=profile-poke-web&post_logout_redirect_uri={live.url}/")
    deadline = time.monotonic() + 2
    while not events(live, "session.ended") and time.monotonic() < deadline:
        time.sleep(0.05)
    (ended,) = events(live, "session.ended")
    assert (ended["reason"], ended["sub"], ended["ended"]) == ("backchannel", signed_in["sub"], [signed_in["session"]])
    assert ended["provider_session"] and ended["remote"] == "127.0.0.1"
    assert http.get(f"{live.url}/auth/session", timeout=10).json() == {"authenticated": False}
    samples = scrape(live, token)
    for event, reason in (("signin.succeeded", "none"), ("session.ended", "backchannel")):
        assert samples[("pp_audit_events_total", (("event", event), ("reason", reason)))] == 1


def test_a_refused_logout_token_and_a_replaced_session_are_counted_under_their_reasons(served):
    live, _, token = served
    refused, replaced = (
        ("pp_audit_events_total", (("event", event), ("reason", reason)))
        for event, reason in (("backchannel.refused", "unverified"), ("session.ended", "replaced"))
    )
    before = scrape(live, token)
    junk = {"logout_token": "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.c2lnbmF0dXJlLW9mLW5vYm9keQ"}
    assert requests.post(f"{live.url}/auth/backchannel-logout", data=junk, timeout=10).status_code == 400
    http, _ = sign_in_with_id(live.url, "alice", "first-sign-in")
    start = http.get(f"{live.url}/auth/login", allow_redirects=False, timeout=10)
    callback = oidc_driver.login_at_idp(http, start.headers["Location"], "carol", PASSWORD)
    assert http.get(callback, allow_redirects=False, timeout=10).status_code == 302
    after = scrape(live, token)
    assert (after[refused] - before[refused], after[replaced] - before[replaced]) == (1, 1)
    (ended,) = [event for event in events(live, "session.ended") if event["reason"] == "replaced"]
    assert ended["user"] == "alice"
