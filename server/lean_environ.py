"""The WSGI environ of a request lean_request.py parsed, key for key what gunicorn.http.wsgi.create builds
(PEP 3333's keys, gunicorn's own, the headers lean_request.py put in environ form), from a copy of a
dictionary made once per connection instead of some 70k instructions of lookups a request.
tests/unit/test_lean_environ.py compares the two on a corpus of requests."""

import os

from gunicorn import SERVER_SOFTWARE
from gunicorn.http.wsgi import FileWrapper, WSGIErrorsWrapper
from gunicorn.util import unquote_to_wsgi_str

PROTOCOLS = {(1, 0): "HTTP/1.0", (1, 1): "HTTP/1.1"}


class Errors(WSGIErrorsWrapper):
    """wsgi.errors, shared by a worker's requests: writes where gunicorn's error log writes at that
    moment (gunicorn makes one per request, so a reopened log file is followed)."""

    def __init__(self, cfg):  # no streams kept: they are looked up at each write
        self.cfg = cfg

    def write(self, data):
        WSGIErrorsWrapper(self.cfg).write(data)


def worker_environ(cfg) -> dict:
    """What every request of this worker shares (gunicorn's base_environ, multithreaded, and the
    SCRIPT_NAME the worker started with)."""
    return {
        "wsgi.errors": Errors(cfg),
        "wsgi.version": (1, 0),
        "wsgi.multithread": True,
        "wsgi.multiprocess": cfg.workers > 1,
        "wsgi.run_once": False,
        "wsgi.file_wrapper": FileWrapper,
        "wsgi.input_terminated": True,
        "SERVER_SOFTWARE": SERVER_SOFTWARE,
        "SCRIPT_NAME": os.environ.get("SCRIPT_NAME", ""),
    }


def connection_environ(shared: dict, sock, client, server) -> dict | None:
    """What every request on one TCP connection shares; None for a connection whose addresses are
    not (host, port) pairs (a UNIX socket), which gunicorn's create() serves."""
    if not (isinstance(client, tuple) and isinstance(server, tuple)):
        return None
    return {
        **shared,
        "gunicorn.socket": sock,
        "REMOTE_ADDR": client[0],
        "REMOTE_PORT": str(client[1]),
        "SERVER_NAME": server[0],
        "SERVER_PORT": str(server[1]),
    }


def environ(base: dict, request, early_hints) -> dict:
    """The environ of `request` (whose path starts with SCRIPT_NAME) on a connection whose shared keys
    are `base`."""
    environ = base.copy()
    environ.update(request.fields)
    path = request.path[len(base["SCRIPT_NAME"]) :]
    environ["wsgi.input"] = request.body
    environ["REQUEST_METHOD"] = request.method
    environ["QUERY_STRING"] = request.query
    environ["RAW_URI"] = request.uri
    environ["SERVER_PROTOCOL"] = PROTOCOLS[request.version]
    environ["wsgi.url_scheme"] = request.scheme
    environ["PATH_INFO"] = unquote_to_wsgi_str(path) if "%" in path else path
    environ["wsgi.early_hints"] = early_hints
    return environ
