"""The lean path's answer (server/answer.py) puts on the wire what gunicorn's Response puts there, byte for
byte, for every kind of status, header list and body a WSGI app hands it, raises what gunicorn raises for
what gunicorn refuses, agrees on keep-alive, and sends a body that comes in one piece with its head in
one sendall."""

import re

import pytest
from gunicorn.config import Config
from gunicorn.http.wsgi import Response, _make_early_hints_callback

from server.answer import Answer
from server.lean_request import Request

JSON = [("Content-Type", "application/json"), ("Content-Length", "2"), ("X-Request-ID", "4ac2be31")]
CASES = {
    "a JSON answer": ("200 OK", JSON, [b"{}"]),
    "a long security header": ("200 OK", [*JSON, ("Content-Security-Policy", "default-src 'self'; " * 12)], [b"{}"]),
    "no length, in pieces": ("200 OK", [("Content-Type", "text/plain")], [b"ab", b"", b"cde"]),
    "an empty body": ("200 OK", [("Content-Length", "0")], []),
    "no length and no body": ("200 OK", [], []),
    "an empty piece first": ("200 OK", JSON, [b"", b"{}"]),
    "a body past its length": ("200 OK", JSON, [b"{}", b"more"]),
    "a body short of its length": ("200 OK", [("Content-Length", "10")], [b"abc"]),
    "204 with a length": ("204 No Content", [("Content-Length", "0")], []),
    "304 with a length": ("304 Not Modified", [("Content-Length", "120"), ("ETag", '"x"')], []),
    "a 1xx status": ("199 Odd", [("X-A", "1")], []),
    "hop-by-hop fields": (
        "200 OK",
        [
            ("Connection", "close"),
            ("Keep-Alive", "5"),
            ("Transfer-Encoding", "chunked"),
            ("Server", "x"),
            ("Date", "y"),
            ("TE", "trailers"),
            ("Trailers", "X"),
            ("Upgrade", "h2c"),
            *JSON,
        ],
        [b"{}"],
    ),
    "a websocket upgrade": ("101 Switching Protocols", [("Connection", "Upgrade"), ("Upgrade", "websocket")], []),
    "two lengths": ("200 OK", [("Content-Length", "2"), ("content-length", "3")], [b"abc"]),
    "a length in capitals": ("200 OK", [("CONTENT-LENGTH", "2")], [b"{}"]),
    "a length that is no number": ("200 OK", [("Content-Length", "abc")], [b"{}"]),
    "a length with a sign": ("200 OK", [("Content-Length", "+2")], [b"{}"]),
    "blanks around values": ("200 OK", [("X-A", "  a b\t"), ("X-B", ""), ("X-C", "\t")], [b"x"]),
    "obs-text": ("200 OK", [("X-Name", "Ren\xe9e")], [b"x"]),
    "a character past latin-1": ("200 OK", [("X-Name", "\u20ac")], [b"x"]),
    "a CRLF in a value": ("200 OK", [("X-A", "a\r\nSet-Cookie: x=1")], [b"x"]),
    "a control in a value": ("200 OK", [("X-A", "a\x01")], [b"x"]),
    "a blank in a name": ("200 OK", [("Bad Name", "x")], [b"x"]),
    "an empty name": ("200 OK", [("", "x")], [b"x"]),
    "a number for a value": ("200 OK", [("X-A", 1)], [b"x"]),
    "bytes for a name": ("200 OK", [(b"X-A", "1")], [b"x"]),
    "a triple for a pair": ("200 OK", [("X-A", "1", "2")], [b"x"]),
    "headers in a tuple": ("200 OK", (("X-A", "1"), ("Content-Length", "1")), [b"x"]),
    "a repeated field": ("200 OK", [("Set-Cookie", "a=1"), ("Set-Cookie", "b=2"), ("Content-Length", "0")], []),
    "a status without reason": ("200", [("Content-Length", "0")], []),
    "a bad status": ("20 OK", [], []),
    "a status in bytes": (b"200 OK", [], []),
    "text for a body piece": ("200 OK", [("Content-Length", "2")], ["{}"]),
}
REQUESTS = {
    "GET 1.1": ("GET", 1, None),
    "HEAD 1.1": ("HEAD", 1, None),
    "GET 1.0": ("GET", 0, None),
    "GET 1.0 keep-alive": ("GET", 0, "keep-alive"),
    "GET 1.1 close": ("GET", 1, "close"),
}
CONFIG = Config()


