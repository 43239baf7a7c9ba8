"""One JSON line per request on stdout; never a query string, body, token or cookie.

The access line is written with a single os.write: one system call, no logging machinery on the
hot path, and lines from many threads and workers never interleave (each is under PIPE_BUF).
Everything else goes through `logging`, as JSON too.
"""

import json
import logging
import os
import secrets
import sys
import time

from flask import Flask, g, request

REQUEST_ID = "X-Request-ID"
STDOUT = 1


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry = {"level": record.levelname.lower(), "logger": record.name, "message": record.getMessage()}
        if record.exc_info:
            entry["error"] = self.formatException(record.exc_info)
        if request:
            entry["request_id"] = g.get("request_id")
        return json.dumps(entry)


def _start_request() -> None:
    g.started = time.perf_counter()
    incoming = request.headers.get(REQUEST_ID, "")
    g.request_id = incoming if 0 < len(incoming) <= 128 and incoming.isprintable() else secrets.token_hex(16)


def _log_request(response):
    # g may be bare: when opening the session fails, before_request hooks never ran.
    request_id = g.get("request_id") or secrets.token_hex(16)
    line = json.dumps(
        {
            "request_id": request_id,
            "method": request.method,
            "path": request.path,
            "status": response.status_code,
            "duration_ms": round((time.perf_counter() - g.get("started", time.perf_counter())) * 1000, 2),
            "user": g.get("user"),
            "remote": request.remote_addr,
        }
    )
    os.write(STDOUT, f"{line}\n".encode())
    response.headers[REQUEST_ID] = request_id
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


def _request_id_header(response):
    response.headers[REQUEST_ID] = g.get("request_id") or secrets.token_hex(16)
    return response
