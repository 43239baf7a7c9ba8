"""OpenTelemetry traces, only when the OTEL_* variables name an OTLP endpoint (Config.OTEL_TRACES_URL).

Off, nothing is imported beyond the API, installed or exported. On, each process (each gunicorn
worker, after the fork) exports over OTLP/HTTP with protobuf: a server span per request named by its
route template, a child span per Redis command and per identity-provider call, the incoming W3C
`traceparent` continued and one sent to the provider; app/trace_privacy.py scrubs every span.
"""

import os

from flask import Flask, request
from opentelemetry import trace

SERVICE_NAME = "profile-poke"

_provider = None


def current_trace_id() -> str | None:
    """The current request's trace id as 32 hex digits; None when tracing is off or no span is active."""
    if _provider is None:
        return None
    context = trace.get_current_span().get_span_context()
    return format(context.trace_id, "032x") if context.is_valid else None


def init_tracing(app: Flask, traces_url: str | None) -> None:
    """Trace `app`'s requests to `traces_url` (an OTLP/HTTP traces endpoint); nothing at all when None."""
    if not traces_url:
        return
    start_exporting(traces_url)
    # Imported only when tracing is on, so that off costs not even the import.
    from opentelemetry.instrumentation.wsgi import OpenTelemetryMiddleware

    # Around the whole Flask app, not in a before_request hook (as the Flask instrumentation does): the
    # session is read from Redis before any before_request hook runs, and that command belongs in the trace.
    app.wsgi_app = OpenTelemetryMiddleware(app.wsgi_app, request_hook=_name_by_method, response_hook=_name_by_route)


def start_exporting(traces_url: str) -> None:
    """This process's tracer provider, OTLP/HTTP exporter and Redis and `requests` instrumentations, once."""
    global _provider
    if _provider is not None:
        return
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.instrumentation.redis import RedisInstrumentor
    from opentelemetry.instrumentation.requests import RequestsInstrumentor
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    from .trace_privacy import ScrubbingExporter

    resource = Resource.create({"process.pid": os.getpid()})
    if str(resource.attributes.get("service.name", "")).startswith("unknown_service"):
        resource = resource.merge(Resource({"service.name": SERVICE_NAME}))
    provider = TracerProvider(resource=resource)
    provider.add_span_processor(BatchSpanProcessor(ScrubbingExporter(OTLPSpanExporter(endpoint=traces_url))))
    trace.set_tracer_provider(provider)
    RedisInstrumentor().instrument(tracer_provider=provider)
    RequestsInstrumentor().instrument(tracer_provider=provider)
    _provider = provider


def stop_exporting() -> None:
    """Send the spans still queued and stop the exporter (at worker exit); nothing when tracing is off."""
    if _provider is not None:
        _provider.shutdown()


def _name_by_method(span, environ) -> None:
    # The instrumentation names the span "<method> <raw path>"; a path can name a user, and a request
    # that matches no route keeps this name.
    span.update_name(span.name.split(" ", 1)[0])


def _name_by_route(span, environ, status, headers) -> None:
    rule = request.url_rule if request else None
    if rule is not None and span.is_recording():
        span.update_name(f"{request.method} {rule.rule}")
        span.set_attribute("http.route", rule.rule)
