"""The lean parse (server/lean_request.py) against gunicorn's own parser and wsgi.create, as an outsider
would probe a hand-written HTTP parser: request smuggling and differential parsing. Crafted heads (framing
fields repeated, signed, padded or folded, names with blanks or odd bytes, control bytes, odd targets and
versions, forwarded and scheme headers from a trusted and an untrusted peer, SCRIPT_NAME, limits) go to
both. Whenever the lean parse takes a request, gunicorn must take it too and give the same environ
(method, path, query, headers, scheme, body), keep-alive decision and bytes left for the next request;
declining (None, so gunicorn's parser reads it) is always allowed."""

import itertools
import random
import types

import pytest

from server.lean_environ import worker_environ
from server.lean_request import Rules
from server.request_buffer import Outcome, RequestBuffer
from server.serving import Serving, environ
from tests.helpers.lean_path import (
    LOCAL,
    OUTSIDE,
    SERVER,
    SOCKET,
    by_gunicorn,
    by_lean_path,
    comparable,
    shipped_config,
)

NEXT = b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"  # what a smuggler hides behind a body
REQUEST_LINES = [
    b"GET / HTTP/1.1",
    b"GET /api/v1/users/bob?x=1 HTTP/1.1",
    b"POST /api/v1/pokes HTTP/1.1",
    b"HEAD / HTTP/1.1",
    b"GET / HTTP/1.0",
    b"get / HTTP/1.1",
    b"Get / HTTP/1.1",
    b"GE / HTTP/1.1",
    b"ABCDEFGHIJKLMNOPQRSTU / HTTP/1.1",
    b"G_T / HTTP/1.1",
    b"GET / HTTP/1.2",
    b"GET / HTTP/1.10",
    b"GET / HTTP/01.1",
    b"GET / http/1.1",
    b"GET / HTTP/2.0",
    b"GET / HTTP/1.1 ",
    b" GET / HTTP/1.1",
    b"GET  / HTTP/1.1",
    b"GET /\tHTTP/1.1",
    b"GET / HTTP/1.1\t",
    b"GET http://evil.example/metrics HTTP/1.1",
    b"GET https://x/api/v1/users/bob?a=1 HTTP/1.1",
    b"GET //evil.example/x HTTP/1.1",
    b"GET /a//b HTTP/1.1",
    b"GET /x#frag HTTP/1.1",
    b"GET /x?y#z HTTP/1.1",
    b"GET /%2e%2e/metrics HTTP/1.1",
    b"GET /a%00b%2F%ff%zz HTTP/1.1",
    b"GET /a?b?c&d=%20 HTTP/1.1",
    b"GET /? HTTP/1.1",
    b"GET /;a=b HTTP/1.1",
    b"GET /a:b@c[d] HTTP/1.1",
    b"GET * HTTP/1.1",
    b"OPTIONS * HTTP/1.1",
    b"CONNECT x:443 HTTP/1.1",
    b"CONNECT /x HTTP/1.1",
    b"PRI * HTTP/2.0",
    b"GET /\xff HTTP/1.1",
    b"GET /a b HTTP/1.1",
    b"GET x HTTP/1.1",
    b"GET  HTTP/1.1",
    b"GET /app/x HTTP/1.1",
    b"GET /" + b"a" * 4080 + b" HTTP/1.1",  # 4094 characters, gunicorn's limit
    b"GET /" + b"a" * 4081 + b" HTTP/1.1",
]
# Header lines, each set with the body (and anything pipelined) that follows the head.
FRAMING = {
    "none": ([], b""),
    "a length": ([b"Content-Length: 5"], b"hello" + NEXT),
    "a length, lowercase": ([b"content-length: 5"], b"hello" + NEXT),
    "a length twice, same": ([b"Content-Length: 5", b"Content-Length: 5"], b"hello" + NEXT),
    "a length twice, differing": ([b"Content-Length: 0", b"Content-Length: 5"], b"hello" + NEXT),
    "a list of lengths": ([b"Content-Length: 5, 5"], b"hello" + NEXT),
    "a signed length": ([b"Content-Length: +5"], b"hello" + NEXT),
    "a negative length": ([b"Content-Length: -5"], b"hello" + NEXT),
    "a padded length": ([b"Content-Length: \t 5 \t"], b"hello" + NEXT),
    "leading zeros": ([b"Content-Length: 0005"], b"hello" + NEXT),
    "a hex length": ([b"Content-Length: 0x5"], b"hello" + NEXT),
    "a decimal length": ([b"Content-Length: 5.0"], b"hello" + NEXT),
    "an underscore in the length": ([b"Content-Length: 0_5"], b"hello" + NEXT),
    "a superscript length": ([b"Content-Length: \xb2"], b"he" + NEXT),
    "an empty length": ([b"Content-Length:"], b"" + NEXT),
    "a huge length": ([b"Content-Length: 99999999999999999999"], b"hello"),
    "a blank before the colon": ([b"Content-Length : 5"], b"hello" + NEXT),
    "a tab before the colon": ([b"Content-Length\t: 5"], b"hello" + NEXT),
    "a folded length": ([b"X: y", b" Content-Length: 5"], b"hello" + NEXT),
    "a length folded onto": ([b"Content-Length:", b" 5"], b"hello" + NEXT),
    "an underscored length": ([b"Content_Length: 5"], b"hello" + NEXT),
    "a short body": ([b"Content-Length: 3"], b"hello" + NEXT),
    "chunked": ([b"Transfer-Encoding: chunked"], b"5\r\nhello\r\n0\r\n\r\n" + NEXT),
    "CHUNKED": ([b"transfer-encoding: CHUNKED"], b"5\r\nhello\r\n0\r\n\r\n" + NEXT),
    "chunked and a length": ([b"Transfer-Encoding: chunked", b"Content-Length: 5"], b"5\r\nhello\r\n0\r\n\r\n"),
    "a length and chunked": ([b"Content-Length: 5", b"Transfer-Encoding: chunked"], b"5\r\nhello\r\n0\r\n\r\n"),
    "chunked, identity": ([b"Transfer-Encoding: chunked, identity"], b"5\r\nhello\r\n0\r\n\r\n"),
    "gzip, chunked": ([b"Transfer-Encoding: gzip, chunked"], b"5\r\nhello\r\n0\r\n\r\n"),
    "xchunked": ([b"Transfer-Encoding: xchunked"], b"5\r\nhello\r\n0\r\n\r\n"),
    "identity": ([b"Transfer-Encoding: identity"], b""),
    "a tab-led coding": ([b"Transfer-Encoding:\tchunked"], b"5\r\nhello\r\n0\r\n\r\n"),
    "a folded coding": ([b"Transfer-Encoding:", b" chunked"], b"5\r\nhello\r\n0\r\n\r\n"),
    "a coding folded onto": ([b"X: y", b"\tTransfer-Encoding: chunked"], b"5\r\nhello\r\n0\r\n\r\n"),
    "a blank before the coding's colon": ([b"Transfer-Encoding : chunked"], b"5\r\nhello\r\n0\r\n\r\n"),
    "an underscored coding": ([b"Transfer_Encoding: chunked"], b"5\r\nhello\r\n0\r\n\r\n"),
    "100-continue": ([b"Expect: 100-continue", b"Content-Length: 5"], b"hello"),
    "100-Continue": ([b"Expect: 100-Continue", b"Content-Length: 5"], b"hello"),
    "an unknown expectation": ([b"Expect: magic"], b""),
}
FIELDS = {
    "none": [],
    "a host": [b"Host: app.example"],
    "two hosts": [b"Host: a", b"Host: b"],
    "an empty host": [b"Host:"],
    "a host with a tab": [b"Host: a\tb"],
    "two content types": [b"Content-Type: a", b"content-type: b"],
    "repeated fields": [b"Accept: a", b"Cookie: x=1", b"accept: b", b"Cookie: y=2"],
    "close": [b"Connection: close"],
    "CLOSE, padded": [b"Connection:  CLOSE\t"],
    "keep-alive": [b"Connection: Keep-Alive"],
    "a list": [b"Connection: close, keep-alive"],
    "two, close second": [b"Connection: keep-alive", b"Connection: close"],
    "two, keep-alive second": [b"Connection: close", b"Connection: keep-alive"],
    "an empty first": [b"Connection:", b"Connection: close"],
    "an underscored Connection": [b"Connection_: close"],
    "upgrade": [b"Connection: Upgrade", b"Upgrade: websocket"],
    "a forwarded address": [b"X-Forwarded-For: 1.2.3.4"],
    "an underscored forwarded address": [b"X_Forwarded_For: 6.6.6.6", b"X-Forwarded-For: 1.2.3.4"],
    "https": [b"X-Forwarded-Proto: https"],
    "HTTPS": [b"X-Forwarded-Proto: HTTPS"],
    "http": [b"X-Forwarded-Proto: http"],
    "https twice": [b"X-Forwarded-Proto: https", b"X-Forwarded-Proto: https"],
    "https then http": [b"X-Forwarded-Proto: https", b"x-forwarded-proto: http"],
    "an underscored scheme": [b"X_Forwarded_Proto: https"],
    "the other scheme headers": [b"X-Forwarded-Ssl: on", b"X-Forwarded-Protocol: ssl"],
    "scheme headers that disagree": [b"X-Forwarded-Proto: https", b"X-Forwarded-Ssl: off"],
    "Forwarded": [b"Forwarded: for=1.2.3.4;proto=https"],
    "SCRIPT_NAME": [b"SCRIPT_NAME: /app", b"PATH_INFO: /metrics"],
    "Script-Name": [b"Script-Name: /app"],
    "a NUL": [b"X: a\x00b"],
    "a bare CR": [b"X: a\rb"],
    "a bare LF": [b"X: a\nY: b"],
    "a vertical tab": [b"X: a\x0bb"],
    "a form feed": [b"X:\x0c"],
    "DEL": [b"X: \x7f"],
    "obs-text": [b"X: Ren\xe9e \x80\xff"],
    "obs-text in a name": [b"\xe9: y"],
    "a NUL in a name": [b"X\x00: y"],
    "a blank in a name": [b"X Y: 1"],
    "a blank before a colon": [b"Host : x"],
    "a leading blank": [b" Host: x"],
    "no colon": [b"Host"],
    "no name": [b": x"],
    "colons": [b"X:Y:Z"],
    "a longest line": [b"X: " + b"a" * 8185],
    "a line too long": [b"X: " + b"a" * 8186],
    "a CR before the CRLF": [b"X: a\r"],
    "a line of blanks": [b"X: a", b" \t "],
    "a mixed-case length": [b"content-LENGTH: 0"],
    "a coding with a trailing blank": [b"Transfer-Encoding: chunked "],
    "a hundred fields": [b"X-%d: 1" % n for n in range(100)],
    "a hundred and one": [b"X-%d: 1" % n for n in range(101)],
}
CONFIGS = {
    "shipped": {},
    "any proxy": {"forwarded_allow_ips": "*"},
    "gunicorn's scheme headers": {
        "secure_scheme_headers": {"X-FORWARDED-PROTOCOL": "ssl", "X-FORWARDED-PROTO": "https", "X-FORWARDED-SSL": "on"}
    },
    "dangerous": {"header_map": "dangerous"},
    "refuse": {"header_map": "refuse"},
    "trusted forwarders": {"forwarder_headers": "SCRIPT_NAME,PATH_INFO,X_FORWARDED_FOR", "forwarded_allow_ips": "*"},
}


