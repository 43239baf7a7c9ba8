"""Traces from the app under gunicorn (two workers) over OTLP/HTTP to a real receiver that decodes the
protobuf: span names, parents, the traceparent carried in and sent to the dev provider, and no secret
in any attribute, even with every header capture an operator could switch on."""

import json
import secrets
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from urllib.parse import parse_qs, urlsplit

import pytest
import requests

from app.auth.pending import USED_UP, nonce_of
from app.extensions import make_redis
from dev import oidc_driver
from dev.otlp_receiver import Receiver
from dev.services import free_port
from tests.helpers.real_services import (
    PASSWORD,
    Idp,
    LiveApp,
    delete_prefix,
    integration_env,
    start_live_app,
    start_own_idp,
)
from tests.helpers.settings import CSRF, SESSION_COOKIE
from tests.helpers.signin import opened_sign_in, stored_tokens, token_key

# What an operator could ask the instrumentations to record; the app must still drop the secret ones.
CAPTURED = "authorization,cookie,set-cookie,dpop,user-agent"


@dataclass
class Traced:
    idp: Idp
    app: LiveApp
    receiver: Receiver


@pytest.fixture(scope="module")
def traced(workdir, redis_url, otlp_receiver):
    """A dev provider of its own (so its traceparent record is this module's) and the app under gunicorn,
    two workers, exporting to the session's receiver every 100 ms."""
    port = free_port()
    idp_server, idp = start_own_idp(workdir, [port])
    env = integration_env(
        idp,
        redis_url,
        OTEL_EXPORTER_OTLP_ENDPOINT=otlp_receiver.url,
        OTEL_BSP_SCHEDULE_DELAY="100",
        LOG_LEVEL="INFO",  # access lines too, for the trace id beside the request id
        OTEL_INSTRUMENTATION_HTTP_CAPTURE_HEADERS_SERVER_REQUEST=CAPTURED,
        OTEL_INSTRUMENTATION_HTTP_CAPTURE_HEADERS_SERVER_RESPONSE=CAPTURED,
        OTEL_INSTRUMENTATION_HTTP_CAPTURE_HEADERS_CLIENT_REQUEST=CAPTURED,
        OTEL_INSTRUMENTATION_HTTP_CAPTURE_HEADERS_CLIENT_RESPONSE=CAPTURED,
    )
    app_server, live = start_live_app(env, port, workdir, workers=2)
    yield Traced(idp, live, otlp_receiver)
    app_server.stop()
    idp_server.stop()
    delete_prefix(redis_url, env["REDIS_KEY_PREFIX"])


@pytest.fixture(scope="module")
def signed_in(traced, redis_url):
    """A browser-style sign-in through the dev provider, and every secret it involved."""
    live = traced.app
    redis = make_redis(redis_url, socket_timeout=5)
    http = requests.Session()
    authorize = http.get(f"{live.url}/auth/login", allow_redirects=False, timeout=10).headers["Location"]
    callback = oidc_driver.login_at_idp(http, authorize, "alice", PASSWORD)
    # With PAR the state and nonce never pass through the browser before the callback.
    state = parse_qs(urlsplit(callback).query)["state"][0]
    verifier = opened_sign_in(live.env, state, http.cookies.get_dict()).verifier
    before_callback = http.cookies.get_dict()  # the sealed login cookie: the callback replaces it with a marker
    code = parse_qs(urlsplit(callback).query)["code"][0]
    assert http.get(callback, allow_redirects=False, timeout=10).status_code == 302
    assert http.get(f"{live.url}/api/v1/me/profile", headers=CSRF, timeout=10).status_code == 200
    tokens = stored_tokens(redis, live.env, http)
    sealed = json.loads(redis.get(token_key(live.env, http.cookies[SESSION_COOKIE])))
    known = {
        "code": code,
        "state": state,
        "verifier": verifier,
        "nonce": nonce_of(verifier),
        "request_uri": parse_qs(urlsplit(authorize).query)["request_uri"][0],
        **{name: tokens[name] for name in ("access_token", "refresh_token", "id_token")},
        **{f"cookie {name}": value for name, value in before_callback.items()},
        **{f"cookie {cookie.name}": cookie.value for cookie in http.cookies if cookie.value != USED_UP},
        **{f"sealed {name}": value for name, value in sealed.items() if isinstance(value, str) and len(value) > 20},
    }
    redis.close()
    return http, known


