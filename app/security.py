"""Headers every response carries, `Cache-Control: no-store` on everything private, and the header
that cookie-authenticated calls must send."""

from collections.abc import Mapping
from urllib.parse import urlsplit

from flask import Flask, request

from .errors import Forbidden
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

    def add_security_headers(response):
        headers = response.headers
        headers.extend(fixed)  # no view sets these, so appending is safe and skips four lookups
        if "Cache-Control" not in headers and request.path.startswith(PRIVATE_PREFIXES):
            headers["Cache-Control"] = "no-store"
        return response

    app.after_request(add_security_headers)
