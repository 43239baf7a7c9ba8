"""Requests while many idle keep-alive connections are open: IDLE connections each make one request at
once and then sit idle (as a proxy's or browser's pool does); meanwhile requests on fresh connections
and on some of the idle ones must each be answered within a small bound, never waiting for an idle one
to time out, and every idle connection must still serve a request afterwards.

Used by tests/integration/test_server_keepalive.py (shipped gunicorn config) and, to compare configs,
`python -m bench.studies.keepalive [gunicorn options...]`, which starts everything itself.
"""

import os
import re
import signal
import socket
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import urlsplit

from bench.studies.stack import served
from dev import oidc_driver
from dev.services import Process

IDLE = 200
FRESH = 64
REUSED = 20
# Far below any keep-alive timeout a server would use (the stall it catches lasts the whole timeout),
# far above a request's latency on a loaded two-core machine.
BOUND_S = 3.0
READ_TIMEOUT_S = 15.0
HEADER_END = b"\r\n\r\n"


class Connection:
    """One HTTP/1.1 connection driven by hand, so the test decides when it is reused or left idle."""

    def __init__(self, base_url: str):
        parts = urlsplit(base_url)
        self.host, self.port = parts.hostname, parts.port
        self.sock = socket.create_connection((self.host, self.port), timeout=READ_TIMEOUT_S)
        self.buffer = b""

    def get(self, path: str, headers: dict | None = None) -> tuple[int, dict, float]:
        """Send GET `path` and read the whole answer: (status, lower-cased headers, seconds taken)."""
        lines = [f"GET {path} HTTP/1.1", f"Host: {self.host}:{self.port}"]
        lines += [f"{name}: {value}" for name, value in (headers or {}).items()]
        started = time.perf_counter()
        self.sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        while HEADER_END not in self.buffer:
            self._read()
        head, self.buffer = self.buffer.split(HEADER_END, 1)
        status_line, *header_lines = head.decode("latin-1").split("\r\n")
        answer = {name.lower(): value.strip() for name, value in (line.split(":", 1) for line in header_lines)}
        length = int(answer.get("content-length", "0"))
        while len(self.buffer) < length:
            self._read()
        self.buffer = self.buffer[length:]
        return int(status_line.split()[1]), answer, time.perf_counter() - started

    def is_closed_by_server(self) -> bool:
        """Whether the server has closed this connection (EOF waiting on an idle socket)."""
        self.sock.setblocking(False)
        try:
            return self.sock.recv(1) == b""
        except BlockingIOError:
            return False
        finally:
            self.sock.settimeout(READ_TIMEOUT_S)

    def _read(self) -> None:
        chunk = self.sock.recv(65536)
        if not chunk:
            raise ConnectionError("closed by the server")
        self.buffer += chunk

    def close(self) -> None:
        self.sock.close()


def attempt(call, *args) -> tuple[int | None, dict, float]:
    """`call(*args)` as (status, headers, seconds), or (None, {}, seconds) when the server closed the
    connection or did not answer within READ_TIMEOUT_S."""
    started = time.perf_counter()
    try:
        return call(*args)
    except (TimeoutError, ConnectionError) as error:
        return None, {"error": type(error).__name__}, time.perf_counter() - started


def keeps_alive(headers: dict) -> bool:
    """Whether an HTTP/1.1 answer leaves its connection open."""
    return not re.search(r"\bclose\b", headers.get("connection", ""), re.IGNORECASE)


def fresh_get(base_url: str, path: str, headers: dict | None = None) -> tuple[int, dict, float]:
    """GET `path` on a new connection, closed afterwards; its seconds include the connect."""
    started = time.perf_counter()
    connection = Connection(base_url)
    try:
        status, answer, _ = connection.get(path, headers)
    finally:
        connection.close()
    return status, answer, time.perf_counter() - started


def outcome(answers: list) -> dict:
    """The statuses (None: no answer in time or closed by the server) and the slowest answer's seconds."""
    return {
        "statuses": sorted({status for status, _, _ in answers}, key=str),
        "unanswered": sum(status is None for status, _, _ in answers),
        "max_s": round(max(seconds for _, _, seconds in answers), 3),
    }