def judged(config, data: bytes, peer) -> str:
    """ "taken" (and then equal to gunicorn's reading), "declined", or "not served" (the poller does not
    hand the lean path this request: not whole, or framing it leaves to gunicorn)."""
    if RequestBuffer(65536).feed(data) is not Outcome.SERVE:
        return "not served"
    return compared(config, data, peer, by_lean_path(config, data, peer))


def judged_alone(config, data: bytes, peer, body_length: int) -> str:
    """As judged, for the lean parse alone: given a head and a body length whatever the poller's
    framing check (request_buffer.py) would say, so that the parse's own checks are what is tested."""
    gathered = types.SimpleNamespace(data=bytearray(data), body_start=data.find(b"\r\n\r\n") + 4, chunks=None)
    gathered.body_length = body_length
    serving = Serving()
    serving.rules, serving.shared_environ = Rules(config), worker_environ(config)
    conn = types.SimpleNamespace(environ=None, sock=SOCKET, client=peer, server=SERVER, gathered=gathered)
    request = serving._parse(conn)
    lean = request and (request, comparable(environ(conn.environ, request, lambda headers: None)), request.rest)
    return compared(config, data, peer, lean)


def compared(config, data: bytes, peer, lean) -> str:
    """ "declined" if the lean path gave None, else "taken" once its reading is gunicorn's."""
    if lean is None:
        return "declined"
    request, lean_environ, rest = lean
    try:
        theirs, their_environ, their_rest = by_gunicorn(config, data, peer)
    except Exception as refused:
        pytest.fail(f"the lean parse took what gunicorn refuses ({refused!r}): {data!r}")
    assert lean_environ == their_environ, data
    assert request.should_close() == theirs.should_close(), data
    assert rest == their_rest, data
    return "taken"


