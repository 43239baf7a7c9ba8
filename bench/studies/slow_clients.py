"""Slow clients beside a normal one: connections that send nothing, stop inside their headers, or stop
after 16 bytes of a body (to POST /auth/backchannel-logout, which needs no sign-in), held open while a
normal client makes requests one after another; and clients that trickle a request a byte at a time.

Used by tests/integration/test_server_slow_clients.py (shipped gunicorn config, one worker) and, to
compare, `python -m bench.studies.slow_clients [gunicorn options...]`, which starts everything itself.
"""

import socket
import sys
import time
from urllib.parse import urlsplit

from bench.studies.keepalive import Connection, attempt, fresh_get, outcome
from bench.studies.stack import served

SILENT, HEADS, BODIES = 24, 8, 8
UNFINISHED_HEAD = (
    b"POST /auth/backchannel-logout HTTP/1.1\r\nHost: app\r\nContent-Type: application/x-www-form-urlencoded\r\n"
)
STALLED_BODY = UNFINISHED_HEAD + b"Content-Length: 200\r\n\r\nlogout_token=abc"
KINDS = {"silent": (SILENT, 0, 0), "unfinished heads": (0, HEADS, 0), "stalled bodies": (0, 0, BODIES)}
KINDS["all at once"] = (SILENT, HEADS, BODIES)
PUBLIC = "/api/v1/users/bob"
READ_TIMEOUT_S = 45.0


def address(base_url: str) -> tuple[str, int]:
    parts = urlsplit(base_url)
    return parts.hostname, parts.port


def slow_connections(base_url: str, silent: int, heads: int, bodies: int) -> list[socket.socket]:
    """Open `silent` connections that send nothing, `heads` that stop inside their header block and
    `bodies` that stop 16 bytes into a 200-byte body; all left open."""
    sent = [b""] * silent + [UNFINISHED_HEAD] * heads + [STALLED_BODY] * bodies
    connections = []
    for data in sent:
        connection = socket.create_connection(address(base_url), timeout=READ_TIMEOUT_S)
        connection.sendall(data)
        connections.append(connection)
    return connections


def still_open(connections: list[socket.socket]) -> int:
    """How many of `connections` the server has neither answered nor closed."""
    count = 0
    for connection in connections:
        connection.setblocking(False)
        try:
            connection.recv(1)
        except BlockingIOError:
            count += 1
        except OSError:
            pass
    return count


def requests_beside_slow_clients(base_url: str, silent: int, heads: int, bodies: int, seconds: float) -> dict:
    """Open the slow connections, then for `seconds` make requests one at a time, alternating a fresh
    connection and one kept alive. Returns how they went and how many slow ones stayed open meanwhile."""
    slow = slow_connections(base_url, silent, heads, bodies)
    answers, kept = [], Connection(base_url)
    kept.sock.settimeout(READ_TIMEOUT_S)
    try:
        until = time.monotonic() + seconds
        while time.monotonic() < until:
            answers.append(attempt(fresh_get, base_url, PUBLIC))
            answers.append(attempt(kept.get, PUBLIC))
        open_after = still_open(slow)
    finally:
        kept.close()
        for connection in slow:
            connection.close()
    return {**outcome(answers), "requests": len(answers), "slow": len(slow), "slow_still_open": open_after}


def trickle(base_url: str, data: bytes, interval: float, *, first: bytes = b"") -> tuple[float, bytes]:
    """Send `first`, then `data` a byte every `interval` s (then nothing), until the server answers or
    closes. Returns the seconds from sending `first` to that moment, and what the server sent."""
    connection = socket.create_connection(address(base_url), timeout=interval)
    try:
        connection.sendall(first)
        started = time.monotonic()
        pending = iter(data)
        while time.monotonic() - started < READ_TIMEOUT_S:
            byte = next(pending, None)
            try:
                if byte is not None:
                    connection.sendall(bytes([byte]))
                answer = connection.recv(4096)
            except TimeoutError:
                continue
            except OSError:
                answer = b""
            return time.monotonic() - started, answer
        return time.monotonic() - started, b""
    finally:
        connection.close()


def main(gunicorn_options: list[str]) -> None:
    """Start Redis, the provider and the app under `gunicorn_options`, run each kind, print them."""
    with served("slow-clients", gunicorn_options) as service:
        for kind, counts in KINDS.items():
            print(kind, requests_beside_slow_clients(service.base, *counts, seconds=3), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
