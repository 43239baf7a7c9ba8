"""Slow clients cost the shipped server (gunicorn.conf.py as it is, one worker) nothing: connections
that send nothing, stop inside their headers or stop inside a body hold no thread, a normal client is
answered beside them within a second, and each is closed at its deadline (REQUEST_HEADER_TIMEOUT,
REQUEST_BODY_TIMEOUT), even one that keeps trickling bytes. The request is read whole before the app
sees it, and HTTP/1.1's pieces (100-continue, pipelining, chunked bodies) still work."""

import json
import socket
import time

import pytest

from bench.studies.keepalive import Connection
from bench.studies.slow_clients import (
    KINDS,
    PUBLIC,
    STALLED_BODY,
    UNFINISHED_HEAD,
    address,
    requests_beside_slow_clients,
    trickle,
)
from dev.services import free_port
from tests.helpers.real_services import delete_prefix, integration_env, start_live_app

pytestmark = pytest.mark.integration
# The deadline tests wait for the deadline: 2 s instead of the default 10 s keeps them short, and is
# still far above the time a request takes to arrive on loopback.
SHORT_S = 2.0
# The poller checks deadlines at least once a second; on top of that, a loaded two-core machine.
LATE_S = 1.5
HEAD = b"POST /auth/backchannel-logout HTTP/1.1\r\nHost: app\r\nContent-Type: application/x-www-form-urlencoded\r\n"
FORM = b"logout_token=abc"


def serve(idp, redis_url, workdir, **settings):
    """The app under the shipped config with one worker and `settings`; stopped and cleaned up after."""
    env = integration_env(idp, redis_url, 0, **settings)
    server, live = start_live_app(env, free_port(), workdir, workers=1)
    yield live
    server.stop()
    delete_prefix(redis_url, env["REDIS_KEY_PREFIX"])


@pytest.fixture(scope="module")
def one_worker(idp, redis_url, workdir):
    yield from serve(idp, redis_url, workdir)


@pytest.fixture(scope="module")
def short_deadlines(idp, redis_url, workdir):
    yield from serve(idp, redis_url, workdir, REQUEST_HEADER_TIMEOUT=SHORT_S, REQUEST_BODY_TIMEOUT=SHORT_S)


def exchange(live, data: bytes) -> bytes:
    """Send `data` on a new connection; all the server sent until it closed the connection."""
    with socket.create_connection(address(live.url), timeout=5) as connection:
        connection.sendall(data)
        return read_until(connection, None)


def read_until(connection, wait_for: bytes | None) -> bytes:
    """What arrives on `connection` until `wait_for` (None: until the server closes)."""
    received = b""
    while wait_for is None or wait_for not in received:
        chunk = connection.recv(65536)
        if not chunk:
            break
        received += chunk
    return received


@pytest.mark.parametrize("kind", KINDS)
def test_a_normal_client_is_answered_within_a_second_while_slow_clients_hold_connections(one_worker, kind):
    result = requests_beside_slow_clients(one_worker.url, *KINDS[kind], seconds=3)
    # gunicorn's own gthread: behind 24 silent connections the first answer took 15 s; behind 8
    # unfinished heads or 8 stalled bodies none came in 45 s.
    assert result["statuses"] == [200], result
    assert result["max_s"] < 1.0, result
    # Every slow connection was still open at the end: they were held, not dropped.
    assert result["slow_still_open"] == result["slow"], result


def test_a_client_trickling_its_headers_is_cut_off_at_the_header_deadline(short_deadlines):
    seconds, answer = trickle(short_deadlines.url, STALLED_BODY, interval=0.3)
    assert answer.startswith(b"HTTP/1.1 408 Request Timeout\r\n"), answer
    assert SHORT_S - 0.1 < seconds < SHORT_S + LATE_S


def test_a_client_trickling_its_body_is_cut_off_at_the_body_deadline(short_deadlines):
    head = HEAD + b"Content-Length: 200\r\n\r\n"
    seconds, answer = trickle(short_deadlines.url, b"x" * 200, interval=0.3, first=head)
    assert answer.startswith(b"HTTP/1.1 408 Request Timeout\r\n"), answer
    assert SHORT_S - 0.1 < seconds < SHORT_S + LATE_S


