"""Tracing never changes an answer (app/tracing.py TracedApp, with the real OpenTelemetry WSGI middleware and
SDK): under every sampler, with sampled and unsampled callers, and whatever a hook or the sampler raises,
each request is answered as untraced, the thread keeps no context, and a failure is logged once. And what
escapes the app is a 500, never gunicorn's, whose own lines lose their query strings."""

import io
import logging
import secrets
from functools import partial

import pytest
from flask import Flask
from gunicorn.config import Config as GunicornConfig
from opentelemetry import context, trace
from opentelemetry.instrumentation.wsgi import OpenTelemetryMiddleware
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import (
    ALWAYS_OFF,
    ALWAYS_ON,
    ParentBasedTraceIdRatio,
    Sampler,
    TraceIdRatioBased,
)

from app import tracing
from app.last_resort import AnswerEveryRequest
from app.tracing import TracedApp
from server import gunicorn_logger

SAMPLERS = {
    "always_off": ALWAYS_OFF,
    "always_on": ALWAYS_ON,
    "traceidratio 0.1": TraceIdRatioBased(0.1),
    "parentbased_traceidratio 0.1": ParentBasedTraceIdRatio(0.1),
}


def traceparent(flags: str) -> dict:
    return {"traceparent": f"00-{secrets.token_hex(16)}-{secrets.token_hex(8)}-{flags}"}


CALLERS = {
    "no traceparent": lambda: {},
    "unsampled parent": lambda: traceparent("00"),
    "sampled parent": lambda: traceparent("01"),
}


class RaisingSampler(Sampler):
    def should_sample(self, *args, **kwargs):
        raise RuntimeError("a sampler that fails")

    def get_description(self) -> str:
        return "raising"


@pytest.fixture
def fresh_reports(monkeypatch):
    """This process has reported no tracing failure yet (each is reported once per process)."""
    monkeypatch.setattr(tracing, "_reported", set())


