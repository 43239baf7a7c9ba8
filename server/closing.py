"""When and how gthread_worker.py's connections end: a request past its deadline (408), a kept-alive
connection past its keep-alive, a refusal from the poller, and the close itself.

A closing connection lingers on the poller, not on gunicorn's main loop, where 30 clients keeping
their sockets held new connections for 6 s (docs/performance.md, "Server choice"): it closes when the
client closes too (RFC 9112 section 9.6), after 64 KiB drained, or after 2 s. The loop turns about
twice a request; its heartbeat to the master and these expiry checks run at most every HOUSEKEEPING_S.
"""

import contextlib
import selectors
import socket
import time
from collections import deque
from functools import partial

from gunicorn import util
from gunicorn.workers.gthread import STOP_KEEPALIVE_LINGER

LINGER_S = 2.0
MAX_DRAIN = 65536
HOUSEKEEPING_S = 0.05
# The whole answer the poller sends when it refuses a request itself.
REASONS = {400: "Bad Request", 408: "Request Timeout", 413: "Content Too Large", 431: "Request Header Fields Too Large"}
REFUSALS = {
    status: f"HTTP/1.1 {status} {reason}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n".encode()
    for status, reason in REASONS.items()
}


class Closing:
    """The Worker's expiry and closes (a mixin before gunicorn's ThreadWorker, whose poller,
    keepalived_conns and nr_conns it uses; the Worker keeps the deques `lingering`, `heads` and `bodies`)."""

    def _send(self, conn, answer: bytes) -> bool:
        """Send a short answer without blocking the main loop; whether all of it went."""
        try:
            return conn.sock.send(answer) == len(answer)
        except OSError:
            return False

    def _refuse(self, conn, status: int):
        """Answer `status` from the poller and close, lingering."""
        self._send(conn, REFUSALS[status])
        self._linger(conn)

    def _close(self, conn):
        """Close a connection for good, wherever it waits."""
        with contextlib.suppress(KeyError, ValueError, OSError):
            self.poller.unregister(conn.sock)
        if conn.idle:
            self.keepalived_conns.remove(conn)
        conn.deadline = conn.linger_until = None
        self.nr_conns -= 1
        util.close(conn.sock)

    def _linger(self, conn):
        """Half-close and wait on the poller for the client to close (see the module's docstring)."""
        try:
            conn.sock.shutdown(socket.SHUT_WR)
            conn.sock.setblocking(False)
            self.poller.register(conn.sock, selectors.EVENT_READ, partial(self._drain, conn))
        except (OSError, ValueError):
            self._close(conn)
            return
        conn.drained, conn.linger_until = 0, time.monotonic() + LINGER_S
        self.lingering.append(conn)

    def _drain(self, conn, sock):
        """Read what the client still sends; close once it closes or has sent too much."""
        try:
            data = sock.recv(4096)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        conn.drained += len(data)
        if not data or conn.drained >= MAX_DRAIN:
            self._close(conn)

    def murder_lingering(self, force=False):
        """Close the lingering connections past their 2 s (all of them if `force`)."""
        now = time.monotonic()
        while self.lingering:
            conn = self.lingering[0]
            if conn.linger_until is not None and conn.linger_until > now and not force:
                break
            self.lingering.popleft()
            if conn.linger_until is not None:
                self._close(conn)

    def notify(self):
        """gunicorn's heartbeat to the master, at most every HOUSEKEEPING_S."""
        now = time.monotonic()
        if now >= self.next_notify:
            self.next_notify = now + HOUSEKEEPING_S
            super().notify()

    def murder_pending(self):
        """Nothing waits in gthread's pending_conns: the poller reads every request."""

    def murder_keepalived(self, force=False):
        """gthread's expiry of kept-alive connections; then of lingering ones past their 2 s, and of
        requests past their deadline (a stop gives a request that has not begun 2 s more at most).
        While the worker runs, at most every HOUSEKEEPING_S."""
        now = time.monotonic()
        if self.alive and not force and now < self.next_expiry:
            return
        self.next_expiry = now + HOUSEKEEPING_S
        super().murder_keepalived(force)
        self.murder_lingering(force)
        if not self.alive and not self.heads_capped:
            # Capped alike, the live entries stay in deadline order.
            cap, self.heads_capped = now + STOP_KEEPALIVE_LINGER, True
            live = [conn for deadline, conn in self.heads if conn.deadline == deadline]
            for conn in live:
                conn.deadline = min(conn.deadline, cap)
            self.heads = deque((conn.deadline, conn) for conn in live)
        for deadlines in (self.heads, self.bodies):
            while deadlines and deadlines[0][0] <= now:
                deadline, conn = deadlines.popleft()
                if conn.deadline == deadline:
                    self._time_out(conn)

    def _time_out(self, conn):
        """Close a connection past its deadline: 408 if its request had begun."""
        if conn.request.data:
            self.poller.unregister(conn.sock)
            conn.deadline = None
            self._refuse(conn, 408)
        else:
            self._close(conn)
