"""Flask-Session on Redis, keyed by an HMAC of the cookie value and loaded only for /auth routes.

Nothing that can change during a session lives in the session dict: tokens have their own key
(see app.store.tokensets), so a stale write-back can never undo a refresh.
"""

import hashlib
import hmac
import logging
import time
from datetime import timedelta

import msgspec
from flask import Flask, Request
from flask_session.base import Serializer, ServerSideSessionInterface
from flask_session.redis import RedisSessionInterface

from ..prefixes import AUTH_PREFIX, BACKCHANNEL_LOGOUT_PATH
from ..store.replicas import ConfirmedWrites

log = logging.getLogger(__name__)


def session_ref(secret: str, sid: str) -> str:
    """The name a session has in Redis: not the cookie itself, so read access to Redis is not a login."""
    return hmac.digest(secret.encode(), sid.encode(), hashlib.sha256).hex()  # the C one-shot: no HMAC object per call


class MsgpackOnly(Serializer):
    """msgpack maps and nothing else: Flask-Session's own serializer falls back to pickle.loads, so
    whoever could write a session key could run code here. Anything else reads as no session."""

    def __init__(self):
        self._encoder = msgspec.msgpack.Encoder()
        self._decoder = msgspec.msgpack.Decoder(dict)

    def encode(self, session) -> bytes:
        return self._encoder.encode(dict(session))

    def decode(self, serialized_data: bytes) -> dict | None:
        try:
            return self._decoder.decode(serialized_data)
        except msgspec.DecodeError:
            log.warning("refused a session record that is not a msgpack map")
            return None


class BffSessionInterface(RedisSessionInterface):
    """Server-side sessions in any redis-py client, Redis Cluster included."""

    def __init__(
        self, app: Flask, client, keys, secret: str, *, migrate=None, confirmed: ConfirmedWrites | None = None
    ):
        # RedisSessionInterface refuses clients that are not redis.Redis (a cluster client is not).
        ServerSideSessionInterface.__init__(self, app, key_prefix="", use_signer=False, permanent=False, sid_length=32)
        self.client = client
        self.serializer = MsgpackOnly()
        self._keys = keys
        self._secret = secret
        self._migrate = migrate  # moves a session named under a SECRET_KEY_FALLBACKS key to SECRET_KEY's
        self._confirmed = confirmed or ConfirmedWrites(client, timeout_ms=0)

    def _get_store_id(self, sid: str) -> str:
        return self._keys.session(session_ref(self._secret, sid))

    def _upsert_session(self, session_lifetime: timedelta, session, store_id: str) -> None:
        # The session key never outlives the session's absolute end (see app.sessions.credentials).
        ends = session.get("ends")
        if ends:
            session_lifetime = min(session_lifetime, timedelta(seconds=max(1, int(ends - time.time()))))
        # Written at sign-in, and confirmed on a replica like the session's tokens (app.store.replicas).
        seconds = int(session_lifetime.total_seconds())
        self._confirmed.execute(
            "session", store_id, [("SET", store_id, self.serializer.encode(session), "EX", seconds)]
        )

    def open_session(self, app: Flask, request: Request):
        if not request.path.startswith(f"{AUTH_PREFIX}/") or request.path == BACKCHANNEL_LOGOUT_PATH:
            # Other routes never use flask.session (the provider's back-channel call has no cookie);
            # skipping the load saves a Redis read.
            return self.session_class(sid="", permanent=False)
        cookie = request.cookies.get(self.get_cookie_name(app))
        if cookie and self._migrate:
            self._migrate(cookie)
        return super().open_session(app, request)

    def save_session(self, app: Flask, session, response) -> None:
        # An unloaded session (not an /auth route) has nothing to save; none at all when opening it failed.
        if session is None or not session.sid:
            return
        if not session and session.modified:
            # Flask-Session deletes the cookie without `Secure`, which browsers ignore for a
            # __Host- cookie: delete it here with the attributes it was set with.
            self._delete_session(self._get_store_id(session.sid))
            response.delete_cookie(
                self.get_cookie_name(app),
                path="/",
                secure=self.get_cookie_secure(app),
                httponly=True,
                samesite=self.get_cookie_samesite(app),
            )
            response.vary.add("Cookie")
            return
        super().save_session(app, session, response)
