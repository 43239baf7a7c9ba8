"""Flood clients as a botnet's would be, seen by the app through one trusted proxy hop: each request on a
new connection from a loopback address of the client's own (so the kernel never runs short of ports),
naming the client's real address in X-Forwarded-For; what the app answered, and why in its own words."""

import base64
import html
import http.client
import json
import re
import secrets
import time
from typing import NamedTuple
from urllib.parse import urlencode

import requests
from joserfc import jwt
from joserfc.jwk import ECKey

from app.addresses import client_networks


class Answer(NamedTuple):
    status: int
    message: str  # the refusal's reason as the app words it ("" for a success)
    headers: http.client.HTTPMessage


def source(index: int) -> tuple[str, int]:
    """The loopback address flood client `index` connects from."""
    return (f"127.0.{index // 250 + 1}.{index % 250 + 2}", 0)


def send(port: int, index: int, address: str, method: str, path: str, *, headers=None, form=None, json_body=None):
    """One request of flood client `index` (whose real address is `address`) to the app on `port`."""
    headers = {"X-Forwarded-For": address, **(headers or {})}
    body = None
    if form is not None:
        body, headers["Content-Type"] = urlencode(form), "application/x-www-form-urlencoded"
    if json_body is not None:
        body, headers["Content-Type"] = json.dumps(json_body), "application/json"
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60, source_address=source(index))
    try:
        connection.request(method, path, body=body, headers=headers)
        response = connection.getresponse()
        return Answer(response.status, _message(response.read().decode("utf-8", "replace")), response.headers)
    finally:
        connection.close()


def _message(text: str) -> str:
    """The reason a refusal gives: the API envelope's message, a logout refusal's description, or the
    sign-in error page's text."""
    try:
        body = json.loads(text)
    except ValueError:
        page = re.search(r'<p id="message">(.*?)</p>', text, re.S)
        return html.unescape(page.group(1)) if page else ""
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        return body["error"].get("message", "")
    return body.get("error_description", "") if isinstance(body, dict) else ""


def stranger_jwt(claims: dict | None = None) -> str:
    """An access token signed by a key no provider published, under a key id never seen: each one sends
    the app looking for that key (a JWKS fetch, which it rate-limits)."""
    key = ECKey.generate_key("P-256", private=True)
    now = int(time.time())
    payload = {"iss": "https://idp.invalid", "sub": "mallory", "aud": "profile-poke-api", "iat": now, "exp": now + 300}
    return jwt.encode({"alg": "ES256", "kid": secrets.token_hex(8)}, {**payload, **(claims or {})}, key)


def unsigned_jwt() -> str:
    """A token that says it needs no signature (`alg: none`)."""
    parts = [{"alg": "none", "typ": "JWT"}, {"sub": "mallory", "exp": int(time.time()) + 300}]
    return ".".join(base64.urlsafe_b64encode(json.dumps(part).encode()).rstrip(b"=").decode() for part in parts) + "."


def counted_under(addresses) -> set[str]:
    """Every key clients at `addresses` are counted under: each client and each of its networks."""
    return {key for address in addresses for key in client_networks(address)}


def widest_networks(addresses) -> set[str]:
    """The widest network of each of `addresses` (its IPv4 /24 or IPv6 /48)."""
    return {client_networks(address)[-1] for address in addresses}


def metric(url: str, token: str, name: str, **labels) -> float:
    """The value of one series of an app's /metrics (summed over its workers); 0 when it has none."""
    text = requests.get(f"{url}/metrics", headers={"Authorization": f"Bearer {token}"}, timeout=10).text
    wanted = ",".join(f'{key}="{value}"' for key, value in sorted(labels.items()))
    found = re.search(rf"^{name}\{{{re.escape(wanted)}\}} (\S+)$", text, re.M)
    return float(found.group(1)) if found else 0.0
