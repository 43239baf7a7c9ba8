"""The last resort: a request that escapes everything else is still answered, a plain 500, and the
server never logs its request line (whose query may hold a code or `state`)."""

import json
import logging
import sys

log = logging.getLogger(__name__)

LAST_RESORT_BODY = json.dumps({"error": {"code": "internal_error", "message": "something went wrong"}}).encode()


class AnswerEveryRequest:
    """The outermost WSGI layer: what escapes every other one (a failing teardown, a middleware) is logged
    with the method and path and answered 500, so that the server never logs the request line (its query
    may hold a code or `state`) and the worker thread goes on serving."""

    def __init__(self, wsgi_app):
        self.wsgi_app = wsgi_app

    def __call__(self, environ, start_response):
        started = []

        def start(status, headers, exc_info=None):
            started.append(status)
            return start_response(status, headers) if exc_info is None else start_response(status, headers, exc_info)

        try:
            return self.wsgi_app(environ, start)
        except Exception:
            log.exception(
                "unexpected failure outside the app: %s %s", environ.get("REQUEST_METHOD"), environ.get("PATH_INFO")
            )
            headers = [
                ("Content-Type", "application/json"),
                ("Content-Length", str(len(LAST_RESORT_BODY))),
                ("Cache-Control", "no-store"),
            ]
            # PEP 3333: replacing a status already given (not yet sent) takes the exception along.
            start_response("500 INTERNAL SERVER ERROR", headers, *([sys.exc_info()] if started else []))
            return [LAST_RESORT_BODY]