def traced_client(sampler, **hooks):
    """A small Flask app under TracedApp, its spans kept in memory; returns (test client, exporter)."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider(sampler=sampler, shutdown_on_exit=False)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    flask_app = Flask(__name__)
    flask_app.add_url_rule("/users/<name>", "user", lambda name: f"hello {name}")
    flask_app.wsgi_app = TracedApp(
        flask_app.wsgi_app, partial(OpenTelemetryMiddleware, tracer_provider=provider), **hooks
    )
    return flask_app.test_client(), exporter


def answered(client, headers) -> tuple[int, str]:
    response = client.get("/users/bob?code=c0de", headers=headers)
    return response.status_code, response.get_data(as_text=True)


@pytest.mark.parametrize("caller", CALLERS)
@pytest.mark.parametrize("sampler", SAMPLERS)
def test_every_sampler_and_caller_gets_the_untraced_answer_and_leaves_no_context(sampler, caller):
    client, exporter = traced_client(SAMPLERS[sampler])
    before = context.get_current()
    answers = {answered(client, CALLERS[caller]()) for _ in range(30)}
    assert answers == {(200, "hello bob")}
    assert context.get_current() == before
    assert trace.get_current_span() is trace.INVALID_SPAN
    # What was recorded is named by the route template, never the raw path.
    assert {span.name for span in exporter.get_finished_spans()} <= {"GET /users/<name>"}


def test_sampled_requests_are_recorded_and_continue_the_callers_trace():
    client, exporter = traced_client(ParentBasedTraceIdRatio(0.1))
    headers = traceparent("01")
    assert answered(client, headers) == (200, "hello bob")
    (span,) = exporter.get_finished_spans()
    assert format(span.context.trace_id, "032x") == headers["traceparent"].split("-")[1]
    assert span.name == "GET /users/<name>" and span.attributes["http.route"] == "/users/<name>"


def fail(*args):
    raise RuntimeError("a hook that fails at /auth/callback?code=c0de")


@pytest.mark.parametrize("hook", ["request_hook", "response_hook"])
@pytest.mark.parametrize("caller", CALLERS)
def test_a_hook_that_raises_changes_no_answer_and_is_logged_once_without_its_message(
    hook, caller, caplog, fresh_reports
):
    client, _ = traced_client(ParentBasedTraceIdRatio(0.5), **{hook: fail})
    before = context.get_current()
    with caplog.at_level(logging.ERROR, logger="app.tracing"):
        answers = {answered(client, CALLERS[caller]()) for _ in range(20)}
    assert answers == {(200, "hello bob")}
    assert context.get_current() == before
    name = hook.replace("_", " ")
    lines = [record.getMessage() for record in caplog.records if record.name == "app.tracing"]
    assert len(lines) == 1 and f"tracing: the {name} raised RuntimeError at " in lines[0]
    assert not any("c0de" in line for line in lines)


def test_a_sampler_that_raises_leaves_the_request_untraced_with_the_context_it_came_with(caplog, fresh_reports):
    client, exporter = traced_client(RaisingSampler())
    before = context.get_current()
    with caplog.at_level(logging.ERROR, logger="app.tracing"):
        answers = {answered(client, CALLERS[caller]()) for caller in CALLERS for _ in range(10)}
    assert answers == {(200, "hello bob")}
    assert context.get_current() == before
    assert exporter.get_finished_spans() == ()
    messages = [record.getMessage() for record in caplog.records if record.name == "app.tracing"]
    assert len(messages) == 1 and "tracing: the tracing middleware raised RuntimeError" in messages[0]


def test_gunicorn_lines_lose_every_query_string_tracebacks_included():
    config = GunicornConfig()
    config.set("errorlog", "-")
    config.set("accesslog", "-")
    logger = gunicorn_logger.Logger(config)
    written = io.StringIO()
    for log in (logger.error_log, logger.access_log):
        log.addHandler(logging.StreamHandler(written))
    try:
        raise ValueError("bad target /auth/callback?code=c0de&state=s7ate")
    except ValueError:
        logger.exception("Error handling request %s %s", "GET", "/auth/callback?code=c0de&state=s7ate")
    logger.warning("Invalid request from ip=127.0.0.1: Invalid HTTP request line: 'GET /auth/login?x=c0de'")
    logger.access_log.info('"%(r)s" %(s)s', {"r": "GET http://app/auth/callback?code=c0de HTTP/1.1", "s": "400"})
    lines = written.getvalue()
    assert "Error handling request GET /auth/callback\n" in lines
    assert "ValueError: bad target /auth/callback\n" in lines
    assert "request line: 'GET /auth/login'" in lines and '"GET http://app/auth/callback HTTP/1.1" 400' in lines
    assert "c0de" not in lines and "s7ate" not in lines


def test_an_exception_that_escapes_every_layer_is_a_500_and_a_log_line_without_the_query(caplog):
    def failing(environ, start_response):
        raise RuntimeError("teardown failed")

    client = Flask(__name__).test_client()
    client.application.wsgi_app = AnswerEveryRequest(failing)
    with caplog.at_level(logging.ERROR, logger="app.last_resort"):
        response = client.get("/auth/callback?code=c0de&state=s7ate")
    assert response.status_code == 500 and response.json == {
        "error": {"code": "internal_error", "message": "something went wrong"}
    }
    assert response.headers["Cache-Control"] == "no-store"
    assert [record.getMessage() for record in caplog.records] == [
        "unexpected failure outside the app: GET /auth/callback"
    ]


def test_a_failure_after_the_status_was_given_replaces_it_with_the_500():
    def late(environ, start_response):
        start_response("200 OK", [])
        raise RuntimeError("late")

    calls = []
    body = AnswerEveryRequest(late)({"REQUEST_METHOD": "GET", "PATH_INFO": "/x"}, lambda *args: calls.append(args))
    assert [call[0] for call in calls] == ["200 OK", "500 INTERNAL SERVER ERROR"]
    assert calls[1][2][0] is RuntimeError and b"internal_error" in b"".join(body)
