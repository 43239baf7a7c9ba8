"""The lean path of the request threads (server/lean_request.py, lean_environ.py, serving.py) agrees with
gunicorn's parser and wsgi.create under the shipped gunicorn.conf.py: a request it takes gets the same
environ (every PEP 3333 key and gunicorn's own), keep-alive decision and leftover bytes; a request
gunicorn refuses, or one it reads in a way this path does not, is left to gunicorn (the parse declines)."""

import pytest

from server.request_buffer import Outcome, RequestBuffer
from tests.helpers.lean_path import LOCAL, OUTSIDE, PLAIN, agree, by_gunicorn, by_lean_path, shipped_config

# gunicorn reads these; the lean path leaves them to it.
LEFT_TO_GUNICORN = {
    "100-continue": b"POST /x HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\nab",
    "chunked": b"POST /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nab\r\n0\r\n\r\n",
    "an empty line first": b"\r\nGET / HTTP/1.1\r\n\r\n",
    "a path starting //": b"GET //x HTTP/1.1\r\n\r\n",
    "a fragment": b"GET /x#frag HTTP/1.1\r\n\r\n",
    "an absolute target": b"GET http://x/y HTTP/1.1\r\n\r\n",
    "OPTIONS *": b"OPTIONS * HTTP/1.1\r\n\r\n",
    "a method with a dash": b"M-SEARCH / HTTP/1.1\r\n\r\n",
    "HTTP/1.5": b"GET / HTTP/1.5\r\n\r\n",
    "the scheme twice": b"GET / HTTP/1.1\r\nX-Forwarded-Proto: https\r\nX-Forwarded-Proto: https\r\n\r\n",
    "CONNECT": b"CONNECT /x HTTP/1.1\r\n\r\n",
}
REFUSED_BY_GUNICORN = {
    "a lowercase method": b"get / HTTP/1.1\r\n\r\n",
    "a short method": b"GE / HTTP/1.1\r\n\r\n",
    "HTTP/2.0": b"GET / HTTP/2.0\r\n\r\n",
    "two spaces": b"GET  / HTTP/1.1\r\n\r\n",
    "a control in the target": b"GET /a\x01b HTTP/1.1\r\n\r\n",
    "a bare LF": b"GET / HTTP/1.1\r\nX: a\nY: b\r\n\r\n",
    "a bare CR": b"GET / HTTP/1.1\r\nX: a\rb\r\n\r\n",
    "a NUL in a value": b"GET / HTTP/1.1\r\nX: a\x00b\r\n\r\n",
    "DEL in a value": b"GET / HTTP/1.1\r\nX: a\x7fb\r\n\r\n",
    "a folded line": b"GET / HTTP/1.1\r\nX: a\r\n  b\r\n\r\n",
    "a blank before the colon": b"GET / HTTP/1.1\r\nHost : x\r\n\r\n",
    "no colon": b"GET / HTTP/1.1\r\nHost\r\n\r\n",
    "no name": b"GET / HTTP/1.1\r\n: x\r\n\r\n",
    "a slash in a name": b"GET / HTTP/1.1\r\nX/Y: 1\r\n\r\n",
    "two hosts": b"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
    "two content types": b"GET / HTTP/1.1\r\nContent-Type: a\r\ncontent-type: b\r\n\r\n",
    "an expectation unknown": b"GET / HTTP/1.1\r\nExpect: magic\r\n\r\n",
    "a field over the limit": b"GET / HTTP/1.1\r\nX: " + b"a" * 8190 + b"\r\n\r\n",
    "a request line over the limit": b"GET /" + b"a" * 4100 + b" HTTP/1.1\r\n\r\n",
    "too many fields": b"GET / HTTP/1.1\r\n" + b"X: 1\r\n" * 101 + b"\r\n",
}


@pytest.mark.parametrize("peer", [LOCAL, OUTSIDE], ids=["from the proxy", "from elsewhere"])
@pytest.mark.parametrize("name", PLAIN)
def test_a_plain_request_takes_the_lean_path_and_gets_gunicorns_environ(name, peer):
    assert agree(shipped_config(), PLAIN[name], peer)


@pytest.mark.parametrize("name", LEFT_TO_GUNICORN)
def test_what_the_lean_path_does_not_read_plainly_is_left_to_gunicorn(name):
    by_gunicorn(shipped_config(), LEFT_TO_GUNICORN[name], LOCAL)  # gunicorn serves it
    assert by_lean_path(shipped_config(), LEFT_TO_GUNICORN[name], LOCAL) is None


@pytest.mark.parametrize("name", REFUSED_BY_GUNICORN)
def test_a_request_gunicorn_refuses_is_left_to_gunicorn_to_refuse(name):
    data = REFUSED_BY_GUNICORN[name]
    with pytest.raises(Exception) as refused:
        by_gunicorn(shipped_config(), data, LOCAL)
    assert type(refused.value).__module__ == "gunicorn.http.errors"
    assert by_lean_path(shipped_config(), data, LOCAL) is None


ODD_BYTES = (b"\x00", b"\x01", b"\t", b"\x0b", b"\r", b"\n", b"\x7f", b"\x80", b"\xff", b" ", b":", b"_", b"#", b"?")


def test_every_odd_byte_anywhere_is_either_left_to_gunicorn_or_read_as_gunicorn_reads_it():
    taken = declined = 0
    for name, peers in (
        ("a poke", [LOCAL]),
        ("repeated fields joined", [LOCAL]),
        ("the scheme from the proxy", [LOCAL, OUTSIDE]),
    ):
        data = PLAIN[name]
        for at in range(len(data) + 1):
            for odd in ODD_BYTES:
                mutated = data[:at] + odd + data[at:]
                if RequestBuffer(65536).feed(mutated) is not Outcome.SERVE:
                    continue
                for peer in peers:
                    if agree(shipped_config(), mutated, peer):
                        taken += 1
                    else:
                        declined += 1
    assert taken > 500 and declined > 500, (taken, declined)


@pytest.mark.parametrize(
    "overrides",
    [
        {"forwarded_allow_ips": "*"},
        {"header_map": "dangerous"},
        {"header_map": "refuse"},
        {"forwarder_headers": "SCRIPT_NAME,PATH_INFO,X_REAL_IP"},
        {"forwarder_headers": "*", "forwarded_allow_ips": "*"},
        {"secure_scheme_headers": {"X-FORWARDED-PROTO": "https", "X-FORWARDED-SSL": "on"}},
    ],
    ids=repr,
)
@pytest.mark.parametrize("name", ["an underscored header dropped", "SCRIPT_NAME dropped", "a scheme that is not https"])
def test_other_forwarding_settings_are_applied_as_gunicorn_applies_them(overrides, name):
    for peer in (LOCAL, OUTSIDE):
        agree(shipped_config(**overrides), PLAIN[name], peer)
        agree(shipped_config(**overrides), PLAIN[name] + b"X_Real_IP: 1.2.3.4\r\n\r\n", peer)


def test_a_forwarder_may_not_move_the_app_through_the_lean_path():
    config = shipped_config(forwarder_headers="SCRIPT_NAME,PATH_INFO", forwarded_allow_ips="*")
    assert by_lean_path(config, PLAIN["SCRIPT_NAME dropped"], OUTSIDE) is None
