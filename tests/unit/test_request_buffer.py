"""The poller's view of a request (request_buffer.py) agrees with gunicorn's parser: a request it calls
whole, gunicorn reads to its end from those bytes alone (the thread never waits on the client), one
byte less is not whole, and what gunicorn would refuse unread is handed on at once; plus the settings
that bound it (gunicorn.conf.py), and what the worker will not start with (TLS, HTTP/2, PROXY)."""

import runpy
from pathlib import Path

import pytest
from gunicorn.config import Config
from gunicorn.http.errors import NoMoreData
from gunicorn.http.parser import RequestParser

from server.gthread_worker import Worker
from server.request_buffer import MAX_HEAD, Outcome, RequestBuffer
from server.request_threads import Gathered

MAX_BODY = 1000
HEAD = b"POST /auth/backchannel-logout HTTP/1.1\r\nHost: app\r\n"
WHOLE = {
    "no body": (b"GET /api/v1/users/bob HTTP/1.1\r\nHost: app\r\n\r\n", b""),
    "no header at all": (b"GET / HTTP/1.1\r\n\r\n", b""),
    "an empty line first": (b"\r\nGET / HTTP/1.1\r\nHost: app\r\n\r\n", b""),
    "Content-Length": (HEAD + b"Content-Length: 16\r\n\r\nlogout_token=abc", b"logout_token=abc"),
    "Content-Length 0": (HEAD + b"content-length:0\r\n\r\n", b""),
    "Content-Length at the limit": (HEAD + b"Content-Length: 1000\r\n\r\n" + b"x" * 1000, b"x" * 1000),
    "chunked": (HEAD + b"Transfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n", b"abc"),
    "chunked with extensions and trailers": (
        HEAD + b"Transfer-Encoding: chunked\r\n\r\nA;name=value\r\n0123456789\r\n1 ;x\r\n!\r\n0\r\nX-Sum: 1\r\n\r\n",
        b"0123456789!",
    ),
    "gzip then chunked": (HEAD + b"Transfer-Encoding: gzip, chunked\r\n\r\n2\r\nab\r\n0\r\n\r\n", b"ab"),
}
# Handed on as soon as the head is in: gunicorn refuses the head (400/501), or the app refuses the body
# by its declared length (413), without reading the body either way.
HEAD_ONLY = {
    "a body over the limit": HEAD + b"Content-Length: 1001\r\n\r\n",
    "two lengths": HEAD + b"Content-Length: 1\r\nContent-Length: 1\r\n\r\n",
    "a length that is no number": HEAD + b"Content-Length: +1\r\n\r\n",
    "a coding that is not chunked last": HEAD + b"Transfer-Encoding: chunked, gzip\r\n\r\n",
    "a length beside chunked": HEAD + b"Content-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n",
}
REFUSED = {
    "a chunk without its CRLF": (b"Transfer-Encoding: chunked\r\n\r\n3\r\nabcXY0\r\n\r\n", Outcome.MALFORMED),
    "a size that is no hex": (b"Transfer-Encoding: chunked\r\n\r\n3x\r\nabc\r\n0\r\n\r\n", Outcome.MALFORMED),
    "a bad chunk extension": (b"Transfer-Encoding: chunked\r\n\r\n3;=\r\nabc\r\n0\r\n\r\n", Outcome.MALFORMED),
    "a size line without end": (b"Transfer-Encoding: chunked\r\n\r\n" + b"0" * 9000, Outcome.MALFORMED),
    "chunks over the limit": (b"Transfer-Encoding: chunked\r\n\r\n3E9\r\n", Outcome.TOO_LARGE),
}


