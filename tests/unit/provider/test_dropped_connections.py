"""A provider that closes a kept-alive connection just as a call is sent on it (its idle timeout meeting
our send) costs the caller nothing: the call goes again on a new connection. A timeout is not repeated."""

import socket
import threading
import time

import pytest
import requests

from app.provider.dropped import sent_again_if_dropped

ANSWER = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\nConnection: keep-alive\r\n\r\n{}"


class ClosesSecondRequest:
    """A loopback server answering each connection's first request and closing it, unanswered, on the
    second: what a client sees when the server's idle close crosses its next send."""

    def __init__(self, *, hang: bool = False):
        self.hang = hang
        self.connections = 0
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self._listener.getsockname()[1]}/introspect"
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while True:
            try:
                connection, _ = self._listener.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._handle, args=(connection,), daemon=True).start()

    def _handle(self, connection):
        with connection:
            for number in (1, 2):
                if not _whole_request(connection):
                    return
                if number == 1 and not self.hang:
                    connection.sendall(ANSWER)
                elif self.hang:
                    time.sleep(2)
                    return

    def close(self):
        self._listener.close()


def _whole_request(connection) -> bool:
    """Read one request, head and body (its Content-Length); False when the client closed first."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = connection.recv(65536)
        if not chunk:
            return False
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = next(
        (int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:")), 0
    )
    while len(body) < length:
        chunk = connection.recv(65536)
        if not chunk:
            return False
        body += chunk
    return True


@pytest.fixture
def server():
    started = ClosesSecondRequest()
    yield started
    started.close()


def test_a_call_on_a_connection_the_provider_dropped_is_sent_again_on_a_new_one(server):
    http = requests.Session()
    assert http.post(server.url, data={"token": "t"}, timeout=2).json() == {}
    with pytest.raises(requests.ConnectionError):  # without the retry: the dropped connection fails the call
        http.post(server.url, data={"token": "t"}, timeout=2)
    assert http.post(server.url, data={"token": "t"}, timeout=2).json() == {}  # a new connection, kept alive
    assert server.connections == 2
    # Sent on that kept-alive connection, which the server drops: answered all the same, on a third one.
    response = sent_again_if_dropped(lambda: http.post(server.url, data={"token": "t"}, timeout=2))
    assert response.json() == {}
    assert server.connections == 3


def test_a_call_that_times_out_is_not_sent_again():
    server = ClosesSecondRequest(hang=True)
    calls = []

    def send():
        calls.append(1)
        return requests.post(server.url, data={"token": "t"}, timeout=0.3)

    with pytest.raises(requests.Timeout):
        sent_again_if_dropped(send)
    assert calls == [1]
    server.close()


def test_a_refused_connection_is_tried_once_more_then_fails_as_the_outage_it_is():
    port = socket.create_server(("127.0.0.1", 0))
    url = f"http://127.0.0.1:{port.getsockname()[1]}/"
    port.close()
    calls = []

    def send():
        calls.append(1)
        return requests.get(url, timeout=1)

    with pytest.raises(requests.ConnectionError):
        sent_again_if_dropped(send)
    assert calls == [1, 1]


def test_a_connect_timeout_is_not_sent_again_either():
    calls = []

    def send():
        calls.append(1)
        raise requests.ConnectTimeout("the provider did not accept the connection in time")

    with pytest.raises(requests.ConnectTimeout):
        sent_again_if_dropped(send)
    assert calls == [1]
