"""Headers every response carries, `Cache-Control: no-store` on everything private, and the header
that cookie-authenticated calls must send."""

from collections.abc import Mapping
from urllib.parse import urlsplit

from flask import Flask, request

from .challenges import Forbidden
from .prefixes import API_PREFIX, AUTH_PREFIX

PRIVATE_PREFIXES = (f"{AUTH_PREFIX}/", f"{API_PREFIX}/")
HSTS = "max-age=63072000; includeSubDomains"
# Cookie-authenticated calls that read or change state must carry this header with the value 1:
# a cross-site page cannot set it without a CORS preflight, which this app never grants.
CSRF_HEADER = "X-CSRF"
COOKIE_GATE = f"cookie-authenticated calls need the header {CSRF_HEADER}: 1"


def sent_csrf_header(headers: Mapping[str, str]) -> bool:
    """Whether a request's headers carry `X-CSRF: 1`, the proof that a same-origin script sent it."""
    return headers.get(CSRF_HEADER) == "1"


def require_csrf_header(headers: Mapping[str, str]) -> None:
    """The one gate for cookie-authenticated calls: 403 forbidden without `X-CSRF: 1`."""
    if not sent_csrf_header(headers):
        raise Forbidden(COOKIE_GATE)


def _content_security_policy(issuer: str) -> str:
    issuer_origin = "{0.scheme}://{0.netloc}".format(urlsplit(issuer))
    # The sign-out form's 303 leads to the provider, and form-action also governs that redirect.
    return (
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        f"connect-src 'self'; form-action 'self' {issuer_origin}; frame-ancestors 'none'; "
        "base-uri 'none'; object-src 'none'"
    )


def register_security_headers(app: Flask) -> None:
    """Every response gets the headers below; they are computed once, not per request."""
    fixed = [
        ("Content-Security-Policy", _content_security_policy(app.config["OIDC_ISSUER_URL"])),
        ("X-Content-Type-Options", "nosniff"),
        ("Referrer-Policy", "no-referrer"),
        ("X-Frame-Options", "DENY"),
    ]
    if app.config["SESSION_COOKIE_SECURE"]:  # served over HTTPS only, so browsers may insist on it
        fixed.append(("Strict-Transport-Security", HSTS))

    def no_store_on_private(response):
        headers = response.headers
        if "Cache-Control" not in headers and request.path.startswith(PRIVATE_PREFIXES):
            headers["Cache-Control"] = "no-store"
        return response

    app.after_request(no_store_on_private)
    app.wsgi_app = FixedHeaders(app.wsgi_app, fixed)


class FixedHeaders:
    """A WSGI app whose every response also carries `fixed`, appended to the header list as it is sent.

    No view sets these, so appending is safe; werkzeug's Headers.extend validated every value again on
    every response (about 60,000 instructions, 6 % of a public profile request), a list append does not.
    """

    def __init__(self, wsgi_app, fixed: list[tuple[str, str]]):
        self.wsgi_app = wsgi_app
        self._fixed = list(fixed)

    def __call__(self, environ, start_response):
        fixed = self._fixed

        def start_with_fixed(status, headers, exc_info=None):
            headers.extend(fixed)
            return start_response(status, headers) if exc_info is None else start_response(status, headers, exc_info)

        return self.wsgi_app(environ, start_with_fixed)
