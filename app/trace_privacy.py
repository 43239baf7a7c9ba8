"""What a span may carry when it leaves the process: no query string, no Redis arguments, no secret header.

Applied to every finished span on its way to the exporter, whatever the instrumentations (or an
operator's OTEL_INSTRUMENTATION_HTTP_CAPTURE_HEADERS_* settings) put in it: the callback URL's query
holds the code and `state`, a Redis command's arguments hold sealed token sets and session records,
and the Authorization, Cookie and DPoP headers are credentials.
"""

from collections.abc import Mapping, Sequence

from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

URL_KEYS = {"http.target", "http.url", "url.full"}
DROPPED_KEYS = {"url.query"}
STATEMENT_KEYS = {"db.statement", "db.query.text"}
HEADER_PREFIXES = ("http.request.header.", "http.response.header.")
SECRET_HEADERS = {"authorization", "proxy_authorization", "cookie", "set_cookie", "dpop"}


def without_query(url: str) -> str:
    """`url` without its query string and fragment."""
    return url.split("?", 1)[0].split("#", 1)[0]


def command_names(statement: str) -> str:
    """Only the command name of each Redis command in `statement` (one per line in a pipeline)."""
    return "\n".join(line.split(" ", 1)[0] for line in statement.splitlines())


def _is_secret_header(key: str) -> bool:
    for prefix in HEADER_PREFIXES:
        if key.startswith(prefix):
            return key[len(prefix) :].replace("-", "_").lower() in SECRET_HEADERS
    return False


def scrubbed_attributes(attributes: Mapping | None) -> dict:
    """`attributes` without query strings, Redis arguments or secret headers."""
    kept = {}
    for key, value in (attributes or {}).items():
        if key in DROPPED_KEYS or _is_secret_header(key):
            continue
        if key in URL_KEYS and isinstance(value, str):
            value = without_query(value)
        elif key in STATEMENT_KEYS and isinstance(value, str):
            value = command_names(value)
        kept[key] = value
    return kept


def scrubbed(span: ReadableSpan) -> ReadableSpan:
    """A copy of `span` whose attributes, and its events' attributes, are scrubbed."""
    return ReadableSpan(
        name=span.name,
        context=span.context,
        parent=span.parent,
        resource=span.resource,
        attributes=scrubbed_attributes(span.attributes),
        events=[Event(event.name, scrubbed_attributes(event.attributes), event.timestamp) for event in span.events],
        links=span.links,
        kind=span.kind,
        status=span.status,
        start_time=span.start_time,
        end_time=span.end_time,
        instrumentation_scope=span.instrumentation_scope,
    )


class ScrubbingExporter(SpanExporter):
    """Hands `exporter` only scrubbed copies of the spans (in the export thread, off the request path)."""

    def __init__(self, exporter: SpanExporter):
        self._exporter = exporter

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        return self._exporter.export([scrubbed(span) for span in spans])

    def shutdown(self) -> None:
        self._exporter.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self._exporter.force_flush(timeout_millis)
