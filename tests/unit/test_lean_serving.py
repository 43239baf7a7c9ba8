"""The lean path's serve (server/serving.py) on a real socket pair: an app error before the head went is
answered 500 by gunicorn's handle_error and the connection closed, one after it closes the connection
without a second head, and a plain answer keeps the connection as the request asked."""

import errno
import logging
import socket

import pytest
from gunicorn.glogging import Logger
from gunicorn.workers.base import Worker

from server.serving import Serving
from tests.helpers.lean_path import LOCAL, PLAIN, by_lean_path, shipped_config


class Lean(Serving):
    """What serving.py needs of gthread's worker, and gunicorn's own handle_error."""

    handle_error = Worker.handle_error

    def __init__(self, app):
        self.cfg = shipped_config()
        self.log = Logger(self.cfg)
        self.init_serving()
        self.wsgi, self.nr, self.max_requests, self.alive = app, 0, 1000, True
        self.keepalived_conns, self.max_keepalived = [], 992


def served(app, name="a browser's GET") -> tuple[bool, bytes]:
    """Whether the connection is kept after `app` answers the request, and what the client read."""
    config = shipped_config()
    request, _, _ = by_lean_path(config, PLAIN[name], LOCAL)
    server, client = socket.socketpair()
    with server, client:
        worker = Lean(app)
        conn = type("Conn", (), {})()
        conn.sock, conn.client = server, LOCAL
        conn.environ = {**worker.shared_environ, "REMOTE_ADDR": "127.0.0.1", "REMOTE_PORT": "41000"}
        conn.environ |= {"gunicorn.socket": server, "SERVER_NAME": "0.0.0.0", "SERVER_PORT": "8000"}
        keep = worker._serve(request, conn)
        server.shutdown(socket.SHUT_WR)
        return keep, b"".join(iter(lambda: client.recv(65536), b""))


def test_a_plain_answer_keeps_the_connection_as_the_request_asks():
    def app(environ, start_response):
        start_response("200 OK", [("Content-Length", "2")])
        return [b"{}"]

    keep, read = served(app)
    assert keep is True and read.startswith(b"HTTP/1.1 200 OK\r\n") and b"Connection: keep-alive" in read
    keep, read = served(app, "HTTP/1.1 close")
    assert keep is False and b"Connection: close" in read


def test_an_app_error_before_the_head_is_answered_500_and_closes(caplog):
    def app(environ, start_response):
        raise RuntimeError("boom")

    with caplog.at_level(logging.ERROR):
        keep, read = served(app)
    assert keep is False
    assert read.startswith(b"HTTP/1.1 500 Internal Server Error\r\n"), read
    assert b"boom" not in read  # the error's text stays in the log


def test_an_app_error_after_the_head_closes_without_a_second_head():
    def app(environ, start_response):
        start_response("200 OK", [("Content-Length", "10")])
        yield b"abc"
        raise RuntimeError("boom")

    keep, read = served(app)
    assert keep is False
    assert read.count(b"HTTP/1.1") == 1 and read.endswith(b"abc"), read


@pytest.mark.parametrize("number", [errno.EPIPE, errno.ECONNRESET])
def test_a_client_gone_mid_answer_closes_without_an_answer(number):
    def app(environ, start_response):
        start_response("200 OK", [("Content-Length", "2")])
        raise OSError(number, "gone")

    keep, read = served(app)
    assert (keep, read) == (False, b"")
