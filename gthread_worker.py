"""gunicorn's gthread worker with the lingering close of a connection taken off the worker's main loop.

gunicorn 27 closes a connection it will not keep (the client asked for `Connection: close`, or the
worker is stopping) by half-closing it and waiting up to 2 s for the client to close too
(`util.close_graceful`, RFC 9112 section 9.6), on the main thread that accepts and polls for every
connection of the worker. A client that keeps its socket open after such an answer stalls the whole
worker for 2 s: 30 of them held new connections for up to 6 s and answers for 15 s
(docs/performance.md, "Server choice"). Here the half-closed socket waits on the worker's poller
instead, and is closed when the client closes, after 64 KiB of drained input, or after 2 s.
"""

import contextlib
import selectors
import socket
import time
from collections import deque
from functools import partial

from gunicorn import util
from gunicorn.workers.gthread import ThreadWorker

LINGER_S = 2.0
MAX_DRAIN = 65536


class Worker(ThreadWorker):
    """gthread, lingering on closed connections without blocking the main loop."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.lingering = deque()

    def finish_request(self, conn, fs):
        """As gthread's, except that a connection it would close gracefully lingers on the poller."""
        try:
            closing = not fs.cancelled() and fs.result() is False
        except Exception:
            closing = False  # gthread's own path closes it at once
        if not closing:
            super().finish_request(conn, fs)
            return
        try:
            conn.sock.shutdown(socket.SHUT_WR)
            conn.sock.setblocking(False)
            self.poller.register(conn.sock, selectors.EVENT_READ, partial(self._drain, conn))
        except (OSError, ValueError):
            self._closed(conn, registered=False)
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
            self._closed(conn)

    def _closed(self, conn, registered=True):
        """Close a lingering connection for good."""
        if registered:
            with contextlib.suppress(KeyError, ValueError, OSError):
                self.poller.unregister(conn.sock)
        conn.linger_until = None
        self.nr_conns -= 1
        util.close(conn.sock)

    def murder_keepalived(self, force=False):
        """gthread's expiry of kept-alive connections, and of lingering ones past their 2 s."""
        super().murder_keepalived(force)
        now = time.monotonic()
        while self.lingering:
            conn = self.lingering[0]
            if conn.linger_until is not None and conn.linger_until > now and not force:
                break
            self.lingering.popleft()
            if conn.linger_until is not None:
                self._closed(conn)