def requests_beside_idle_connections(base_url: str, bearer: str) -> dict:
    """Open IDLE connections at once, one request each, and leave them idle; then FRESH requests on new
    connections (16 at a time, public and bearer routes) and one on each of REUSED idle ones; then one
    more on every idle connection. Returns the times (s) and what became of the idle connections."""
    public, own = "/api/v1/users/bob", "/api/v1/me/profile"
    auth = {"Authorization": f"Bearer {bearer}"}
    started = time.perf_counter()
    with ThreadPoolExecutor(IDLE) as pool:
        idle = list(pool.map(lambda _: Connection(base_url), range(IDLE)))
        opening = list(pool.map(lambda c: attempt(c.get, public), idle))
    opened_s = time.perf_counter() - started
    try:
        with ThreadPoolExecutor(16) as pool:
            fresh = list(
                pool.map(lambda n: attempt(fresh_get, base_url, *((own, auth) if n % 2 else (public,))), range(FRESH))
            )
        with ThreadPoolExecutor(REUSED) as pool:
            reused = list(pool.map(lambda c: attempt(c.get, own, auth), idle[:: IDLE // REUSED][:REUSED]))
        closed_while_idle = sum(connection.is_closed_by_server() for connection in idle)
        with ThreadPoolExecutor(32) as pool:
            again = list(pool.map(lambda c: attempt(c.get, public), idle))
    finally:
        for connection in idle:
            connection.close()
    return {
        "opening": {**outcome(opening), "all_s": round(opened_s, 3)},
        "kept_alive": sum(status is not None and keeps_alive(headers) for status, headers, _ in opening),
        "fresh": outcome(fresh),
        "reused": outcome(reused),
        "closed_while_idle": closed_while_idle,
        "again": outcome(again),
    }


def main(gunicorn_options: list[str]) -> None:
    """Start Redis, the provider and the app under `gunicorn_options`, run the check, print it."""
    with served("keepalive", gunicorn_options) as service:
        env = service.env
        issuer, client, redirect = env["OIDC_ISSUER_URL"], env["OIDC_CLIENT_ID"], env["OIDC_REDIRECT_URI"]
        bearer = oidc_driver.user_tokens(issuer, client, redirect, "alice", "demo")["access_token"]
        print(" ".join(gunicorn_options) or "(shipped default)", requests_beside_idle_connections(service.base, bearer))


if __name__ == "__main__":
    main(sys.argv[1:])


def stop_seconds_beside_idle_connections(server: Process, base_url: str, count: int = IDLE) -> float:
    """Seconds `server` (a gunicorn master) takes to exit after SIGTERM while `count` kept-alive
    connections sit idle, each having made one request."""
    with ThreadPoolExecutor(64) as pool:
        idle = list(pool.map(lambda _: Connection(base_url), range(count)))
        list(pool.map(lambda c: attempt(c.get, "/api/v1/users/bob"), idle))
    try:
        started = time.perf_counter()
        os.kill(server.pid, signal.SIGTERM)
        server.popen.wait(timeout=60)
        return time.perf_counter() - started
    finally:
        for connection in idle:
            connection.close()


def requests_beside_unclosed_connections(base_url: str, count: int = 30) -> dict:
    """`count` clients ask for `Connection: close` at once and keep their sockets open; then requests
    on fresh connections. Returns how long each part took (s)."""
    with ThreadPoolExecutor(count) as pool:
        unclosed = list(pool.map(lambda _: Connection(base_url), range(count)))
        closing = list(pool.map(lambda c: attempt(c.get, "/api/v1/users/bob", {"Connection": "close"}), unclosed))
    try:
        with ThreadPoolExecutor(8) as pool:
            fresh = list(pool.map(lambda _: attempt(fresh_get, base_url, "/api/v1/users/bob"), range(16)))
    finally:
        for connection in unclosed:
            connection.close()
    return {"closing": outcome(closing), "fresh": outcome(fresh)}
