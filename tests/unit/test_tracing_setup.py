"""Tracing off costs nothing (no provider, exporter, processor or instrumentation), the OTEL_* variables
decide where spans go, and the scrubbing every exported span goes through."""

import gc

import pytest
import redis
import requests
from opentelemetry import trace
from opentelemetry.sdk.trace import Event, ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SpanExporter
from opentelemetry.trace import Status, StatusCode

from app import create_app, tracing
from app.trace_privacy import CAPTURABLE_HEADERS, scrubbed, scrubbed_attributes
from config import Config
from tests.helpers.settings import app_env

ENDPOINT = "http://127.0.0.1:4318"


def sdk_objects() -> list:
    """Every live tracer provider, span processor and exporter (the SDK module's own do-nothing
    SpanProcessor, made when it is imported, aside)."""
    gc.collect()
    found = (o for o in gc.get_objects() if isinstance(o, SpanExporter | SpanProcessor | TracerProvider))
    return [o for o in found if type(o) is not SpanProcessor]


@pytest.mark.parametrize(
    "otel",
    [{}, {"OTEL_SDK_DISABLED": "true", "OTEL_EXPORTER_OTLP_ENDPOINT": ENDPOINT}],
    ids=["no endpoint", "sdk disabled"],
)
def test_without_an_endpoint_or_with_the_sdk_disabled_tracing_installs_and_creates_nothing(
    otel, stub_issuer, fake_redis
):
    app = create_app(Config(app_env(stub_issuer.issuer, **otel)), redis=fake_redis)
    assert app.config["OTEL_TRACES_URL"] is None
    assert tracing._provider is None
    assert not isinstance(trace.get_tracer_provider(), TracerProvider)
    assert sdk_objects() == []
    assert type(app.wsgi_app).__name__ != "OpenTelemetryMiddleware"
    assert not hasattr(requests.Session.send, "__wrapped__")
    assert not hasattr(redis.Redis.execute_command, "__wrapped__")
    assert tracing.current_trace_id() is None


@pytest.mark.parametrize(
    "otel, url",
    [
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": ENDPOINT}, f"{ENDPOINT}/v1/traces"),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": f"{ENDPOINT}/"}, f"{ENDPOINT}/v1/traces"),
        (
            {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:1/t", "OTEL_EXPORTER_OTLP_ENDPOINT": ENDPOINT},
            "http://c:1/t",
        ),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": ENDPOINT, "OTEL_SDK_DISABLED": "TRUE"}, None),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": ENDPOINT, "OTEL_TRACES_EXPORTER": "none"}, None),
        ({"OTEL_SDK_DISABLED": "false"}, None),
    ],
)
def test_the_standard_otel_variables_decide_where_traces_go(otel, url):
    found = Config(app_env("http://issuer.invalid", **otel)).OTEL_TRACES_URL
    assert found == url


def test_the_current_trace_id_is_the_active_spans_in_hex(monkeypatch):
    provider = TracerProvider(shutdown_on_exit=False)
    monkeypatch.setattr(tracing, "_provider", provider)
    assert tracing.current_trace_id() is None
    with provider.get_tracer("test").start_as_current_span("request") as span:
        assert tracing.current_trace_id() == format(span.get_span_context().trace_id, "032x")


def test_urls_lose_their_query_string_and_the_query_attribute_is_dropped():
    attributes = {
        "http.target": "/auth/callback?code=c0de&state=s7ate",
        "http.url": "http://app/auth/callback?code=c0de#frag",
        "url.full": "http://idp/token?x=1",
        "url.query": "code=c0de",
        "url.path": "/auth/callback",
    }
    assert scrubbed_attributes(attributes) == {
        "http.target": "/auth/callback",
        "http.url": "http://app/auth/callback",
        "url.full": "http://idp/token",
        "url.path": "/auth/callback",
    }


def test_redis_statements_keep_only_their_command_names():
    attributes = {"db.statement": "SET pp:tokens:abc sealed-blob", "db.query.text": "EVALSHA ? ?\nGETDEL ?"}
    assert scrubbed_attributes(attributes) == {"db.statement": "SET", "db.query.text": "EVALSHA\nGETDEL"}


@pytest.mark.parametrize(
    "header", ["authorization", "cookie", "set_cookie", "dpop", "proxy_authorization", "x_api_key", "baggage", "x_csrf"]
)
def test_only_allow_listed_headers_are_kept_whichever_direction_captured_them(header):
    attributes = {
        f"http.request.header.{header}": ("secret",),
        f"http.response.header.{header}": ("secret",),
        "http.request.header.user_agent": ("curl",),
        "http.response.header.content_type": ("text/html",),
    }
    assert scrubbed_attributes(attributes) == {
        "http.request.header.user_agent": ("curl",),
        "http.response.header.content_type": ("text/html",),
    }


def test_baggage_is_kept_only_when_the_operator_asked_for_it():
    attributes = {"http.request.header.baggage": ("user=alice",)}
    assert scrubbed_attributes(attributes) == {}
    assert scrubbed_attributes(attributes, CAPTURABLE_HEADERS | {"baggage"}) == attributes


def test_urls_in_header_values_and_in_any_other_attribute_lose_their_query():
    attributes = {
        "http.response.header.location": ("https://idp/logout?id_token_hint=eyJ.x.y&state=s",),
        "http.request.header.referer": ["/page?token=t0ken#top"],
        "exception.message": "No connection to http://idp:9/token?code=c0de (refused); /auth/callback?state=s7ate",
        "http.route": "/api/v1/users/<path:username>",
        "http.response.status_code": 303,
    }
    assert scrubbed_attributes(attributes) == {
        "http.response.header.location": ("https://idp/logout",),
        "http.request.header.referer": ["/page"],
        "exception.message": "No connection to http://idp:9/token (refused); /auth/callback",
        "http.route": "/api/v1/users/<path:username>",
        "http.response.status_code": 303,
    }


def test_a_scrubbed_span_keeps_its_identity_and_scrubs_its_events_too():
    span = ReadableSpan(
        name="GET /auth/callback",
        context=trace.SpanContext(1, 2, is_remote=False),
        attributes={"http.target": "/auth/callback?code=c0de", "http.route": "/auth/callback"},
        events=[Event("exception", {"url.full": "http://idp/x?token=t0ken", "exception.type": "Boom"})],
        status=Status(StatusCode.ERROR, "GET http://idp/x?token=t0ken failed"),
        start_time=1,
        end_time=2,
    )
    copy = scrubbed(span)
    assert (copy.name, copy.context, copy.start_time, copy.end_time) == (span.name, span.context, 1, 2)
    assert dict(copy.attributes) == {"http.target": "/auth/callback", "http.route": "/auth/callback"}
    assert dict(copy.events[0].attributes) == {"url.full": "http://idp/x", "exception.type": "Boom"}
    assert (copy.status.status_code, copy.status.description) == (StatusCode.ERROR, "GET http://idp/x failed")
