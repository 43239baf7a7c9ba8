"""What gthread_worker.py's request threads do with a request the poller has read whole.

A plain request (lean_request.py says which) is parsed once, gets its environ from a per-connection
copy (lean_environ.py) and its answer from answer.py: the same bytes on the wire as gunicorn's
parser, wsgi.create and Response give, at about a third of their instructions. Anything else goes
through gunicorn's own path (gthread's handle and handle_request, the parser reading from memory),
refusals included. So does every request when a setting the lean path does not apply is on: an
access log, a pre_request or post_request hook, a gunicorn option that changes parsing.
"""

import errno

from server.answer import Answer
from server.lean_environ import connection_environ, environ, worker_environ
from server.lean_request import Rules, parse
from server.request_threads import SEND_TIMEOUT_S

HOOKS = ("pre_request", "post_request")


class Serving:
    """The request threads' side of the worker (a mixin before gunicorn's ThreadWorker)."""

    lean = False

    def init_serving(self):
        """Read once, after the fork, the settings every request would otherwise look up."""
        cfg = self.cfg
        self.rules = Rules(cfg)
        self.shared_environ = worker_environ(cfg)
        self.keepalive_s = cfg.keepalive
        default_hooks = all(cfg.settings[name].value is cfg.settings[name].default for name in HOOKS)
        self.lean = self.rules.usable and default_hooks and not self.log.access_log_enabled

    def run_request(self, conn):
        """A thread's job: serve the connection's request, then hand the connection back to the poller."""
        try:
            keep = self.handle(conn)
        except BaseException:  # handle() answers every error it can; nothing may end this thread
            self.log.exception("Error serving a request")
            keep = False
        self.method_queue.defer(self.finish_request, conn, keep is True)

    def handle(self, conn):
        """Serve the gathered request; whether the connection stays open for the next one."""
        request = self._parse(conn) if self.lean and not conn.body_unread else None
        if request is None:
            conn.use_gunicorn_parser()
            keep = super().handle(conn)
            conn.pipelined = conn.parser.unreader.take_buffered() if keep is True else b""
            return keep
        conn.pipelined = request.rest
        return self._serve(request, conn)

    def _parse(self, conn):
        """The lean parse of the connection's request, None where gunicorn's path must serve it."""
        if conn.environ is None:
            conn.environ = connection_environ(self.shared_environ, conn.sock, conn.client, conn.server) or False
            conn.trusted = self.rules.trusts(conn.client)
        gathered = conn.gathered
        if not conn.environ or gathered.chunks is not None:
            return None
        request = parse(gathered.data, gathered.body_start, gathered.body_length, self.rules, conn.trusted)
        if request is None or not request.path.startswith(conn.environ["SCRIPT_NAME"]):
            return None
        return request

    def _serve(self, request, conn) -> bool:
        """gthread's handle_request for a lean request, with gunicorn's answers to its errors."""
        sock = conn.sock
        sock.settimeout(SEND_TIMEOUT_S)
        answer = Answer(request, sock, self.cfg)
        self.nr += 1
        if self.nr >= self.max_requests:
            if self.alive:
                self.log.info("Autorestarting worker after current request.")
                self.alive = False
            answer.force_close()
        if not self.alive or not self.keepalive_s or len(self.keepalived_conns) >= self.max_keepalived:
            answer.force_close()
        try:
            self.log.debug("%s %s", request.method, request.path)  # gunicorn's default pre_request hook
            body = self.wsgi(environ(conn.environ, request, answer.early_hints), answer.start_response)
            try:
                for item in body:
                    answer.write(item)
                answer.close()
            finally:
                if hasattr(body, "close"):
                    body.close()
        except TimeoutError:
            self.log.info("Closing a connection whose client read no answer for %s s", SEND_TIMEOUT_S)
            return False
        except OSError as error:
            if error.errno in (errno.EPIPE, errno.ECONNRESET, errno.ENOTCONN):
                self.log.debug("Ignoring %s", errno.errorcode[error.errno])
            else:
                self.log.exception("Socket error processing request.")
            return False
        except (Exception, SystemExit) as error:
            if answer.headers_sent:
                self.log.exception("Error handling request")
            else:
                self.handle_error(request, sock, conn.client, error)
            return False
        return not answer.should_close()