def fed(data: bytes, pieces: int = 1) -> tuple[RequestBuffer, Outcome | None]:
    """A buffer fed `data` in `pieces` about equal parts, and the outcome of the last feed."""
    buffer, outcome, step = RequestBuffer(MAX_BODY), None, max(1, -(-len(data) // pieces))
    for start in range(0, len(data), step):
        assert outcome is None, f"an outcome before the last piece: {outcome}"
        outcome = buffer.feed(data[start : start + step])
    return buffer, outcome


def read_by_gunicorn(data: bytes) -> bytes:
    """The body of the request in `data`, read by gunicorn's parser from `data` alone."""
    parser = RequestParser(Config(), [], ("127.0.0.1", 1234))
    parser.unreader = Gathered()
    parser.unreader.unread(data)
    return next(parser).body.read()


@pytest.mark.parametrize("name", WHOLE)
@pytest.mark.parametrize("pieces", [1, 7, 10_000], ids=["at once", "in 7 pieces", "a byte at a time"])
def test_a_whole_request_is_served_when_its_last_byte_arrives_and_gunicorn_reads_it_from_memory(name, pieces):
    data, body = WHOLE[name]
    assert fed(data[:-1], pieces)[1] is None
    assert fed(data, pieces)[1] is Outcome.SERVE
    assert read_by_gunicorn(data) == body


def test_a_thread_short_of_a_byte_gives_up_and_never_reads_the_socket():
    data, _ = WHOLE["Content-Length"]
    with pytest.raises(NoMoreData):
        read_by_gunicorn(data[:-1])


def test_the_next_request_behind_a_whole_one_changes_nothing():
    data, _ = WHOLE["Content-Length"]
    assert fed(data + b"GET / HTTP/1.1\r\n")[1] is Outcome.SERVE


@pytest.mark.parametrize("name", HEAD_ONLY)
def test_a_body_nobody_will_read_is_not_waited_for(name):
    assert fed(HEAD_ONLY[name])[1] is Outcome.SERVE_HEAD


@pytest.mark.parametrize("name", REFUSED)
def test_a_chunked_body_that_is_broken_or_too_large_is_refused_by_the_poller(name):
    framing, outcome = REFUSED[name]
    assert fed(HEAD + framing)[1] is outcome


def test_a_head_that_never_ends_is_refused_past_64_kib():
    assert fed(b"GET / HTTP/1.1\r\nX: " + b"a" * (MAX_HEAD - 20))[1] is None
    assert fed(b"GET / HTTP/1.1\r\nX: " + b"a" * MAX_HEAD)[1] is Outcome.HEAD_TOO_LARGE


@pytest.mark.parametrize(
    ("version", "expects"), [(b"HTTP/1.1", True), (b"HTTP/1.0", False)], ids=["HTTP/1.1", "HTTP/1.0"]
)
def test_100_continue_is_expected_from_http_1_1_only(version, expects):
    head = b"POST / " + version + b"\r\nExpect: 100-Continue\r\nContent-Length: 3\r\n\r\n"
    buffer, outcome = fed(head)
    assert (outcome, buffer.expects_continue) == (None, expects)


def gunicorn_settings(monkeypatch, **env) -> dict:
    for name in ("REQUEST_HEADER_TIMEOUT", "REQUEST_BODY_TIMEOUT"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return runpy.run_path(str(Path(__file__).resolve().parents[2] / "server" / "gunicorn.conf.py"))


def test_the_request_deadlines_default_to_ten_seconds_and_follow_the_environment(monkeypatch):
    worker = gunicorn_settings(monkeypatch)["worker_class"]
    assert (worker.header_timeout, worker.body_timeout) == (10.0, 10.0)
    worker = gunicorn_settings(monkeypatch, REQUEST_HEADER_TIMEOUT="2.5", REQUEST_BODY_TIMEOUT="30")["worker_class"]
    assert (worker.header_timeout, worker.body_timeout) == (2.5, 30.0)


@pytest.mark.parametrize("value", ["0", "-1", "ten", "inf", "nan"])
def test_a_request_deadline_that_is_no_positive_number_stops_the_start_naming_it(monkeypatch, value):
    with pytest.raises(SystemExit, match=f"REQUEST_BODY_TIMEOUT must be a positive number of seconds, not '{value}'"):
        gunicorn_settings(monkeypatch, REQUEST_BODY_TIMEOUT=value)


@pytest.mark.parametrize(
    "setting", [("certfile", "cert.pem"), ("http2_cleartext", "both"), ("proxy_protocol", "v1")], ids=lambda s: s[0]
)
def test_the_worker_refuses_to_start_with_what_its_poller_cannot_read(setting):
    config = Config()
    config.set(*setting)
    with pytest.raises(RuntimeError, match=r"gthread_worker serves plain HTTP/1\.1"):
        Worker.check_config(config, None)
