"""Request smuggling against the running server (the shipped gunicorn.conf.py, the request threads' lean
parse in front of gunicorn's parser), on raw sockets: a request hidden in a body is never answered, framing
that two parsers could read differently is refused with 400 and the connection closed, and pipelined
requests are answered in order, each once."""

import json
import socket
import time

import pytest

pytestmark = pytest.mark.integration
ALICE = b"GET /api/v1/users/alice HTTP/1.1\r\nHost: x\r\n"
BOB = b"GET /api/v1/users/bob HTTP/1.1\r\nHost: x\r\n\r\n"
QUIET_S = 1.5  # how long a kept-alive connection is watched for an answer that must not come
# Framing gunicorn refuses, each with a request behind it that must not be answered, and why it is refused
# (501 for a coding it does not implement, 400 otherwise).
AMBIGUOUS = {
    "two lengths": (b"Content-Length: 0\r\nContent-Length: 45\r\n\r\n" + BOB, "CONTENT-LENGTH"),
    "a length and chunked": (
        b"Content-Length: 45\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n" + BOB,
        "CONTENT-LENGTH",
    ),
    "a signed length": (b"Content-Length: +45\r\n\r\n" + BOB, "CONTENT-LENGTH"),
    "a blank before the colon": (b"Transfer-Encoding : chunked\r\n\r\n0\r\n\r\n" + BOB, "Transfer-Encoding "),
    "a folded coding": (b"X: y\r\n Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n" + BOB, "Obsolete line folding"),
    "an unknown coding": (b"Transfer-Encoding: xchunked\r\n\r\n" + BOB, "xchunked"),
    "a bare LF": (b"X: a\nContent-Length: 45\r\n\r\n" + BOB, "Invalid HTTP Header"),
    "schemes that disagree": (b"X-Forwarded-Proto: https\r\nX-Forwarded-Proto: http\r\n\r\n" + BOB, "scheme headers"),
}


def answers(sock: socket.socket, wait_s: float) -> tuple[list[tuple[int, bytes]], bool]:
    """The answers read from `sock` (status, body) until it closes or is quiet for `wait_s`, and
    whether it closed."""
    data, closed = b"", False
    sock.settimeout(wait_s)
    try:
        while chunk := sock.recv(65536):
            data += chunk
    except TimeoutError:
        pass
    else:
        closed = True
    found = []
    while data:
        head, _, rest = data.partition(b"\r\n\r\n")
        lines = head.split(b"\r\n")
        length = next(int(line.split(b":")[1]) for line in lines if line.lower().startswith(b"content-length:"))
        found.append((int(lines[0].split()[1]), rest[:length]))
        data = rest[length:]
    return found, closed


def sent(live_app, data: bytes, wait_s: float = QUIET_S) -> tuple[list[tuple[int, bytes]], bool]:
    """The answers to `data` sent at once on a fresh connection."""
    port = int(live_app.url.rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        sock.sendall(data)
        return answers(sock, wait_s)


def username(body: bytes) -> str:
    return json.loads(body)["username"]


def test_pipelined_requests_are_answered_in_order_each_once(live_app):
    found, closed = sent(live_app, ALICE + b"\r\n" + BOB + ALICE + b"Connection: close\r\n\r\n", wait_s=10)
    assert [(status, username(body)) for status, body in found] == [(200, "alice"), (200, "bob"), (200, "alice")]
    assert closed


def test_a_request_hidden_in_a_body_is_never_answered(live_app):
    found, closed = sent(live_app, ALICE + b"Content-Length: %d\r\n\r\n" % len(BOB) + BOB)
    assert [(status, username(body)) for status, body in found] == [(200, "alice")]
    assert not closed  # the connection is kept for a next request, and the hidden one was the body


@pytest.mark.parametrize("name", AMBIGUOUS)
def test_framing_two_parsers_could_read_differently_is_refused_and_the_connection_closed(live_app, name):
    framing, why = AMBIGUOUS[name]
    started = time.monotonic()
    found, closed = sent(live_app, ALICE + framing, wait_s=10)
    assert [status for status, _ in found] == [501 if name == "an unknown coding" else 400], found
    assert why in found[0][1].decode(), found
    assert closed and time.monotonic() - started < 8