def request(line: bytes, fields: list, framing: tuple) -> bytes:
    headers, body = framing
    return b"\r\n".join([line, *fields, *headers]) + b"\r\n\r\n" + body


@pytest.mark.parametrize("config", CONFIGS)
def test_every_crafted_head_the_lean_parse_takes_is_read_as_gunicorn_reads_it(config, monkeypatch):
    monkeypatch.delenv("SCRIPT_NAME", raising=False)
    settings = shipped_config(**CONFIGS[config])
    seen = {"taken": 0, "declined": 0, "not served": 0}
    cases = itertools.chain(
        ((line, [b"Host: x"], FRAMING["a length"]) for line in REQUEST_LINES),
        ((line, [], FRAMING["none"]) for line in REQUEST_LINES),
        ((REQUEST_LINES[2], FIELDS["a host"], framing) for framing in FRAMING.values()),
        ((REQUEST_LINES[4], FIELDS["keep-alive"], framing) for framing in FRAMING.values()),
        ((REQUEST_LINES[0], fields, FRAMING["none"]) for fields in FIELDS.values()),
        ((REQUEST_LINES[4], fields, FRAMING["a length"]) for fields in FIELDS.values()),
    )
    for line, fields, framing in cases:
        for peer in (LOCAL, OUTSIDE):
            seen[judged(settings, request(line, fields, framing), peer)] += 1
    # The corpus reaches both sides of the parse: plain requests taken, crafted ones declined.
    assert seen["taken"] > 80 and seen["declined"] > 150, seen


