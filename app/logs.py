"""One JSON line per request on stdout; never a query string, body, token or cookie.

The access line is written with a single os.write: one system call, no logging machinery on the
hot path, and lines from many threads and workers never interleave (each is under PIPE_BUF).
Everything else goes through `logging`, as JSON too, and carries the request's fields.
"""

import json
import logging
import os
import re
import secrets
import sys
import time
from contextlib import contextmanager

from flask import Flask, g, has_request_context, request

from .tracing import current_trace_id

REQUEST_ID = "X-Request-ID"
WSGI_REQUEST_ID = "HTTP_X_REQUEST_ID"  # the header's name in the WSGI environ
# What Heroku's router and common proxies send (UUIDs, base64): kept; anything else is replaced.
VALID_REQUEST_ID = re.compile(r"[A-Za-z0-9+/=_.-]{1,200}", re.ASCII)
STDOUT = 1


def request_id() -> str:
    """The current request's id: its valid X-Request-ID, or one made for it (the same all request long)."""
    here = g._get_current_object()  # each use of Flask's proxy g looks up the context again
    made = here.get("request_id")
    if made is None:
        incoming = request.environ.get(WSGI_REQUEST_ID, "")  # request.headers.get raises and catches a KeyError
        made = here.request_id = incoming if VALID_REQUEST_ID.fullmatch(incoming) else secrets.token_hex(16)
    return made


def request_fields() -> dict:
    """What every log line and audit event written during a request carries about it; {} outside one."""
    if not has_request_context():
        return {}
    fields = {"request_id": request_id(), "remote": request.remote_addr}
    trace_id = current_trace_id()  # None at once when tracing is off
    if trace_id:
        fields["trace_id"] = trace_id
    return fields


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry = {"level": record.levelname.lower(), "logger": record.name, "message": record.getMessage()}
        entry.update(getattr(record, "fields", None) or {})  # an audit event's own fields
        if record.exc_info:
            entry["error"] = self.formatException(record.exc_info)
        entry.update(request_fields())
        return json.dumps(entry)


def _start_request() -> None:
    g.started = time.perf_counter()
    request_id()


def _log_request(response):
    # The request and g once each: every use of Flask's proxies looks up the context again, and
    # those lookups were a third of this line's cost.
    current, here = request._get_current_object(), g._get_current_object()
    fields = request_fields()
    now = time.perf_counter()
    # g may be bare: when opening the session fails, before_request hooks never ran.
    line = json.dumps(
        {
            **fields,
            "method": current.method,
            "path": current.path,
            "status": response.status_code,
            "duration_ms": round((now - here.get("started", now)) * 1000, 2),
            "user": here.get("user"),
        }
    )
    os.write(STDOUT, f"{line}\n".encode())
    response.headers[REQUEST_ID] = fields["request_id"]
    return response


def configure_logging(app: Flask) -> None:
    handler = logging.StreamHandler(sys.stdout)
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(app.config["LOG_LEVEL"])
    app.before_request(_start_request)
    if app.config["LOG_LEVEL"] in {"DEBUG", "INFO"}:
        app.after_request(_log_request)
    else:
        app.after_request(_request_id_header)


class _Stderr:
    """sys.stderr as it is when a line is written (a test runner replaces it while a command runs)."""

    def write(self, text: str) -> int:
        return sys.stderr.write(text)

    def flush(self) -> None:
        sys.stderr.flush()


@contextmanager
def logs_on_stderr():
    """This process's log and audit lines on stderr while the block runs (a `flask users` command's stdout
    is its output), and back where they were after it."""
    handlers = [
        handler
        for handler in logging.getLogger().handlers
        if isinstance(handler, logging.StreamHandler) and isinstance(handler.formatter, JsonFormatter)
    ]
    streams = [handler.stream for handler in handlers]
    for handler in handlers:
        handler.setStream(_Stderr())
    try:
        yield
    finally:
        for handler, stream in zip(handlers, streams, strict=True):
            handler.setStream(stream)


def _request_id_header(response):
    response.headers[REQUEST_ID] = request_id()
    return response
