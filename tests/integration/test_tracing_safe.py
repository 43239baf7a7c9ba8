"""Tracing switched on as docs/operations.md recommends (parentbased_traceidratio at 0.1) under gunicorn
with the shipped gunicorn.conf.py, two workers of eight threads: callers with unsampled and sampled
traceparent headers, then plain requests to the same workers, every one answered; no line gunicorn
writes itself (an access log switched on, a malformed request line) carries a query string; and with
an operator capturing every header, spans keep only allow-listed ones, redirects without their query,
and a caller's baggage reaches neither a span nor the identity provider."""

import secrets
import socket
import time
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import parse_qs, urlsplit

import pytest
import requests

from dev import oidc_driver
from dev.services import free_port
from tests.helpers.log_capture import remember_secrets
from tests.helpers.real_services import PASSWORD, delete_prefix, integration_env, start_live_app, start_own_idp

CODE, STATE = f"c0de{secrets.token_hex(8)}", f"st4te{secrets.token_hex(8)}"
THREADS = 16  # two workers of eight threads: every thread of both serves several of each kind of request
# What an operator could ask the instrumentations to record, beyond what they may: spans keep the allow-list.
CAPTURED = "user-agent,referer,location,baggage,authorization,cookie,set-cookie,dpop,x-api-key"


@pytest.fixture(scope="module")
def sampled(workdir, redis_url, otlp_receiver):
    """(the dev provider, the app under gunicorn with ratio sampling and every header capture on)."""
    port = free_port()
    idp_server, idp = start_own_idp(workdir, [port])
    env = integration_env(
        idp,
        redis_url,
        OTEL_EXPORTER_OTLP_ENDPOINT=otlp_receiver.url,
        OTEL_BSP_SCHEDULE_DELAY="100",
        OTEL_TRACES_SAMPLER="parentbased_traceidratio",
        OTEL_TRACES_SAMPLER_ARG="0.1",
        # gunicorn's own access log too: its lines carry each request line as the client sent it.
        GUNICORN_CMD_ARGS="--access-logfile -",
        GUNICORN_THREADS="8",
        **{f"OTEL_INSTRUMENTATION_HTTP_CAPTURE_HEADERS_{kind}": CAPTURED for kind in CAPTURE_KINDS},
    )
    app_server, live = start_live_app(env, port, workdir, workers=2)
    yield idp, live
    app_server.stop()
    idp_server.stop()
    delete_prefix(redis_url, env["REDIS_KEY_PREFIX"])


CAPTURE_KINDS = ("SERVER_REQUEST", "SERVER_RESPONSE", "CLIENT_REQUEST", "CLIENT_RESPONSE")


@pytest.fixture(scope="module")
def sampled_app(sampled):
    return sampled[1]


def traceparent(flags: str) -> tuple[str, dict]:
    trace_id = secrets.token_hex(16)
    return trace_id, {"traceparent": f"00-{trace_id}-{secrets.token_hex(8)}-{flags}"}


def status_of(url: str, headers: dict | None = None) -> int:
    return requests.get(url, headers=headers or {}, allow_redirects=False, timeout=10).status_code


def plain_requests(live, count: int = 160) -> dict:
    """`count` plain requests over every thread of both workers: how many got each status."""
    urls = [f"{live.url}/healthz", f"{live.url}/api/v1/users/alice", f"{live.url}/auth/session"]
    with ThreadPoolExecutor(THREADS) as pool:
        statuses = list(pool.map(lambda i: status_of(urls[i % len(urls)]), range(count)))
    return {status: statuses.count(status) for status in set(statuses)}


def test_with_ratio_sampling_every_request_is_answered_and_so_is_every_later_one(sampled_app):
    assert plain_requests(sampled_app) == {200: 160}
    assert plain_requests(sampled_app) == {200: 160}


def test_unsampled_callers_are_answered_and_leave_no_context_behind_in_any_worker(sampled_app, otlp_receiver):
    def unsampled(i):
        _, headers = traceparent("00")
        paths = ["/healthz", "/api/v1/users/alice", f"/auth/callback?code={CODE}&state={STATE}"]
        return status_of(f"{sampled_app.url}{paths[i % 3]}", headers)

    with ThreadPoolExecutor(THREADS) as pool:
        statuses = list(pool.map(unsampled, range(96)))
    # The callback's state is no pending sign-in's: the sign-in error page, as untraced.
    assert statuses == [400 if i % 3 == 2 else 200 for i in range(96)]
    assert plain_requests(sampled_app) == {200: 160}
    # A thread that kept an unsampled caller's context would make every later trace its unsampled child.
    sampled_id, headers = traceparent("01")
    with ThreadPoolExecutor(THREADS) as pool:
        assert set(pool.map(lambda _: status_of(f"{sampled_app.url}/healthz", headers), range(64))) == {200}
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and len(server_spans(otlp_receiver, sampled_id)) < 64:
        time.sleep(0.1)
    assert len(server_spans(otlp_receiver, sampled_id)) == 64


