"""What runs on a gthread_worker thread: a connection whose request the poller has already read (the
thread parses it from memory and only writes to the socket), and the daemon threads themselves."""

import queue
import threading
from concurrent.futures import Future

from gunicorn import http
from gunicorn.http.errors import NoMoreData
from gunicorn.http.unreader import Unreader
from gunicorn.workers.gthread import TConn

from server.request_buffer import RequestBuffer

# A thread writing an answer the client does not read gives up after this long.
SEND_TIMEOUT_S = 10.0


class Gathered(Unreader):
    """A request the poller has read: the thread parses it from here and never reads the socket."""

    def chunk(self, size_hint=None):
        raise NoMoreData()


class Connection(TConn):
    """gthread's connection, with the request the poller gathers for it and where it waits."""

    def __init__(self, cfg, sock, client, server, max_body: int):
        super().__init__(cfg, sock, client, server)
        self.parser = http.get_parser(cfg, sock, client)
        self.parser.unreader = Gathered()
        self.data_ready = True  # gthread's handle() must not wait for bytes: they are here
        self.request = RequestBuffer(max_body)
        self.max_body = max_body
        self.deadline = None  # while the poller gathers a request
        self.idle = False  # kept alive, between requests
        self.linger_until = None  # half-closed, until the client closes too
        self.body_unread = False

    def init(self):
        """As gthread's (which runs before each request), with a bound on each write of the answer."""
        super().init()
        self.sock.settimeout(SEND_TIMEOUT_S)


class DaemonThreads:
    """The worker's request threads. gthread's ThreadPoolExecutor ends with `shutdown(wait=False)`, yet
    since Python 3.9 concurrent.futures joins its threads at exit all the same, without a timeout, so
    a stopped worker with a blocked thread never exited. The interpreter does not wait for these."""

    def __init__(self, count: int):
        self.jobs = queue.SimpleQueue()
        self.threads = [threading.Thread(target=self._work, name=f"request-{n}", daemon=True) for n in range(count)]
        for thread in self.threads:
            thread.start()

    def submit(self, function, *args) -> Future:
        """Run `function(*args)` on a free thread; the future holds its result."""
        future = Future()
        self.jobs.put((future, function, args))
        return future

    def shutdown(self, wait=True, cancel_futures=False):
        """Let each thread end once the jobs queued before have run."""
        for _ in self.threads:
            self.jobs.put(None)

    def _work(self):
        while (job := self.jobs.get()) is not None:
            future, function, args = job
            if future.set_running_or_notify_cancel():
                try:
                    future.set_result(function(*args))
                except BaseException as error:
                    future.set_exception(error)
