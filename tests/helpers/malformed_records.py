"""Malformed token records as someone with write access to Redis could leave them, made from a real
stored record of a signed-in session, and the session calls that must then answer "signed out"."""

import base64
import json

from app.sessions.sealing import VERSION, Sealer
from tests.helpers.settings import CSRF


def _sealed_bytes(stored: dict) -> bytes:
    return base64.urlsafe_b64decode(stored["sealed"][len(VERSION) + 1 :])


def _with_sealed_bytes(stored: dict, raw: bytes) -> bytes:
    return _json({**stored, "sealed": f"{VERSION}.{base64.urlsafe_b64encode(raw).decode()}"})


def _json(stored) -> bytes:
    return json.dumps(stored).encode()


def _flipped(raw: bytes) -> bytes:
    return raw[:-1] + bytes([raw[-1] ^ 1])


def _resealed(plaintext: bytes):
    """A record whose tokens open under the right key but are not a token set."""

    def make(stored: dict, secret: str, cookie: str) -> bytes:
        return _json({**stored, "sealed": Sealer(secret, []).seal(cookie, plaintext)})

    return make


def _public(**fields):
    """A record whose tokens open but whose clear fields have the wrong type (None: left out)."""

    def make(stored: dict, secret: str, cookie: str) -> bytes:
        changed = {**stored, **fields}
        return _json({name: value for name, value in changed.items() if value is not None})

    return make


# name -> (stored record, SECRET_KEY, session cookie) -> the bytes to put in its place
MALFORMATIONS = {
    "not json": lambda stored, secret, cookie: b"{not json",
    "json but not an object": lambda stored, secret, cookie: _json([stored["sealed"]]),
    "an empty object": lambda stored, secret, cookie: b"{}",
    "sealed is a number": lambda stored, secret, cookie: _json({**stored, "sealed": 12345}),
    "bad base64 padding": lambda stored, secret, cookie: _json({**stored, "sealed": f"{VERSION}.abc"}),
    "base64 of nothing": lambda stored, secret, cookie: _json({**stored, "sealed": f"{VERSION}.%%%%"}),
    "truncated inside the nonce": lambda stored, secret, cookie: _with_sealed_bytes(stored, _sealed_bytes(stored)[:5]),
    "truncated inside the tag": lambda stored, secret, cookie: _with_sealed_bytes(stored, _sealed_bytes(stored)[:20]),
    "cut in half": lambda stored, secret, cookie: _json(
        {**stored, "sealed": stored["sealed"][: len(stored["sealed"]) // 2]}
    ),
    "one bit flipped (aes-gcm tag fails)": lambda stored, secret, cookie: _with_sealed_bytes(
        stored, _flipped(_sealed_bytes(stored))
    ),
    "decrypts to bytes that are not utf-8": _resealed(b"\xff\xfe\x00junk"),
    "decrypts to text that is not json": _resealed(b"these are not the tokens"),
    "decrypts to a json list": _resealed(b'["at", "rt", "it"]'),
    "decrypts to an access token that is a number": _resealed(b'{"access_token": 5, "refresh_token": null}'),
    "decrypts to an object without tokens": _resealed(b"{}"),
    "version is a string": _public(v="1"),
    "end time is a string": _public(ends="tomorrow"),
    "end time is missing": _public(ends=None),
    "expiry is not finite": lambda stored, secret, cookie: json.dumps({**stored, "expires_at": float("nan")}).encode(),
    "user is a list": _public(user=["alice"]),
    "subject is a number": _public(sub=7),
    "scope is an object": _public(scope={"profile": True}),
}

SIGNED_OUT = "the session has ended; sign in again"


def _ended(response) -> bool:
    return (response.status_code, response.json["error"]["message"]) == (401, SIGNED_OUT)


def _logged_out(response) -> bool:
    return response.status_code == 200 and set(response.json) == {"logout_url"}


# Every call that reads a session's token record, each the first call after the record went bad, and
# what it must answer: the session ended (signed out), never a 500.
SESSION_CALLS = {
    "GET /api/v1/me/profile": (lambda client: client.get("/api/v1/me/profile", headers=CSRF), _ended),
    "POST /api/v1/pokes": (lambda client: client.post("/api/v1/pokes", headers=CSRF, json={"username": "bob"}), _ended),
    "GET /auth/sessions": (lambda client: client.get("/auth/sessions", headers=CSRF), _ended),
    "GET /auth/session": (
        lambda client: client.get("/auth/session"),
        lambda response: (response.status_code, response.json) == (200, {"authenticated": False}),
    ),
    "POST /auth/logout": (lambda client: client.post("/auth/logout", headers=CSRF), _logged_out),
}
