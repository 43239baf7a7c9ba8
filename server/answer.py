"""gunicorn's Response, leaner where the app's answer is plain, and written with one sendall when the
body comes in one piece.

- **Headers checked in one pass.** gunicorn checks each header with two regular expressions and a
  dozen Python steps (about 80k instructions for Flask's dozen headers); here they are joined into the
  block that goes on the wire and matched once. A block with anything to judge (a hop-by-hop field,
  two Content-Lengths, a value with blanks around it or a character gunicorn refuses, a 1xx or 204
  status) goes through gunicorn's own start_response instead, errors included.
- **Status line, headers and the first body piece leave together**; what follows goes as gunicorn sends
  it (chunked when the app streams without a Content-Length). Nothing is held back past a write().
"""

import time

from gunicorn.http.message import TOKEN_RE
from gunicorn.http.wsgi import HEADER_VALUE_RE, STATUS_RE, Response, _make_early_hints_callback
from gunicorn.util import hop_headers, http_date

# The line gunicorn sends for a header (name, value) it has checked and sends as it is; emptied when
# it holds LINES_KEPT (a request id or a length differs every time, the app's other headers do not).
_lines = {}
LINES_KEPT = 512
# Lines whose value is one answer's own: a session cookie or a redirect carrying a sign-in's state is
# never kept in memory past its answer (and would only churn the cache).
NOT_KEPT = frozenset(("set-cookie", "location"))
_date = (0, "")


def date() -> str:
    """The Date header's value, formatted once a second."""
    global _date
    now = int(time.time())
    if _date[0] != now:
        _date = (now, http_date(now))
    return _date[1]


class Answer(Response):
    """gunicorn's Response with a one-pass header check and a head sent with the first body bytes."""

    block = None  # the header lines as sent, when start_response checked them in one pass
    pending = b""  # the head, until the first body bytes go with it

    def start_response(self, status, headers, exc_info=None):
        """gunicorn's start_response, with headers it has seen before checked by a lookup."""
        plain = exc_info is None and self.status is None and type(status) is str and type(headers) is list
        if plain and STATUS_RE.fullmatch(status) and (code := int(status[:3])) >= 200 and code != 204:
            try:
                checked = plain_block(headers)
            except ValueError:  # not (name, value) pairs: gunicorn's own check says so
                checked = None
            if checked is not None:
                self.status, self.status_code = status, code
                self.block, self.response_length = checked
                self._omits_body = self._response_omits_body(self.req.method, code)
                self.chunked = self.is_chunked()
                return self.write
        return super().start_response(status, headers, exc_info)

    def is_chunked(self):
        """gunicorn's rule, without its lookup of the protocol setting (check_config refuses uwsgi)."""
        return self.response_length is None and self.req.version > (1, 0) and not self._omits_body

    def send_headers(self):
        """Make the head (gunicorn's status line, Server, Date, Connection, framing, the app's headers);
        it leaves with the body's first bytes, or at the end of write() or close()."""
        if self.headers_sent:
            return
        connection = "upgrade" if self.upgrade else "close" if self.should_close() else "keep-alive"
        block = self.block
        if block is None:
            block = "".join([f"{name}: {value}\r\n" for name, value in self.headers])
        if self.chunked:
            block = "Transfer-Encoding: chunked\r\n" + block
        major, minor = self.req.version
        self.pending = (
            f"HTTP/{major}.{minor} {self.status}\r\nServer: {self.version}\r\nDate: {date()}\r\n"
            f"Connection: {connection}\r\n{block}\r\n"
        ).encode("latin-1")
        self.headers_sent = True

    def write(self, arg):
        """gunicorn's write; a head not sent with body bytes (none to send) goes now."""
        try:
            super().write(arg)
        finally:
            if self.pending:
                self._send(b"")

    def _emit_body(self, data):
        self._send(b"%X\r\n%s\r\n" % (len(data), data) if self.chunked else data)

    def _send(self, data: bytes):
        """Send `data` after the head if it is still pending."""
        if self.pending:
            data, self.pending = self.pending + data, b""
        if data:
            self.sock.sendall(data)

    def can_sendfile(self):
        return False  # a file body is written by write(), after the head

    def close(self):
        """gunicorn's close: the head if nothing sent it, and the last chunk of a chunked body."""
        self.send_headers()
        self._send(b"0\r\n\r\n" if self.chunked else b"")

    def early_hints(self, headers):
        """wsgi.early_hints, as gunicorn's: 103 Early Hints before the answer, to HTTP/1.1 clients."""
        _make_early_hints_callback(self.req, self.sock, self)(headers)


def plain_block(headers) -> tuple[str, int | None] | None:
    """The header lines as gunicorn sends them, and the Content-Length, where gunicorn would send every
    header as it is; None where it must judge one (a hop-by-hop field, a second Content-Length, a name
    or value it refuses), as the app's start_response then does through gunicorn's own."""
    lines, length, known = [], None, _lines
    for name, value in headers:
        if type(name) is not str or type(value) is not str:
            return None
        line = known.get((name, value))
        if line is None:
            if not (TOKEN_RE.fullmatch(name) and HEADER_VALUE_RE.fullmatch(value)):
                return None
            stripped = value.strip(" \t")
            line = f"{name}: {stripped}\r\n"
            lowered = name.lower()
            if lowered == "content-length":
                if length is not None or not (stripped.isascii() and stripped.isdigit()):
                    return None
                length = int(stripped)
            elif lowered in hop_headers:
                return None
            elif lowered not in NOT_KEPT:
                if len(known) >= LINES_KEPT:
                    known.clear()
                known[(name, value)] = line
        lines.append(line)
    return "".join(lines), length