def test_a_connection_that_sends_nothing_is_closed_at_the_header_deadline_without_an_answer(short_deadlines):
    seconds, answer = trickle(short_deadlines.url, b"", interval=0.3)
    assert answer == b""
    assert SHORT_S - 0.1 < seconds < SHORT_S + LATE_S


def test_a_kept_alive_connection_idles_past_the_header_deadline_and_its_next_request_has_one_of_its_own(
    short_deadlines,
):
    connection = Connection(short_deadlines.url)
    try:
        assert connection.get(PUBLIC)[0] == 200
        time.sleep(SHORT_S + LATE_S)
        # Idle between requests is keep-alive's 100 s, not the header deadline.
        assert connection.get(PUBLIC)[0] == 200
        connection.sock.settimeout(0.3)
        started = time.monotonic()
        answer = b""
        for byte in UNFINISHED_HEAD:
            connection.sock.sendall(bytes([byte]))
            try:
                answer = connection.sock.recv(4096)
                break
            except TimeoutError:
                continue
        assert answer.startswith(b"HTTP/1.1 408 Request Timeout\r\n"), answer
        assert SHORT_S - 0.1 < time.monotonic() - started < SHORT_S + LATE_S
    finally:
        connection.close()


def test_a_client_that_expects_100_continue_gets_it_once_and_then_its_answer(one_worker):
    head = HEAD + b"Expect: 100-continue\r\nContent-Length: 16\r\n\r\n"
    with socket.create_connection(address(one_worker.url), timeout=5) as connection:
        connection.sendall(head)
        assert read_until(connection, b"\r\n\r\n") == b"HTTP/1.1 100 Continue\r\n\r\n"
        connection.sendall(FORM)
        answer = read_until(connection, b"invalid_request")
    assert answer.startswith(b"HTTP/1.1 400 ")
    assert b"100 Continue" not in answer


def test_pipelined_requests_are_each_answered(one_worker):
    request = f"GET {PUBLIC} HTTP/1.1\r\nHost: app\r\n\r\n".encode()
    answer = exchange(one_worker, request * 2 + request.replace(b"\r\n\r\n", b"\r\nConnection: close\r\n\r\n"))
    assert answer.count(b"HTTP/1.1 200 OK\r\n") == 3, answer


def test_a_chunked_body_reaches_the_app_whole(one_worker):
    chunks = b"5\r\nlogou\r\nb;ext=1\r\nt_token=abc\r\n0\r\nX-Trailer: 1\r\n\r\n"
    framings = (b"Transfer-Encoding: chunked\r\n", chunks), (b"Content-Length: 16\r\n", FORM)
    answers = [exchange(one_worker, HEAD + field + b"Connection: close\r\n\r\n" + body) for field, body in framings]
    # The app read logout_token=abc and refused it as a token, whichever way the body was framed.
    assert [answer.split(b"\r\n", 1)[0] for answer in answers] == [b"HTTP/1.1 400 BAD REQUEST"] * 2, answers
    assert answers[0].split(b"\r\n\r\n", 1)[1] == answers[1].split(b"\r\n\r\n", 1)[1]


def test_a_chunked_body_with_broken_framing_is_refused_before_the_app(one_worker):
    answer = exchange(one_worker, HEAD + b"Transfer-Encoding: chunked\r\n\r\n3\r\nabcdef\r\n0\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 400 Bad Request\r\nConnection: close\r\n"), answer


def test_a_body_over_the_limit_is_refused_by_the_app_at_once_without_waiting_for_it(one_worker, idp):
    token = idp.user_token("alice").encode()
    head = (
        b"POST /api/v1/pokes HTTP/1.1\r\nHost: app\r\nAuthorization: Bearer " + token + b"\r\n"
        b"Content-Type: application/json\r\nContent-Length: 1000000\r\n\r\n"
    )
    started = time.monotonic()
    answer = exchange(one_worker, head)
    assert time.monotonic() - started < 1.0
    assert answer.startswith(b"HTTP/1.1 413 "), answer
    assert b"Connection: close" in answer
    assert json.loads(answer.split(b"\r\n\r\n", 1)[1]) == {"success": False, "error": "request body is too large"}
