"""What a span may carry when it leaves the process: no query string, no Redis arguments, and of the
headers an operator asks the instrumentations to capture, only the allow-listed ones.

Applied to every finished span on its way to the exporter, whatever the instrumentations (or an
operator's OTEL_INSTRUMENTATION_HTTP_CAPTURE_HEADERS_* settings) put in it: the callback URL's query
holds the code and `state`, the sign-out redirect's `Location` the ID token, the login redirect's the
`state` and nonce, a Redis command's arguments sealed token sets and session records, and the
Authorization, Cookie and DPoP headers are credentials.
"""

import re
from collections.abc import Mapping, Sequence

from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
from opentelemetry.trace import Status

URL_KEYS = {"http.target", "http.url", "url.full"}
DROPPED_KEYS = {"url.query"}
STATEMENT_KEYS = {"db.statement", "db.query.text"}
HEADER_PREFIXES = ("http.request.header.", "http.response.header.")
# Headers that hold no credential and nothing a caller chose to hide; any other captured header is dropped
# (as the instrumentations name them: lower case, "-" as "_"). Their URLs lose their query too.
CAPTURABLE_HEADERS = frozenset(
    {
        "accept",
        "accept_encoding",
        "accept_language",
        "cache_control",
        "content_length",
        "content_type",
        "host",
        "location",
        "origin",
        "referer",
        "retry_after",
        "user_agent",
        "vary",
        "via",
        "www_authenticate",
        "x_forwarded_proto",
        "x_request_id",
    }
)
# A path or an absolute URL followed by its query or fragment (up to a space or a quote): the query goes.
URL_WITH_QUERY = re.compile(r"((?:\b[a-z][a-z0-9+.-]*://|/)[^\s?#\"'<>]*)[?#][^\s\"'<>]*", re.IGNORECASE)


def without_query(url: str) -> str:
    """`url` without its query string and fragment."""
    return url.split("?", 1)[0].split("#", 1)[0]


def without_queries(text: str) -> str:
    """`text` with every URL in it (absolute, or a path) cut before its query string or fragment."""
    return URL_WITH_QUERY.sub(r"\1", text) if ("?" in text or "#" in text) else text


def command_names(statement: str) -> str:
    """Only the command name of each Redis command in `statement` (one per line in a pipeline)."""
    return "\n".join(line.split(" ", 1)[0] for line in statement.splitlines())


def _header_allowed(key: str, allowed: frozenset) -> bool:
    for prefix in HEADER_PREFIXES:
        if key.startswith(prefix):
            return key[len(prefix) :].replace("-", "_").lower() in allowed
    return True


def _scrubbed_value(value):
    if isinstance(value, str):
        return without_queries(value)
    if isinstance(value, Sequence) and not isinstance(value, bytes):
        return type(value)(without_queries(item) if isinstance(item, str) else item for item in value)
    return value


def scrubbed_attributes(attributes: Mapping | None, allowed: frozenset = CAPTURABLE_HEADERS) -> dict:
    """`attributes` without query strings, Redis arguments or headers outside `allowed`."""
    kept = {}
    for key, value in (attributes or {}).items():
        if key in DROPPED_KEYS or not _header_allowed(key, allowed):
            continue
        if key in URL_KEYS and isinstance(value, str):
            value = without_query(value)
        elif key in STATEMENT_KEYS and isinstance(value, str):
            value = command_names(value)
        else:
            value = _scrubbed_value(value)
        kept[key] = value
    return kept


def scrubbed(span: ReadableSpan, allowed: frozenset = CAPTURABLE_HEADERS) -> ReadableSpan:
    """A copy of `span` whose name, status, attributes and events' attributes are scrubbed."""
    status = span.status
    if status.description:
        status = Status(status.status_code, without_queries(status.description))
    return ReadableSpan(
        name=without_queries(span.name),
        context=span.context,
        parent=span.parent,
        resource=span.resource,
        attributes=scrubbed_attributes(span.attributes, allowed),
        events=[
            Event(event.name, scrubbed_attributes(event.attributes, allowed), event.timestamp) for event in span.events
        ],
        links=span.links,
        kind=span.kind,
        status=status,
        start_time=span.start_time,
        end_time=span.end_time,
        instrumentation_scope=span.instrumentation_scope,
    )


class ScrubbingExporter(SpanExporter):
    """Hands `exporter` only scrubbed copies of the spans (in the export thread, off the request path);
    `allowed` names the capturable headers."""

    def __init__(self, exporter: SpanExporter, allowed: frozenset = CAPTURABLE_HEADERS):
        self._exporter = exporter
        self._allowed = allowed

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        return self._exporter.export([scrubbed(span, self._allowed) for span in spans])

    def shutdown(self) -> None:
        self._exporter.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self._exporter.force_flush(timeout_millis)
