"""Headers every response carries, and `Cache-Control: no-store` on everything private."""

from urllib.parse import urlsplit

from flask import Flask, current_app, request

PRIVATE_PREFIXES = ("/auth/", "/api/v1/")


def _content_security_policy(issuer: str) -> str:
    issuer_origin = "{0.scheme}://{0.netloc}".format(urlsplit(issuer))
    # The sign-out form's 303 leads to the provider, and form-action also governs that redirect.
    return (
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        f"connect-src 'self'; form-action 'self' {issuer_origin}; frame-ancestors 'none'; "
        "base-uri 'none'; object-src 'none'"
    )


def add_security_headers(response):
    headers = response.headers
    headers.setdefault("Content-Security-Policy", _content_security_policy(current_app.config["OIDC_ISSUER_URL"]))
    headers.setdefault("X-Content-Type-Options", "nosniff")
    headers.setdefault("Referrer-Policy", "no-referrer")
    headers.setdefault("X-Frame-Options", "DENY")
    if request.path.startswith(PRIVATE_PREFIXES) and "Cache-Control" not in headers:
        headers["Cache-Control"] = "no-store"
    return response


def register_security_headers(app: Flask) -> None:
    app.after_request(add_security_headers)
