"""Headers every response carries, and `Cache-Control: no-store` on everything private."""

from urllib.parse import urlsplit

from flask import Flask, request

PRIVATE_PREFIXES = ("/auth/", "/api/v1/")


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

    def add_security_headers(response):
        headers = response.headers
        headers.extend(fixed)  # no view sets these, so appending is safe and skips four lookups
        if "Cache-Control" not in headers and request.path.startswith(PRIVATE_PREFIXES):
            headers["Cache-Control"] = "no-store"
        return response

    app.after_request(add_security_headers)
