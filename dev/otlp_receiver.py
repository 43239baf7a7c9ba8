"""A small OTLP/HTTP trace receiver: decodes the protobuf the app exports (ExportTraceServiceRequest,
from the opentelemetry-proto package) and keeps the spans, or prints them as trees.

Used by the tracing tests, by `make bench` (tracing on), and by `make traces`:
`python -m dev.otlp_receiver [--port 4318]` prints each trace as it arrives (a batch at a time: the
spans of one request that two batches carry print as two trees). Dev and tests only.
"""

import argparse
import gzip
import sys
import threading
from collections import defaultdict
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.trace.v1.trace_pb2 import Span as SpanProto

TRACES_PATH = "/v1/traces"


@dataclass(frozen=True)
class Span:
    name: str
    trace_id: str
    span_id: str
    parent_id: str | None
    kind: str
    start_ns: int
    end_ns: int
    attributes: dict = field(default_factory=dict)
    events: tuple = ()
    resource: dict = field(default_factory=dict)

    @property
    def duration_ms(self) -> float:
        return (self.end_ns - self.start_ns) / 1e6

    def texts(self):
        """Every string this span carries: name, attribute and event values, resource values."""
        yield self.name
        for attributes in (self.attributes, self.resource, *(attrs for _, attrs in self.events)):
            for key, value in attributes.items():
                yield key
                yield from (str(item) for item in (value if isinstance(value, list) else [value]))
        yield from (name for name, _ in self.events)


def _value(any_value):
    kind = any_value.WhichOneof("value")
    if kind == "array_value":
        return [_value(item) for item in any_value.array_value.values]
    if kind == "kvlist_value":
        return {item.key: _value(item.value) for item in any_value.kvlist_value.values}
    return getattr(any_value, kind) if kind else None


def _attributes(pairs) -> dict:
    return {pair.key: _value(pair.value) for pair in pairs}


def decode(body: bytes) -> list[Span]:
    """The spans of one OTLP/HTTP protobuf export request."""
    request = ExportTraceServiceRequest.FromString(body)
    spans = []
    for resource_spans in request.resource_spans:
        resource = _attributes(resource_spans.resource.attributes)
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                spans.append(
                    Span(
                        name=span.name,
                        trace_id=span.trace_id.hex(),
                        span_id=span.span_id.hex(),
                        parent_id=span.parent_span_id.hex() or None,
                        kind=SpanProto.SpanKind.Name(span.kind).removeprefix("SPAN_KIND_").lower(),
                        start_ns=span.start_time_unix_nano,
                        end_ns=span.end_time_unix_nano,
                        attributes=_attributes(span.attributes),
                        events=tuple((event.name, _attributes(event.attributes)) for event in span.events),
                        resource=resource,
                    )
                )
    return spans


class Receiver:
    """Listens on 127.0.0.1:`port` (0: a free one) in a background thread; `on_spans` hears each batch,
    and the spans are kept for `spans()` unless `keep` is false."""

    def __init__(self, port: int = 0, *, on_spans=None, keep: bool = True, host: str = "127.0.0.1"):
        self._spans: list[Span] = []
        self._keep = keep
        self._lock = threading.Lock()
        self._on_spans = on_spans
        self._server = ThreadingHTTPServer((host, port), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        """The value for OTEL_EXPORTER_OTLP_ENDPOINT."""
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> "Receiver":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def spans(self) -> list[Span]:
        with self._lock:
            return list(self._spans)

    def clear(self) -> None:
        with self._lock:
            self._spans.clear()

    def _received(self, spans: list[Span]) -> None:
        if self._keep:
            with self._lock:
                self._spans.extend(spans)
        if self._on_spans:
            self._on_spans(spans)

    def _handler(self):
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if self.headers.get("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)
                if self.path != TRACES_PATH or "protobuf" not in self.headers.get("Content-Type", ""):
                    self.send_error(404 if self.path != TRACES_PATH else 415)
                    return
                receiver._received(decode(body))
                answer = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *args):
                pass

        return Handler


def tree_lines(spans: list[Span]) -> list[str]:
    """`spans` as indented trees, parents before children, children by start time."""
    by_id = {span.span_id: span for span in spans}
    children = defaultdict(list)
    for span in spans:
        children[span.parent_id if span.parent_id in by_id else None].append(span)
    lines = []

    def walk(parent_id, depth):
        for span in sorted(children[parent_id], key=lambda s: s.start_ns):
            status = span.attributes.get("http.response.status_code") or span.attributes.get("http.status_code")
            url = span.attributes.get("url.full") or span.attributes.get("http.url") if span.kind == "client" else None
            detail = (f" {url}" if url else "") + (f" -> {status}" if status else "")
            pid = span.resource.get("process.pid")
            lines.append(f"{'  ' * depth}{span.name}{detail}  {span.duration_ms:.1f} ms  [{span.kind}, pid {pid}]")
            walk(span.span_id, depth + 1)

    walk(None, 0)
    return lines


class TracePrinter:
    """Prints each trace as a tree under its trace id on `file` (stdout by default), once its top span
    (a server span, or one without a parent) has arrived: a worker exports a request's Redis and
    provider spans before the server span that ends after them, sometimes in an earlier batch."""

    def __init__(self, file=None):
        self._file = file
        self._pending = defaultdict(list)
        self._lock = threading.Lock()

    def __call__(self, spans: list[Span]) -> None:
        with self._lock:
            for span in spans:
                self._pending[span.trace_id].append(span)
            done = {span.trace_id for span in spans if span.kind == "server" or span.parent_id is None}
            for trace_id in done:
                lines = tree_lines(self._pending.pop(trace_id))
                print(f"trace {trace_id}", *(f"  {line}" for line in lines), sep="\n", file=self._file, flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=4318, help="port to listen on (OTLP/HTTP's own, by default)")
    parser.add_argument("--quiet", action="store_true", help="accept and drop, printing nothing (for make bench)")
    options = parser.parse_args()
    receiver = Receiver(options.port, on_spans=None if options.quiet else TracePrinter(), keep=False)
    print(f"OTLP/HTTP receiver on {receiver.url}{TRACES_PATH} (OTEL_EXPORTER_OTLP_ENDPOINT={receiver.url})", flush=True)
    try:
        receiver._server.serve_forever()
    except KeyboardInterrupt:
        sys.exit(0)


if __name__ == "__main__":
    main()