def spans_until(receiver, found, timeout: float = 10.0):
    """The receiver's spans once `found(spans)` is true, and the other worker's batch has had its
    chance too (each worker exports every 100 ms, on its own)."""
    deadline = time.monotonic() + timeout
    while not found(receiver.spans()) and time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(0.3)
    return receiver.spans()


def served(trace_id: str):
    """A condition: the server span of trace `trace_id` has arrived (it ends after its children)."""
    return lambda spans: any(span.trace_id == trace_id and span.kind == "server" for span in spans)


def server_span(spans, name):
    matching = [span for span in spans if span.kind == "server" and span.name == name]
    assert matching, f"no server span {name!r} among {sorted({span.name for span in spans})}"
    return matching[-1]


def children_of(spans, parent):
    return [span for span in spans if span.parent_id == parent.span_id and span.trace_id == parent.trace_id]


def is_redis(span) -> bool:
    # The statement, not `db.system`: the Redis Cluster client's spans carry no connection attributes.
    return "db.statement" in span.attributes or "db.query.text" in span.attributes


def url_of(span) -> str:
    return span.attributes.get("url.full") or span.attributes.get("http.url") or ""


def test_a_sign_in_is_one_trace_per_request_with_redis_and_provider_calls_as_children(traced, signed_in):
    idp = traced.idp
    receiver = traced.receiver
    spans = spans_until(receiver, lambda spans: any(s.name == "GET /api/v1/me/profile" for s in spans))
    callback = server_span(spans, "GET /auth/callback")
    children = children_of(spans, callback)
    assert {span.kind for span in children} == {"client"}
    redis_calls = [span for span in children if is_redis(span)]
    provider_calls = [span for span in children if url_of(span).startswith(idp.issuer)]
    assert redis_calls and provider_calls, [span.name for span in children]
    assert any(url_of(span).endswith("/protocol/openid-connect/token") for span in provider_calls)
    # The session cookie's record is read before Flask runs any before_request hook: in the trace too.
    profile = server_span(spans, "GET /api/v1/me/profile")
    assert any(is_redis(span) for span in children_of(spans, profile))
    assert server_span(spans, "GET /auth/login").trace_id != callback.trace_id


def test_redis_spans_name_the_command_and_never_its_arguments(traced, signed_in):
    spans = spans_until(traced.receiver, lambda spans: any(s.name == "GET /api/v1/me/profile" for s in spans))
    statements = [
        span.attributes.get("db.statement") or span.attributes.get("db.query.text") for span in spans if is_redis(span)
    ]
    # One command name per line (a pipeline has several), no argument, not even a "?" for one.
    lines = [line for statement in statements for line in statement.splitlines()]
    assert lines and all(line.isalpha() and line.isupper() for line in lines), lines


def test_a_route_with_a_username_is_named_by_its_template_and_continues_the_incoming_trace(traced, signed_in):
    live = traced.app
    receiver = traced.receiver
    http, _ = signed_in
    trace_id, parent_id = secrets.token_hex(16), secrets.token_hex(8)
    headers = {**CSRF, "traceparent": f"00-{trace_id}-{parent_id}-01"}
    assert http.get(f"{live.url}/api/v1/users/bob", headers=headers, timeout=10).status_code == 200
    spans = spans_until(receiver, served(trace_id))
    span = server_span([s for s in spans if s.trace_id == trace_id], "GET /api/v1/users/<path:username>")
    assert span.parent_id == parent_id
    assert span.attributes["http.route"] == "/api/v1/users/<path:username>"


