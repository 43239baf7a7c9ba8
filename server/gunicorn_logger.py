"""gunicorn's logger with every query string cut from its lines (gunicorn.conf.py's `logger_class`).

gunicorn writes a request's target in lines of its own: "Error handling request GET /auth/callback?…"
when an exception reaches it, the request line of a malformed request, and every request line in an
access log an operator switches on. An /auth/ query holds an authorization code, a `state`, or where a
sign-in returns to; here they lose it, tracebacks included, whichever handler writes them.
"""

import logging
import re

from gunicorn import glogging

# A path or an absolute URL followed by its query (up to a space or a quote): the query goes.
URL_WITH_QUERY = re.compile(r"((?:\b[a-z][a-z0-9+.-]*://|/)[^\s?#\"'<>]*)\?[^\s\"'<>]*", re.IGNORECASE)


def without_queries(text: str) -> str:
    """`text` with every URL or path in it cut before its query string."""
    return URL_WITH_QUERY.sub(r"\1", text) if "?" in text else text


class WithoutQueries(logging.Filter):
    """Rewrites each record's message, and its traceback, without query strings."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.msg, record.args = without_queries(record.getMessage()), None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = without_queries(record.exc_text)
        return True


class Logger(glogging.Logger):
    """gunicorn's own logger, its error and access lines passed through WithoutQueries."""

    def setup(self, cfg):
        super().setup(cfg)
        for log in (self.error_log, self.access_log):
            if not any(isinstance(existing, WithoutQueries) for existing in log.filters):
                log.addFilter(WithoutQueries())
