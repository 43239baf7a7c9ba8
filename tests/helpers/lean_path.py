"""What tests of the request threads' lean path (server/lean_request.py, lean_environ.py, serving.py)
compare it with: gunicorn's parser and wsgi.create under the shipped gunicorn.conf.py, on the same bytes,
and requests as real clients send them."""

import runpy
import types
from pathlib import Path

from gunicorn.config import Config
from gunicorn.http import wsgi
from gunicorn.http.parser import RequestParser
from gunicorn.http.wsgi import WSGIErrorsWrapper

from server.lean_environ import worker_environ
from server.lean_request import Rules
from server.request_buffer import Outcome, RequestBuffer
from server.request_threads import Gathered
from server.serving import Serving, environ

LOCAL, OUTSIDE = ("127.0.0.1", 41000), ("203.0.113.9", 41000)  # a trusted proxy (the default) and not
SERVER = ("0.0.0.0", 8000)
SOCKET = object()
SHIPPED = runpy.run_path(str(Path(__file__).resolve().parents[2] / "server" / "gunicorn.conf.py"))
TOKEN = "eyJhbGciOiJSUzI1NiJ9." + "a" * 900
# What real clients send, each served by the lean path.
PLAIN = {
    "a browser's GET": b"GET /api/v1/users/bob HTTP/1.1\r\nHost: app.example\r\nUser-Agent: Mozilla/5.0 (X11)\r\n"
    b"Accept: text/html,*/*;q=0.8\r\nAccept-Language: en-GB,en;q=0.5\r\nCookie: a=1; b=2\r\n\r\n",
    "a bearer call": f"GET /api/v1/me/profile HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}\r\n\r\n".encode(),
    "a poke": b"POST /api/v1/pokes HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 24\r\n"
    b'\r\n{"username": "t0000001"}',
    "no header at all": b"GET / HTTP/1.1\r\n\r\n",
    "a query kept raw": b"GET /auth/callback?code=a%2Fb+c&state=%C3%A9&x= HTTP/1.1\r\nHost: x\r\n\r\n",
    "an encoded path": b"GET /api/v1/users/b%C3%A9b%2Fx%20y HTTP/1.1\r\nHost: x\r\n\r\n",
    "an empty query": b"GET /api/v1/users/bob? HTTP/1.1\r\nHost: x\r\n\r\n",
    "repeated fields joined": b"GET / HTTP/1.1\r\nAccept: a\r\nX-Thing: 1\r\naccept: b\r\nACCEPT: c\r\n\r\n",
    "blanks around values": b"GET / HTTP/1.1\r\nHost:x\r\nX-A:   padded  \r\nX-B:\t tab \t\r\nX-Empty:\r\n\r\n",
    "obs-text in a value": b"GET / HTTP/1.1\r\nX-Name: Ren\xe9e \x80\xff\r\n\r\n",
    "names with every token character": b"GET / HTTP/1.1\r\nX-!#$%&'*+.^`|~09az: v\r\n\r\n",
    "an underscored header dropped": b"GET / HTTP/1.1\r\nX_Forwarded_For: 6.6.6.6\r\nX-Forwarded-For: 1.2.3.4\r\n\r\n",
    "SCRIPT_NAME dropped": b"GET /metrics HTTP/1.1\r\nSCRIPT_NAME: /x\r\nPATH_INFO: /y\r\n\r\n",
    "the scheme from the proxy": b"GET / HTTP/1.1\r\nX-Forwarded-Proto: https\r\n\r\n",
    "a scheme that is not https": b"GET / HTTP/1.1\r\nX-Forwarded-Proto: ftp\r\nX-Forwarded-Ssl: on\r\n\r\n",
    "HTTP/1.0": b"GET / HTTP/1.0\r\nHost: x\r\n\r\n",
    "HTTP/1.0 keep-alive": b"GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n",
    "HTTP/1.1 close": b"GET / HTTP/1.1\r\nConnection: close\r\n\r\n",
    "the first Connection decides": b"GET / HTTP/1.0\r\nConnection: upgrade\r\nConnection: keep-alive\r\n\r\n",
    "a length with zeros": b"PUT /x HTTP/1.1\r\nContent-Length: 003\r\n\r\nabc",
    "a length of zero": b"DELETE /x HTTP/1.1\r\ncontent-length: 0\r\n\r\n",
    "the next request behind": b"POST /x HTTP/1.1\r\nContent-Length: 2\r\n\r\nabGET /next HTTP/1.1\r\n",
    "a long method": b"PROPPATCHXXXXXXXXXXX / HTTP/1.1\r\n\r\n",
    "a colon in a value": b"GET / HTTP/1.1\r\nHost: example.com:8080\r\nX-Time: 12:30:00\r\n\r\n",
}


def shipped_config(**overrides) -> Config:
    """gunicorn's Config with the shipped gunicorn.conf.py's request settings (and `overrides`)."""
    config = Config()
    for name in ("forwarded_allow_ips", "secure_scheme_headers", "forwarder_headers", "header_map"):
        config.set(name, overrides.get(name, SHIPPED[name]))
    return config


def by_gunicorn(config: Config, data: bytes, peer) -> tuple:
    """gunicorn's request, its environ as gthread makes it (wsgi.input read into bytes, other objects
    by kind) and the bytes left after its body."""
    parser = RequestParser(config, [], peer)
    parser.unreader = Gathered()
    parser.unreader.unread(data)
    request = next(parser)
    request._expected_100_continue = False  # as gthread_worker.py's handle_request: the poller answered it
    _, made = wsgi.create(request, SOCKET, peer, SERVER, config)
    made["wsgi.multithread"] = True
    return request, comparable(made), parser.unreader.take_buffered()


def by_lean_path(config: Config, data: bytes, peer) -> tuple | None:
    """The lean path's request, environ (as by_gunicorn gives it) and leftover bytes, as serving.py
    gets them; None where it declines."""
    buffer = RequestBuffer(65536)
    assert buffer.feed(data) is Outcome.SERVE
    serving = Serving()
    serving.rules, serving.shared_environ = Rules(config), worker_environ(config)
    conn = types.SimpleNamespace(environ=None, sock=SOCKET, client=peer, server=SERVER, gathered=buffer)
    request = serving._parse(conn)
    if request is None:
        return None
    return request, comparable(environ(conn.environ, request, lambda headers: None)), request.rest


def comparable(environ: dict) -> dict:
    """`environ` with its objects replaced by what they hold or are."""
    assert isinstance(environ["wsgi.errors"], WSGIErrorsWrapper)
    assert callable(environ["wsgi.early_hints"])
    return {**environ, "wsgi.input": environ["wsgi.input"].read(), "wsgi.errors": None, "wsgi.early_hints": None}


def agree(config: Config, data: bytes, peer) -> bool:
    """Whether the lean path took the request; when it did, it agrees with gunicorn on everything."""
    lean = by_lean_path(config, data, peer)
    if lean is None:
        return False
    request, lean_environ, rest = lean
    theirs, their_environ, their_rest = by_gunicorn(config, data, peer)
    assert lean_environ == their_environ
    assert (request.should_close(), rest) == (theirs.should_close(), their_rest)
    return True