class Wire:
    """A socket that keeps what is sent, each sendall apart."""

    def __init__(self):
        self.sent = []

    def sendall(self, data):
        self.sent.append(bytes(data))

    def bytes(self) -> bytes:
        return re.sub(rb"Date: [^\r]*", b"Date: -", b"".join(self.sent))


def request(kind: str) -> Request:
    method, minor, connection = REQUESTS[kind]
    return Request(method, "/x", (1, minor), {}, None, "http", connection)


def answered(kind, status, headers, body, *, force_close=False, response=Answer) -> tuple:
    """What `response` sends and decides for an app answering `status`, `headers`, `body`: the bytes and
    whether the connection closes, or what it raised (with the bytes sent before); then each sendall."""
    wire = Wire()
    answer = response(request(kind), wire, CONFIG)
    if force_close:
        answer.force_close()
    try:
        answer.start_response(status, headers)
        for piece in body:
            answer.write(piece)
        answer.close()
    except Exception as error:
        return (type(error), str(error), wire.bytes(), answer.headers_sent), wire.sent
    return (wire.bytes(), answer.should_close()), wire.sent


@pytest.mark.parametrize("kind", REQUESTS)
@pytest.mark.parametrize("case", CASES)
def test_the_answer_is_gunicorns_byte_for_byte(case, kind):
    theirs, _ = answered(kind, *CASES[case], response=Response)
    for _ in range(2):  # the second time from the lines already checked
        assert answered(kind, *CASES[case])[0] == theirs


@pytest.mark.parametrize("case", ["a JSON answer", "a long security header", "an empty body", "304 with a length"])
def test_an_answer_in_one_piece_leaves_in_one_sendall(case):
    for kind in ("GET 1.1", "HEAD 1.1"):
        assert len(answered(kind, *CASES[case])[1]) == 1


def test_an_answer_the_worker_closes_says_so():
    ours = answered("GET 1.1", *CASES["a JSON answer"], force_close=True)[0]
    assert ours == answered("GET 1.1", *CASES["a JSON answer"], force_close=True, response=Response)[0]
    assert b"Connection: close\r\n" in ours[0]


def test_start_response_twice_without_an_error_is_refused_as_gunicorn_refuses_it():
    for response in (Answer, Response):
        answer = response(request("GET 1.1"), Wire(), CONFIG)
        answer.start_response("200 OK", JSON)
        with pytest.raises(AssertionError, match="Response headers already set!"):
            answer.start_response("500 Oops", [])


def test_an_error_after_the_head_went_is_raised_again_as_gunicorn_raises_it():
    answer = Answer(request("GET 1.1"), Wire(), CONFIG)
    answer.start_response("200 OK", JSON)
    answer.write(b"{}")
    with pytest.raises(KeyError):
        answer.start_response("500 Oops", [], (KeyError, KeyError("x"), None))


@pytest.mark.parametrize("kind", ["GET 1.1", "GET 1.0"])
def test_early_hints_go_before_the_answer_and_never_after_it(kind):
    hints = [("Link", "</app.css>; rel=preload; as=style")]
    wires = []
    for response in (Answer, Response):
        wire = Wire()
        answer = response(request(kind), wire, CONFIG)
        send_hints = answer.early_hints if response is Answer else _make_early_hints_callback(answer.req, wire, answer)
        send_hints(hints)
        answer.start_response("200 OK", JSON)
        answer.write(b"{}")
        send_hints(hints)
        answer.close()
        wires.append(wire.bytes())
    assert wires[0] == wires[1]
    assert wires[0].startswith(b"HTTP/1.1 103 Early Hints\r\nLink: </app.css>") == (kind == "GET 1.1")


def test_a_cookie_or_a_redirect_is_sent_but_never_kept_past_its_answer():
    from server import answer

    cookie = ("Set-Cookie", "session=secret-value; HttpOnly; Secure")
    redirect = ("Location", "https://idp.example/authorize?state=s3cret&nonce=n")
    block, _ = answer.plain_block([*JSON, cookie, redirect])
    assert "Set-Cookie: session=secret-value; HttpOnly; Secure\r\n" in block
    assert "Location: https://idp.example/authorize?state=s3cret&nonce=n\r\n" in block
    kept = " ".join(answer._lines.values())
    assert "secret-value" not in kept and "s3cret" not in kept
    assert "X-Request-ID: 4ac2be31\r\n" in kept  # the others are kept