def server_spans(receiver, trace_id: str) -> list:
    return [span for span in receiver.spans() if span.trace_id == trace_id and span.kind == "server"]


def send_raw(port: int, data: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as connection:
        connection.sendall(data)
        return connection.recv(4096)


def gunicorn_lines(live) -> list[str]:
    """The lines gunicorn wrote itself (the app's own lines are JSON objects)."""
    return [line for line in live.log_path.read_text().splitlines() if not line.startswith("{")]


def test_no_line_gunicorn_writes_carries_a_query_string(sampled_app):
    port = int(sampled_app.url.rsplit(":", 1)[1])
    _, unsampled = traceparent("00")
    assert status_of(f"{sampled_app.url}/auth/callback?code={CODE}&state={STATE}", unsampled) == 400
    assert status_of(f"{sampled_app.url}/auth/login?return_to=/x%3Fcode%3D{CODE}") == 302
    # A request line gunicorn refuses itself, which it logs with the line as sent.
    refused = send_raw(port, f"GET /auth/callback?code={CODE}&state={STATE}\r\n\r\n".encode())
    assert refused.startswith(b"HTTP/1.1 400")
    time.sleep(0.5)
    lines = gunicorn_lines(sampled_app)
    assert any("/auth/callback" in line and "Invalid request" in line for line in lines), lines[-5:]
    assert any('"GET /auth/login' in line for line in lines), "gunicorn's access log was not on"
    assert not any("Error handling request" in line for line in lines)
    leaks = [line for line in sampled_app.log_path.read_text().splitlines() if CODE in line or STATE in line]
    assert leaks == []
    assert not [line for line in lines if "/auth/" in line and "?" in line.split("/auth/", 1)[1]]


def traced_server_span(receiver, trace_id: str):
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and not server_spans(receiver, trace_id):
        time.sleep(0.1)
    time.sleep(0.3)  # the provider calls' spans, if a batch of the other worker carries them
    (span,) = server_spans(receiver, trace_id)
    return span, [span for span in receiver.spans() if span.trace_id == trace_id]


def without_query(url: str) -> str:
    return url.split("?", 1)[0]


def test_redirects_keep_no_query_and_a_callers_baggage_reaches_neither_a_span_nor_the_provider(sampled, otlp_receiver):
    idp, live = sampled
    baggage, hidden = f"account.secret={secrets.token_hex(8)}", secrets.token_hex(8)
    trace_id, headers = traceparent("01")
    headers |= {"baggage": baggage, "Referer": f"{live.url}/page?token={hidden}", "X-Api-Key": hidden}
    login = requests.get(f"{live.url}/auth/login", headers=headers, allow_redirects=False, timeout=10)
    assert login.status_code == 302 and "request_uri=" in login.headers["Location"]
    span, trace = traced_server_span(otlp_receiver, trace_id)
    assert span.attributes["http.response.header.location"] == [without_query(login.headers["Location"])]
    assert span.attributes["http.request.header.referer"] == [f"{live.url}/page"]
    assert "http.request.header.user_agent" in span.attributes, "header capture was not on"
    texts = [text for traced in trace for text in traced.texts()]
    request_uri = parse_qs(urlsplit(login.headers["Location"]).query)["request_uri"][0]
    assert [text for text in texts if hidden in text or "account.secret" in text or request_uri in text] == []
    assert not [text for text in texts if text.endswith(("baggage", "x_api_key", "authorization", "cookie"))]
    # The pushed authorization request went to the provider inside this trace, without the baggage.
    sent = [entry for entry in idp.stats()["traceparents"] if entry["traceparent"].split("-")[1] == trace_id]
    assert sent and all(entry["baggage"] is None for entry in sent), sent


def test_the_form_sign_outs_redirect_is_recorded_without_the_id_token(sampled_app, otlp_receiver):
    live = sampled_app
    http = requests.Session()
    authorize = http.get(f"{live.url}/auth/login", allow_redirects=False, timeout=10).headers["Location"]
    callback = oidc_driver.login_at_idp(http, authorize, "bob", PASSWORD)
    assert http.get(callback, allow_redirects=False, timeout=10).status_code == 302
    trace_id, headers = traceparent("01")
    signed_out = http.post(
        f"{live.url}/auth/logout", headers={**headers, "Origin": live.url}, allow_redirects=False, timeout=10
    )
    assert signed_out.status_code == 303
    id_token = parse_qs(urlsplit(signed_out.headers["Location"]).query)["id_token_hint"][0]
    remember_secrets(id_token)
    span, trace = traced_server_span(otlp_receiver, trace_id)
    assert span.name == "POST /auth/logout"
    assert span.attributes["http.response.header.location"] == [without_query(signed_out.headers["Location"])]
    assert not [text for traced in trace for text in traced.texts() if id_token in text]