@pytest.mark.parametrize("seed", range(4))
def test_random_mixtures_of_crafted_lines_are_read_as_gunicorn_reads_them(seed, monkeypatch):
    monkeypatch.delenv("SCRIPT_NAME", raising=False)
    rng = random.Random(seed)
    fields, framings, configs = list(FIELDS.values()), list(FRAMING.values()), list(CONFIGS.values())
    settings = [shipped_config(**overrides) for overrides in configs]
    seen = {"taken": 0, "declined": 0, "not served": 0}
    for _ in range(600):
        lines = [line for chosen in rng.sample(fields, rng.randint(0, 4)) for line in chosen[:3]]
        rng.shuffle(lines)
        data = request(rng.choice(REQUEST_LINES[:8]), lines, rng.choice(framings))
        seen[judged(rng.choice(settings), data, rng.choice((LOCAL, OUTSIDE)))] += 1
    assert seen["taken"] > 20 and seen["declined"] > 100, seen


@pytest.mark.parametrize("path", [b"/app/x", b"/app", b"/apple", b"/x"])
def test_a_script_name_from_the_environment_is_applied_as_gunicorn_applies_it(path, monkeypatch):
    monkeypatch.setenv("SCRIPT_NAME", "/app")
    for fields in (FIELDS["none"], FIELDS["SCRIPT_NAME"], FIELDS["https"]):
        data = request(b"GET " + path + b"?q=1 HTTP/1.1", fields, FRAMING["none"])
        outcome = judged(shipped_config(forwarded_allow_ips="*"), data, LOCAL)
        assert outcome == ("taken" if path.startswith(b"/app") else "declined")


@pytest.mark.parametrize("config", ["shipped", "any proxy"])
def test_the_lean_parse_alone_takes_no_framing_gunicorn_reads_otherwise(config, monkeypatch):
    monkeypatch.delenv("SCRIPT_NAME", raising=False)
    settings = shipped_config(**CONFIGS[config])
    seen = {"taken": 0, "declined": 0}
    for (line, fields), (headers, body) in itertools.product(
        [(REQUEST_LINES[2], FIELDS["a host"]), (REQUEST_LINES[4], FIELDS["keep-alive"])], FRAMING.values()
    ):
        data = request(line, fields, (headers, body))
        for body_length, peer in itertools.product((0, 3, 5, len(body)), (LOCAL, OUTSIDE)):
            seen[judged_alone(settings, data, peer, body_length)] += 1
    assert seen["taken"] > 20 and seen["declined"] > 400, seen
