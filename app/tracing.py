"""OpenTelemetry traces, only when the OTEL_* variables name an OTLP endpoint (Config.OTEL_TRACES_URL).

Off, nothing is imported beyond the API, installed or exported. On, each process (each gunicorn
worker, after the fork) exports over OTLP/HTTP with protobuf: a server span per request named by its
route template, a child span per Redis command and per identity-provider call, the incoming W3C
`traceparent` continued and one sent to the provider; app/trace_privacy.py scrubs every span.
Tracing never changes an answer: whatever the sampler decides and whatever a hook raises, the
request is answered as it would be with tracing off.
"""

import logging
import os

from flask import Flask, request
from opentelemetry import context, trace

SERVICE_NAME = "profile-poke"
REACHED = "profile_poke.tracing.reached"  # set in the environ once the traced app has been called

log = logging.getLogger(__name__)
_provider = None
_reported: set[str] = set()


def current_trace_id() -> str | None:
    """The current request's trace id as 32 hex digits; None when tracing is off or no span is active."""
    if _provider is None:
        return None
    span_context = trace.get_current_span().get_span_context()
    return format(span_context.trace_id, "032x") if span_context.is_valid else None


def init_tracing(app: Flask, traces_url: str | None, propagators: str | None = None) -> None:
    """Trace `app`'s requests to `traces_url` (an OTLP/HTTP traces endpoint); nothing at all when None.
    `propagators` is OTEL_PROPAGATORS as set (None: W3C `traceparent` only, never `baggage`)."""
    if not traces_url:
        return
    start_exporting(traces_url, propagators)
    # Imported only when tracing is on, so that off costs not even the import.
    from opentelemetry.instrumentation.wsgi import OpenTelemetryMiddleware

    # Around the whole Flask app, not in a before_request hook (as the Flask instrumentation does): the
    # session is read from Redis before any before_request hook runs, and that command belongs in the trace.
    app.wsgi_app = TracedApp(app.wsgi_app, OpenTelemetryMiddleware)


def start_exporting(traces_url: str, propagators: str | None = None) -> None:
    """This process's tracer provider, OTLP/HTTP exporter, propagators and Redis and `requests`
    instrumentations, once."""
    global _provider
    if _provider is not None:
        return
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.instrumentation.redis import RedisInstrumentor
    from opentelemetry.instrumentation.requests import RequestsInstrumentor
    from opentelemetry.propagate import set_global_textmap
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    from .trace_privacy import CAPTURABLE_HEADERS, ScrubbingExporter

    if propagators is None:
        # The SDK's default also reads and forwards `baggage`: a client's baggage would reach the provider.
        set_global_textmap(TraceContextTextMapPropagator())
    names = {name.strip().lower() for name in (propagators or "").split(",")}
    allowed = CAPTURABLE_HEADERS | ({"baggage"} if "baggage" in names else set())
    resource = Resource.create({"process.pid": os.getpid()})
    if str(resource.attributes.get("service.name", "")).startswith("unknown_service"):
        resource = resource.merge(Resource({"service.name": SERVICE_NAME}))
    provider = TracerProvider(resource=resource)
    exporter = ScrubbingExporter(OTLPSpanExporter(endpoint=traces_url), allowed)
    provider.add_span_processor(BatchSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    RedisInstrumentor().instrument(tracer_provider=provider)
    RequestsInstrumentor().instrument(tracer_provider=provider)
    _provider = provider


def stop_exporting() -> None:
    """Send the spans still queued and stop the exporter (at worker exit); nothing when tracing is off."""
    if _provider is not None:
        _provider.shutdown()


class TracedApp:
    """`wsgi_app` under the OpenTelemetry WSGI `middleware`, whose failures never reach a request: a hook
    that raises is reported once and skipped, and if the middleware itself fails before the app runs,
    the request runs untraced with the context it came with."""

    def __init__(self, wsgi_app, middleware, request_hook=None, response_hook=None):
        self._app = wsgi_app
        self._traced = middleware(
            self._reached,
            request_hook=_guarded(request_hook or name_by_method, "the request hook"),
            response_hook=_guarded(response_hook or name_by_route, "the response hook"),
        )

    def _reached(self, environ, start_response):
        environ[REACHED] = True
        return self._app(environ, start_response)

    def __call__(self, environ, start_response):
        entered = context.get_current()
        try:
            return self._traced(environ, start_response)
        except Exception as error:
            if environ.get(REACHED):
                raise  # the app's own, as it would be untraced
            report_once("the tracing middleware", error)
            context.attach(entered)  # what the middleware attached and could not detach is dropped
            return self._app(environ, start_response)


def _guarded(hook, name: str):
    def run(*args):
        try:
            hook(*args)
        except Exception as error:
            report_once(name, error)

    return run


def report_once(name: str, error: Exception) -> None:
    """Log, once per process and `name`, that a part of tracing failed; never its message, which may
    hold a URL, and never a traceback in every request's log."""
    if name in _reported:
        return
    _reported.add(name)
    frame = error.__traceback__
    while frame is not None and frame.tb_next is not None:
        frame = frame.tb_next
    where = f" at {frame.tb_frame.f_code.co_filename}:{frame.tb_lineno}" if frame else ""
    log.error("tracing: %s raised %s%s; requests are answered without it", name, type(error).__name__, where)


def name_by_method(span, environ) -> None:
    """Rename a recording server span "<method>": the instrumentation names it "<method> <raw path>", and
    a path can name a user (a request that matches no route keeps this name)."""
    if span.is_recording():
        span.update_name(span.name.split(" ", 1)[0])


def name_by_route(span, environ, status, headers) -> None:
    """Rename a recording server span "<method> <route template>" and record the template."""
    rule = request.url_rule if request else None
    if rule is not None and span.is_recording():
        span.update_name(f"{request.method} {rule.rule}")
        span.set_attribute("http.route", rule.rule)