def test_a_path_that_matches_no_route_is_named_by_its_method_alone(traced):
    live = traced.app
    receiver = traced.receiver
    trace_id = secrets.token_hex(16)
    headers = {"traceparent": f"00-{trace_id}-{secrets.token_hex(8)}-01"}
    assert requests.get(f"{live.url}/no/such/page/bob", headers=headers, timeout=10).status_code == 404
    spans = spans_until(receiver, served(trace_id))
    assert [span.name for span in spans if span.trace_id == trace_id and span.kind == "server"] == ["GET"]


def test_the_provider_receives_a_traceparent_naming_the_call_span(traced, signed_in):
    idp = traced.idp
    receiver = traced.receiver
    spans = spans_until(receiver, lambda spans: any(s.name == "GET /auth/callback" for s in spans))
    callback = server_span(spans, "GET /auth/callback")
    token_call = next(span for span in children_of(spans, callback) if url_of(span).endswith("/token"))
    received = [entry for entry in idp.stats()["traceparents"] if entry["path"].endswith("/token")]
    # version-trace-parent-flags; the flags say "sampled" (and may say "random trace id" too).
    fields = [entry["traceparent"].split("-") for entry in received]
    assert [["00", callback.trace_id, token_call.span_id]] == [parts[:3] for parts in fields]
    assert int(fields[0][3], 16) & 1


def test_both_workers_export_their_spans(traced):
    live = traced.app
    receiver = traced.receiver

    def call(_):
        return requests.get(f"{live.url}/healthz", timeout=10).status_code

    for _ in range(5):
        with ThreadPoolExecutor(8) as pool:
            assert set(pool.map(call, range(40))) == {200}
        spans = spans_until(receiver, lambda spans: len(worker_pids(spans, live)) == 2, timeout=2)
        if len(worker_pids(spans, live)) == 2:
            break
    assert len(worker_pids(spans, live)) == 2


def worker_pids(spans, live) -> set:
    return {span.resource["process.pid"] for span in spans if span.name == "GET /healthz"}


def test_no_span_attribute_carries_a_token_code_verifier_state_cookie_or_sealed_record(traced, signed_in):
    live = traced.app
    receiver = traced.receiver
    http, known = signed_in
    # A bearer call, a refusal and a logout too: the Authorization header, the error paths and the end
    # of the session are traced as well.
    bearer = {"Authorization": f"Bearer {known['access_token']}"}
    assert requests.get(f"{live.url}/api/v1/me/profile", headers=bearer, timeout=10).status_code == 200
    http.get(f"{live.url}/auth/callback?code=not-a-code&state=not-a-state", timeout=10)
    http.post(f"{live.url}/auth/logout", headers=CSRF, allow_redirects=False, timeout=10)
    spans = spans_until(receiver, lambda spans: any(s.name == "POST /auth/logout" for s in spans))
    texts = [text for span in spans for text in span.texts()]
    assert any(key.startswith("http.request.header.user_agent") for key in texts), "header capture was not on"
    leaks = {name for name, value in known.items() for text in texts if value in text}
    assert leaks == set()
    assert not any(key.startswith(("http.request.header.cookie", "http.request.header.authorization")) for key in texts)
    urls = [span.attributes.get(key, "") for span in spans for key in ("http.target", "http.url", "url.full")]
    assert any("/auth/callback" in url for url in urls)
    assert not any("?" in url for url in urls), [url for url in urls if "?" in url]


def test_log_and_audit_lines_carry_the_trace_id_beside_the_request_id(traced):
    live = traced.app
    trace_id = secrets.token_hex(16)
    headers = {"traceparent": f"00-{trace_id}-{secrets.token_hex(8)}-01", "X-Request-ID": "trace-log-1"}
    refused = requests.get(f"{live.url}/auth/callback?state=unknown&code=x", headers=headers, timeout=10)
    assert refused.status_code == 400
    deadline = time.monotonic() + 5
    lines = []
    while len(lines) < 2 and time.monotonic() < deadline:
        lines = [json.loads(line) for line in live.log_path.read_text().splitlines() if '"trace-log-1"' in line]
        time.sleep(0.05)
    assert {line.get("event", "access") for line in lines} == {"signin.failed", "access"}
    assert all((line["request_id"], line["trace_id"]) == ("trace-log-1", trace_id) for line in lines)
