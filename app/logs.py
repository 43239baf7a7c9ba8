"""One JSON line per request on stdout; never a query string, body, token or cookie."""

import json
import logging
import sys
import time
import uuid

from flask import Flask, g, request

REQUEST_ID = "X-Request-ID"
log = logging.getLogger("profile_poke.access")


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry = {"level": record.levelname.lower(), "logger": record.name, "message": record.getMessage()}
        entry.update(getattr(record, "fields", {}))
        if record.exc_info:
            entry["error"] = self.formatException(record.exc_info)
        return json.dumps(entry)


def _start_request() -> None:
    g.started = time.perf_counter()
    incoming = request.headers.get(REQUEST_ID, "")
    g.request_id = incoming if 0 < len(incoming) <= 128 and incoming.isprintable() else uuid.uuid4().hex


def _log_request(response):
    fields = {
        "request_id": g.get("request_id"),
        "method": request.method,
        "path": request.path,
        "status": response.status_code,
        "duration_ms": round((time.perf_counter() - g.get("started", time.perf_counter())) * 1000, 2),
        "user": g.get("user"),
        "remote": request.remote_addr,
    }
    log.info("request", extra={"fields": fields})
    response.headers[REQUEST_ID] = g.get("request_id", "")
    return response


def configure_logging(app: Flask) -> None:
    handler = logging.StreamHandler(sys.stdout)
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(app.config["LOG_LEVEL"])
    app.before_request(_start_request)
    app.after_request(_log_request)
