"""One parse of a request the poller has read whole, for the requests gunicorn's parser reads plainly.

gunicorn's parser (gunicorn.http.message) costs 300-440k instructions a request, most of it in config
lookups and two regular expressions per header. Here the head is decoded and split once, checked for
control bytes by one bytes.translate, and each header name is looked up among the names the worker
has already checked (with its environ key). The rules are gunicorn's, the settings read once per
worker (Rules) and the peer's trust once per connection. What this parse would have to judge for
itself (an unusual request line, a name gunicorn refuses, a folded line, a repeated singleton,
Expect, Transfer-Encoding, a request over a limit) it declines: `parse` returns None and gunicorn's
own parser reads the request, refusals included. tests/unit/test_lean_request.py holds the agreement.
"""

import io
import ipaddress
import re

from gunicorn.http.message import DEFAULT_MAX_HEADERFIELD_SIZE, MAX_HEADERS, MAX_REQUEST_LINE, TOKEN_RE

# An uppercase method (gunicorn refuses lowercase and '#', and wants 3 to 20 characters), an
# origin-form target of printable ASCII with no fragment, HTTP/1.0 or 1.1.
REQUEST_LINE = re.compile(r"([A-Z]{3,20}) (/(?!/)[\x21\x22\x24-\x7e]*) HTTP/1\.([01])")
DECLINED = frozenset(("EXPECT", "TRANSFER-ENCODING"))
SINGLETONS = frozenset(("HOST", "CONTENT-TYPE", "CONTENT-LENGTH"))
READ = SINGLETONS | DECLINED | {"CONNECTION", "SCRIPT_NAME"}
# What a head may hold besides CRLFs: HTAB, SP, visible ASCII and obs-text (RFC 9110 section 5.5).
VISIBLE = bytes([9, *range(0x20, 0x7F), *range(0x80, 0x100)])
NAMES_KEPT = 512


class Rules:
    """The gunicorn settings a parse applies, read once: limits as gunicorn's Message normalises them,
    forwarded-header trust, and what becomes of a header name with an underscore."""

    def __init__(self, cfg):
        fields = cfg.limit_request_fields
        self.max_fields = MAX_HEADERS if fields <= 0 or fields > MAX_HEADERS else fields
        self.max_field = (
            cfg.limit_request_field_size if cfg.limit_request_field_size > 0 else DEFAULT_MAX_HEADERFIELD_SIZE
        )
        line = cfg.limit_request_line
        self.max_line = MAX_REQUEST_LINE if line < 0 or line >= MAX_REQUEST_LINE else (line or 1024 * 1024)
        self.allow_ips = cfg.forwarded_allow_ips
        self.allow_networks = cfg.forwarded_allow_networks()
        self.secure_scheme_headers = cfg.secure_scheme_headers
        self.forwarders = cfg.forwarder_headers
        self.map_underscored = cfg.header_map  # "drop" drops, "dangerous" keeps, "refuse" refuses
        self.scheme = "https" if cfg.is_ssl else "http"
        # A header name as sent -> (NAME, its environ key, whether the parse reads it), once checked.
        self.names = {}
        # What gunicorn's parser would otherwise treat differently: those settings send every request to it.
        self.usable = not (
            cfg.permit_unconventional_http_method
            or cfg.permit_unconventional_http_version
            or cfg.strip_header_spaces
            or cfg.proxy_protocol != "off"
        )

    def trusts(self, peer) -> bool:
        """Whether `peer` may set the secure-scheme and forwarder headers (gunicorn's HeaderPolicy)."""
        if not isinstance(peer, tuple) or "*" in self.allow_ips:
            return True
        try:
            address = ipaddress.ip_address(peer[0])
        except ValueError:
            return False
        return any(address in network for network in self.allow_networks)

    def learn(self, name: str) -> tuple | None:
        """(NAME, environ key, whether the parse reads it) for a header name that is a token, else None."""
        if not TOKEN_RE.fullmatch(name):
            return None
        upper = name.upper()
        key = {"CONTENT-TYPE": "CONTENT_TYPE", "CONTENT-LENGTH": "CONTENT_LENGTH"}.get(upper)
        read = upper in READ or upper in self.secure_scheme_headers or "_" in upper
        known = (upper, key or "HTTP_" + upper.replace("-", "_"), read)
        if len(self.names) >= NAMES_KEPT:
            self.names.clear()
        self.names[name] = known
        return known


class Request:
    """A request as the thread serves it: what gunicorn's Request offers the worker and its error
    answer (method, uri, path, query, version, body, scheme), its headers as environ keys (repeats
    joined by "," as gunicorn's create() joins them), and the bytes after it."""

    proxy_protocol_info = None

    def __init__(self, method, uri, version, fields, body, scheme, connection):
        self.method, self.uri, self.version, self.fields = method, uri, version, fields
        self.path, _, self.query = uri.partition("?")
        self.body, self.scheme = body, scheme
        self.connection = connection  # the first Connection field's value, lowercased, or None
        self.must_close = False
        self.rest = b""

    def force_close(self):
        self.must_close = True

    def should_close(self) -> bool:
        """gunicorn's rule: Connection: close or keep-alive decides, else HTTP/1.0 closes."""
        if self.must_close or self.connection == "close":
            return True
        return self.connection != "keep-alive" and self.version == (1, 0)


def parse(data, body_start: int, body_length: int, rules: Rules, trusted: bool) -> Request | None:
    """The request in `data` (its head ends at `body_start`, its Content-Length body follows), or None
    where gunicorn's parser must judge it."""
    head = data[: body_start - 4]
    lines = head.decode("latin-1").split("\r\n")
    match = REQUEST_LINE.fullmatch(lines[0])
    if match is None or len(lines[0]) > rules.max_line or len(lines) > rules.max_fields + 1:
        return None
    if head.translate(None, VISIBLE) != b"\r\n" * (len(lines) - 1):  # a control byte, a bare CR or LF
        return None
    method, uri, minor = match.groups()
    fields, seen, scheme, scheme_set, connection, length = {}, set(), rules.scheme, False, None, 0
    names, max_field = rules.names, rules.max_field
    for line in lines[1:]:
        name, colon, value = line.partition(":")
        known = names.get(name) or rules.learn(name)
        if known is None or not colon or len(line) + 2 > max_field:
            return None
        upper, key, read = known
        value = value.strip(" \t")
        if read:
            if upper in DECLINED or upper in seen:
                return None
            if upper in SINGLETONS:
                seen.add(upper)
            if trusted and upper in rules.secure_scheme_headers:
                if scheme_set:  # gunicorn refuses schemes that disagree; let it judge any second one
                    return None
                scheme_set = True
                scheme = "https" if value == rules.secure_scheme_headers[upper] else "http"
            if "_" in upper and not (trusted and (upper in rules.forwarders or "*" in rules.forwarders)):
                if rules.map_underscored == "drop":
                    continue
                if rules.map_underscored != "dangerous":
                    return None
            if upper == "SCRIPT_NAME":  # kept, it would move the app: gunicorn's create() applies it
                return None
            if upper == "CONTENT-LENGTH":
                if not (value.isascii() and value.isdigit()):
                    return None
                length = int(value)
            elif upper == "CONNECTION" and connection is None:
                connection = value.lower()
        fields[key] = fields[key] + "," + value if key in fields else value
    if length != body_length or method == "CONNECT":
        return None
    body_end = body_start + body_length
    request = Request(method, uri, (1, int(minor)), fields, io.BytesIO(data[body_start:body_end]), scheme, connection)
    request.rest = bytes(data[body_end:])
    return request
