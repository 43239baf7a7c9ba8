"""Whether the bytes a connection has sent hold a whole HTTP/1.1 request, its framing read as gunicorn's
parser reads it, so that gthread_worker.py gives a request to a thread only once it has all arrived."""

import re
from enum import Enum

from gunicorn.http.body import CHUNK_EXT_RE

# Far above any real request head (gunicorn's default limits: a 4094-byte request line, 100 fields of
# 8190 bytes), far below what a thousand waiting connections could make a worker hold.
MAX_HEAD = 65536
# gunicorn's limit on a chunk-size line (its default limit_request_field_size).
MAX_CHUNK_LINE = 8190
HEAD_END = b"\r\n\r\n"
FRAMING_FIELD = re.compile(rb"\r\n(content-length|transfer-encoding|expect):([^\r\n]*)", re.IGNORECASE)
HEX = re.compile(rb"[0-9a-fA-F]+")


class Outcome(Enum):
    """What to do with a connection once its request is whole, or can never be served."""

    SERVE = "serve"  # the whole request is here
    SERVE_HEAD = "serve the head"  # a body the app refuses unread, or framing gunicorn refuses: close after
    MALFORMED = 400  # a chunked body whose framing is broken
    TOO_LARGE = 413  # a chunked body over the limit
    HEAD_TOO_LARGE = 431


class RequestBuffer:
    """One request's bytes as they arrive (and any that follow it), with its framing once the head is in."""

    def __init__(self, max_body: int):
        self.data = bytearray()
        self.max_body = max_body
        self.body_start = None  # just past the blank line that ends the head, once it has arrived
        self.body_length = 0  # of a Content-Length body
        self.chunks = None  # a ChunkScanner, for a chunked body
        self.expects_continue = False

    @property
    def has_head(self) -> bool:
        return self.body_start is not None

    def feed(self, data: bytes) -> Outcome | None:
        """Take the next bytes; the outcome once the request is whole (or never can be), else None."""
        searched = max(0, len(self.data) - len(HEAD_END) + 1)
        self.data += data
        if self.body_start is None:
            end = self.data.find(HEAD_END, searched)
            if end < 0:
                return Outcome.HEAD_TOO_LARGE if len(self.data) > MAX_HEAD else None
            self.body_start = end + len(HEAD_END)
            refused = self._read_framing(end + 2)
            if refused:
                return refused
        if self.chunks is not None:
            return self.chunks.scan(self.data)
        return Outcome.SERVE if len(self.data) - self.body_start >= self.body_length else None

    def _read_framing(self, head_end: int) -> Outcome | None:
        """Learn how the body is framed from the head (the first `head_end` bytes), as gunicorn's
        Message.set_body_reader does; SERVE_HEAD for a body gunicorn or the app refuses without reading
        it (they answer; the connection then closes)."""
        lengths, codings = [], []
        for name, value in FRAMING_FIELD.findall(self.data, 0, head_end):
            name, value = name.lower(), bytes(value.strip(b" \t"))
            if name == b"content-length":
                lengths.append(value)
            elif name == b"transfer-encoding":
                codings += [coding.strip(b" \t").lower() for coding in value.split(b",")]
            else:
                # gunicorn ignores the expectation in an HTTP/1.0 request (RFC 9110 section 10.1.1).
                request_line = self.data.lstrip(b"\r\n").split(b"\r\n", 1)[0]
                self.expects_continue = value.lower() == b"100-continue" and request_line.endswith(b" HTTP/1.1")
        if codings:
            if codings[-1] != b"chunked" or lengths:
                return Outcome.SERVE_HEAD
            self.chunks = ChunkScanner(self.body_start, self.max_body)
        elif lengths:
            if len(lengths) > 1 or not lengths[0].isdigit() or int(lengths[0]) > self.max_body:
                return Outcome.SERVE_HEAD
            self.body_length = int(lengths[0])
        return None


class ChunkScanner:
    """Follows a chunked body (RFC 9112 section 7.1) to its end, across feeds, without decoding it."""

    def __init__(self, start: int, max_body: int):
        self.start = start
        self.position = start  # where the next size or trailer line begins
        self.chunk_end = None  # where the CRLF after the current chunk's data is due
        self.in_trailers = False
        self.decoded = 0
        self.max_body = max_body

    def scan(self, data: bytearray) -> Outcome | None:
        """The body's outcome once it has ended (or broken, or grown too large), else None."""
        # Framing and trailers may add to the data, but not without bound.
        if len(data) - self.start > self.max_body + MAX_HEAD:
            return Outcome.TOO_LARGE
        while True:
            if self.chunk_end is not None:
                if len(data) < self.chunk_end + 2:
                    return None
                if data[self.chunk_end : self.chunk_end + 2] != b"\r\n":
                    return Outcome.MALFORMED
                self.position, self.chunk_end = self.chunk_end + 2, None
            end = data.find(b"\r\n", self.position)
            if end < 0:
                return Outcome.MALFORMED if len(data) - self.position > MAX_CHUNK_LINE else None
            line, self.position = bytes(data[self.position : end]), end + 2
            if self.in_trailers:
                if not line:
                    return Outcome.SERVE
                continue
            size = chunk_size(line)
            if size is None:
                return Outcome.MALFORMED
            self.decoded += size
            if self.decoded > self.max_body:
                return Outcome.TOO_LARGE
            self.in_trailers = size == 0
            if size:
                self.chunk_end = self.position + size


def chunk_size(line: bytes) -> int | None:
    """The size a chunk-size line gives, None where gunicorn's ChunkedReader would refuse the line."""
    size, *extension = line.split(b";", 1)
    if extension:
        if b"\r" in extension[0] or not CHUNK_EXT_RE.fullmatch(b";" + extension[0]):
            return None
        size = size.rstrip(b" \t")
    return int(size, 16) if HEX.fullmatch(size) else None
