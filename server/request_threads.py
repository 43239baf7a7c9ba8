"""What runs on a gthread_worker thread and how work goes to and from it: a connection whose request the
poller has already read (the thread parses it from memory and only writes to the socket), the daemon
threads themselves, and the queue that hands a finished connection back to the poller."""

import contextlib
import os
import queue
import threading

from gunicorn import http
from gunicorn.http.errors import NoMoreData
from gunicorn.http.unreader import Unreader
from gunicorn.workers.gthread import PollableMethodQueue, TConn

from server.request_buffer import RequestBuffer

# A thread writing an answer the client does not read gives up after this long.
SEND_TIMEOUT_S = 10.0


class Gathered(Unreader):
    """A request the poller has read: gunicorn's parser reads it from here and never reads the socket."""

    def chunk(self, size_hint=None):
        raise NoMoreData()


class Connection(TConn):
    """gthread's connection, with the request the poller gathers for it and where it waits."""

    def __init__(self, cfg, sock, client, server, max_body: int):
        super().__init__(cfg, sock, client, server)
        self.data_ready = True  # gthread's handle() must not wait for bytes: they are here
        self.request = RequestBuffer(max_body)  # what the poller is gathering
        self.gathered = None  # a whole request, for a thread
        self.pipelined = b""  # what the client sent after it, back from the thread
        self.environ = None  # the environ keys this connection's requests share (serving.py)
        self.trusted = False  # whether the client may set forwarded headers
        self.max_body = max_body
        self.deadline = None  # while the poller gathers a request
        self.idle = False  # kept alive, between requests
        self.linger_until = None  # half-closed, until the client closes too
        self.body_unread = False

    def use_gunicorn_parser(self):
        """Give gunicorn's parser the gathered request, for gthread's handle() to read."""
        self.parser = http.get_parser(self.cfg, self.sock, self.client)
        self.parser.unreader = Gathered()
        self.parser.unreader.unread(bytes(self.gathered.data))

    def init(self):
        """As gthread's (which runs before each request), with a bound on each write of the answer."""
        super().init()
        self.sock.settimeout(SEND_TIMEOUT_S)


class DaemonThreads:
    """The worker's request threads. gthread's ThreadPoolExecutor ends with `shutdown(wait=False)`, yet
    since Python 3.9 concurrent.futures joins its threads at exit all the same, without a timeout, so
    a stopped worker with a blocked thread never exited. The interpreter does not wait for these. No
    futures either: a job hands its own result back (serving.py's run_request)."""

    def __init__(self, count: int):
        self.jobs = queue.SimpleQueue()
        self.threads = [threading.Thread(target=self._work, name=f"request-{n}", daemon=True) for n in range(count)]
        for thread in self.threads:
            thread.start()

    def submit(self, function, *args):
        """Run `function(*args)` on a free thread."""
        self.jobs.put((function, args))

    def shutdown(self, wait=True, cancel_futures=False):
        """Let each thread end once the jobs queued before have run."""
        for _ in self.threads:
            self.jobs.put(None)

    def _work(self):
        while (job := self.jobs.get()) is not None:
            function, args = job
            function(*args)


class Wakeups(PollableMethodQueue):
    """gthread's queue of callbacks for the poller thread, woken by a byte on a pipe, without a partial
    per callback nor an exception to find the queue empty."""

    def defer(self, callback, *args):
        self._queue.put((callback, args))
        # A full pipe drops the byte: the poller runs this callback with the ones already signalled.
        with contextlib.suppress(OSError):
            os.write(self._write_fd, b"\0")

    def run_callbacks(self, _fileobj, max_callbacks=50):
        try:
            signalled = len(os.read(self._read_fd, max_callbacks))
        except OSError:
            return
        callbacks = self._queue
        for _ in range(signalled + 10):  # as gthread's: ten more, for wake-ups a full pipe dropped
            if callbacks.empty():
                return
            callback, args = callbacks.get_nowait()
            callback(*args)
