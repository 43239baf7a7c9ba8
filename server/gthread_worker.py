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
- **A closing connection lingers on the poller** (closing.py, with the deadlines' expiry).
- **A thread serves a plain request without gunicorn's parser** (serving.py): one lean parse, an
  environ copied from the connection's, and the answer in one sendall.
"""

import errno
import selectors
import time
from collections import deque
from functools import partial

from gunicorn.workers.gthread import STOP_KEEPALIVE_LINGER, ThreadWorker

from server.closing import Closing
from server.request_buffer import Outcome, RequestBuffer
from server.request_threads import SEND_TIMEOUT_S, Connection, DaemonThreads, Wakeups
from server.serving import Serving

READ_SIZE = 65536
DEFAULT_MAX_BODY = 65536  # when the app names no MAX_CONTENT_LENGTH
CONTINUE = b"HTTP/1.1 100 Continue\r\n\r\n"


def with_deadlines(*, header_timeout: float, body_timeout: float) -> type:
    """This worker with these request deadlines (seconds), as gunicorn.conf.py configures it."""
    return type("Worker", (Worker,), {"header_timeout": header_timeout, "body_timeout": body_timeout})


class Worker(Serving, Closing, ThreadWorker):
    """gthread, reading requests on its poller, lingering on closed connections there, and stoppable."""

    header_timeout = 10.0
    body_timeout = 10.0

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.method_queue = Wakeups()
        self.lingering = deque()
        # (deadline, connection) in deadline order, one queue per timeout; stale entries are skipped.
        self.heads, self.bodies = deque(), deque()
        self.heads_capped = False
        self.max_body = DEFAULT_MAX_BODY
        self.next_notify = self.next_expiry = 0.0  # see closing.py's housekeeping

    @classmethod
    def check_config(cls, cfg, log):
        """gthread's checks, and refuse what this worker does not read on its poller: TLS, HTTP/2, PROXY."""
        super().check_config(cfg, log)
        if cfg.is_ssl or cfg.http2_cleartext != "off" or cfg.proxy_protocol != "off" or cfg.protocol != "http":
            raise RuntimeError("gthread_worker serves plain HTTP/1.1: terminate TLS and HTTP/2 in front of it")

    def get_thread_pool(self):
        return DaemonThreads(self.cfg.threads)

    def run(self):
        self.max_body = getattr(self.wsgi, "config", {}).get("MAX_CONTENT_LENGTH") or DEFAULT_MAX_BODY
        self.init_serving()
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
            conn.gathered, conn.request = conn.request, None
            self.enqueue_req(conn)
        else:
            self._refuse(conn, outcome.value)

    def enqueue_req(self, conn):
        """Give the connection's request to a thread (serving.py's run_request hands it back)."""
        self.tpool.submit(self.run_request, conn)

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

    def finish_request(self, conn, keep: bool):
        """Back from a thread: wait on the poller for the next request, or close lingering."""
        if not keep:
            self._linger(conn)
            return
        conn.sock.setblocking(False)
        conn.request, conn.gathered, conn.body_unread = RequestBuffer(conn.max_body), None, False
        self.poller.register(conn.sock, selectors.EVENT_READ, partial(self._readable, conn))
        pipelined, conn.pipelined = conn.pipelined, b""
        if pipelined:
            self._gather(conn, pipelined)
            return
        conn.idle = True
        conn.timeout = time.monotonic() + self.keepalive_s
        if not self.alive:
            conn.timeout = min(conn.timeout, time.monotonic() + STOP_KEEPALIVE_LINGER)
        self.keepalived_conns.append(conn)
