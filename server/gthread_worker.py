"""gunicorn's gthread worker, where slow clients cost no thread and a stop never waits on one (its
request threads are daemon threads, request_threads.py).

- **A request reaches a thread only once it has all arrived.** gunicorn 27 hands each new connection
  to a thread that waits up to 5 s for a first byte, then reads with no timeout: 24 silent connections
  delayed a request by 15 s, and 8 that stalled mid-headers or mid-body stopped the worker. Here the
  poller reads what a connection sends (request_buffer.py says when a request is whole) and a thread
  parses it from memory. The request line and headers must arrive within `header_timeout` (from the
  accept, or from the first byte of the next request on a kept-alive connection), the body within
  `body_timeout` after them; past either the client gets 408 (nothing if it sent nothing) and the
  connection closes.
- **A closing connection lingers on the poller**, not on gunicorn's main loop, where 30 clients keeping
  their sockets held new connections for 6 s (docs/performance.md, "Server choice"): it closes when
  the client closes too (RFC 9112 section 9.6), after 64 KiB drained, or after 2 s.
"""

import contextlib
import errno
import selectors
import socket
import time
from collections import deque
from functools import partial

from gunicorn import util
from gunicorn.workers.gthread import STOP_KEEPALIVE_LINGER, ThreadWorker

from server.request_buffer import Outcome, RequestBuffer
from server.request_threads import SEND_TIMEOUT_S, Connection, DaemonThreads

LINGER_S = 2.0
MAX_DRAIN = 65536
READ_SIZE = 65536
DEFAULT_MAX_BODY = 65536  # when the app names no MAX_CONTENT_LENGTH
CONTINUE = b"HTTP/1.1 100 Continue\r\n\r\n"
# The whole answer the poller sends when it refuses a request itself.
REASONS = {400: "Bad Request", 408: "Request Timeout", 413: "Content Too Large", 431: "Request Header Fields Too Large"}
REFUSALS = {
    status: f"HTTP/1.1 {status} {reason}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n".encode()
    for status, reason in REASONS.items()
}


def with_deadlines(*, header_timeout: float, body_timeout: float) -> type:
    """This worker with these request deadlines (seconds), as gunicorn.conf.py configures it."""
    return type("Worker", (Worker,), {"header_timeout": header_timeout, "body_timeout": body_timeout})


class Worker(ThreadWorker):
    """gthread, reading requests on its poller, lingering on closed connections there, and stoppable."""

    header_timeout = 10.0
    body_timeout = 10.0

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.lingering = deque()
        # (deadline, connection) in deadline order, one queue per timeout; stale entries are skipped.
        self.heads, self.bodies = deque(), deque()
        self.heads_capped = False
        self.max_body = DEFAULT_MAX_BODY

    @classmethod
    def check_config(cls, cfg, log):
        """gthread's checks, and refuse what this worker does not read on its poller: TLS, HTTP/2, PROXY."""
        super().check_config(cfg, log)
        if cfg.is_ssl or cfg.http2_cleartext != "off" or cfg.proxy_protocol != "off":
            raise RuntimeError("gthread_worker serves plain HTTP/1.1: terminate TLS and HTTP/2 in front of it")

    def get_thread_pool(self):
        return DaemonThreads(self.cfg.threads)

    def run(self):
        self.max_body = getattr(self.wsgi, "config", {}).get("MAX_CONTENT_LENGTH") or DEFAULT_MAX_BODY
        super().run()

    def accept(self, listener):
        """Take a new connection; its request must arrive within header_timeout from now."""
        try:
            sock, client = listener.accept()
        except OSError as error:
            if error.errno not in (errno.EAGAIN, errno.ECONNABORTED, errno.EWOULDBLOCK):
                raise
            return
        self.nr_conns += 1
        conn = Connection(self.cfg, sock, client, listener.getsockname(), self.max_body)
        self._wait(conn, self.heads, self.header_timeout)
        self.poller.register(conn.sock, selectors.EVENT_READ, partial(self._readable, conn))

    def _wait(self, conn, deadlines, timeout):
        """The connection waits on the poller until `timeout` from now."""
        conn.deadline = time.monotonic() + timeout
        deadlines.append((conn.deadline, conn))

    def _readable(self, conn, sock):
        """Read what the client sent; hand the request to a thread once it is whole."""
        try:
            data = sock.recv(READ_SIZE)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""
        if not data:
            self._close(conn)
            return
        if conn.idle:
            self.keepalived_conns.remove(conn)
            conn.idle = False
        self._gather(conn, data)

    def _gather(self, conn, data):
        """Add `data` to the request: to a thread once whole, refused, or awaited until its deadline."""
        had_head = conn.request.has_head
        outcome = conn.request.feed(data)
        if outcome is None:
            if conn.request.has_head and not had_head:
                self._wait(conn, self.bodies, self.body_timeout)
                if conn.request.expects_continue:
                    self._send(conn, CONTINUE)
            elif conn.deadline is None:  # the first bytes of the next request on a kept-alive connection
                self._wait(conn, self.heads, self.header_timeout)
            return
        self.poller.unregister(conn.sock)
        conn.deadline = None
        if outcome in (Outcome.SERVE, Outcome.SERVE_HEAD):
            conn.body_unread = outcome is Outcome.SERVE_HEAD
            conn.parser.unreader.unread(bytes(conn.request.data))
            conn.request = None
            self.enqueue_req(conn)
        else:
            self._refuse(conn, outcome.value)

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

    def handle_request(self, req, conn):
        """gthread's; closing the connection after a body left unread or an answer the client did not read."""
        req._expected_100_continue = False  # the poller said 100 Continue if the client waited for it
        if conn.body_unread:
            req.force_close()
        try:
            return super().handle_request(req, conn)
        except TimeoutError:
            self.log.info("Closing a connection whose client read no answer for %s s", SEND_TIMEOUT_S)
            return False

    def _keepalive_after(self, conn, keepalive):
        return False if conn.body_unread else super()._keepalive_after(conn, keepalive)

    def finish_request(self, conn, fs):
        """Back from a thread: wait on the poller for the next request, or close lingering."""
        try:
            keep = not fs.cancelled() and fs.result() is True
        except Exception:
            self._close(conn)
            return
        if not keep:
            self._linger(conn)
            return
        conn.sock.setblocking(False)
        conn.request = RequestBuffer(conn.max_body)
        conn.body_unread = False
        self.poller.register(conn.sock, selectors.EVENT_READ, partial(self._readable, conn))
        pipelined = conn.parser.unreader.take_buffered()
        if pipelined:
            self._gather(conn, pipelined)
            return
        conn.idle = True
        conn.set_timeout()
        if not self.alive:
            conn.timeout = min(conn.timeout, time.monotonic() + STOP_KEEPALIVE_LINGER)
        self.keepalived_conns.append(conn)

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

    def murder_keepalived(self, force=False):
        """gthread's expiry of kept-alive connections; then of lingering ones past their 2 s, and of
        requests past their deadline (a stop gives a request that has not begun 2 s more at most)."""
        super().murder_keepalived(force)
        now = time.monotonic()
        while self.lingering:
            conn = self.lingering[0]
            if conn.linger_until is not None and conn.linger_until > now and not force:
                break
            self.lingering.popleft()
            if conn.linger_until is not None:
                self._close(conn)
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
