"""The refresh protocol of browser sessions: one refresh at a time per session (across every worker
and instance), and every other request uses its result.

Why it is safe: a refresh holds the session's lock for longer than the refresh HTTP call may take,
and writes its result only by compare-and-set on the version it read, so even a lock that expired
could never put an older refresh token over a newer one.
"""

import logging
import secrets
import time

from ..audit import SUPERSEDED, audit
from ..errors import LoginFailed, ProviderUnavailable, SessionEnded, Unavailable
from ..provider.login_client import LoginClient, RefreshRejected
from ..store.tokensets import TokenSets
from .records import SessionRecords, audit_fields, needs_refresh, still_valid, with_response

WAIT_STEP = 0.05

log = logging.getLogger(__name__)


class Refresher:
    """Refreshes a session's tokens at the provider, one request at a time per session."""

    def __init__(
        self, records: SessionRecords, token_sets: TokenSets, login_client: LoginClient, *, lock_ms: int, wait: float
    ):
        self._records = records
        self._token_sets = token_sets
        self._login_client = login_client
        self._lock_ms = lock_ms
        self._wait = wait

    def refreshed(self, sid: str, ref: str, record: dict) -> dict:
        """The session's record with a fresh access token: refreshed here, or by the request holding the
        lock; the old one while it is still valid and the provider is down; SessionEnded or Unavailable."""
        try:
            self._login_client.discover()  # any discovery fetch happens now, not while holding the lock
        except ProviderUnavailable:
            if still_valid(record):
                return record
            raise
        # Not redis-py's Lock: a waiter waits for the token set's version to change, not for the lock
        # to come free (Lock's blocking acquire), and correctness rests on replace()'s compare-and-set,
        # so SET NX PX and a compare-and-delete are all this lock needs.
        owner = secrets.token_hex(16)
        if self._token_sets.lock(ref, owner, self._lock_ms):
            try:
                return self._refresh_locked(sid, ref, owner)
            finally:
                self._token_sets.unlock(ref, owner)
        if still_valid(record):
            return record
        return self._wait_for_refresh(sid, ref, record["v"])

    def newer_than(self, sid: str, ref: str, token: str) -> dict | None:
        """The session's record once its access token is no longer `token`, waiting while a refresh is
        in flight; None when `token` is still the newest; SessionEnded or Unavailable."""
        deadline = time.monotonic() + self._wait
        while True:
            # The lock first: a refresh that ends between the two reads has stored its tokens by then.
            refreshing = self._token_sets.refreshing(ref)
            latest = self._records.load(sid, ref)[0]
            if latest is None:
                raise SessionEnded()
            if latest["access_token"] != token:
                return latest
            if not refreshing:
                return None
            if time.monotonic() >= deadline:
                raise Unavailable("the session's tokens are being refreshed; try again")
            time.sleep(WAIT_STEP)

    def _wait_for_refresh(self, sid: str, ref: str, version: int) -> dict:
        deadline = time.monotonic() + self._wait
        while time.monotonic() < deadline:
            time.sleep(WAIT_STEP)
            latest = self._records.load(sid, ref)[0]
            if latest is None:
                raise SessionEnded()
            if latest["v"] != version:
                return latest
        raise Unavailable("the session's tokens are being refreshed; try again")

    def _refresh_locked(self, sid: str, ref: str, owner: str) -> dict:
        latest = self._records.load(sid, ref)[0]
        if latest is None:
            raise SessionEnded()
        if not needs_refresh(latest):
            return latest  # another request refreshed while we waited for the lock
        if not latest.get("refresh_token"):
            self._records.end_at_limit(ref, latest)  # without one, its access token's life is its limit
            raise SessionEnded()
        try:
            response = self._login_client.refresh(latest["refresh_token"])
        except RefreshRejected as rejected:
            # If a refresh that outlived its lock stored newer tokens meanwhile, they win.
            if self._token_sets.end_if_version(ref, latest["v"]):
                _refused(latest, rejected.reason, error=rejected.error, ended=True)
                raise SessionEnded() from None
            _refused(latest, SUPERSEDED, error=rejected.error or rejected.reason, ended=False)
            return self._stored_after_race(sid, ref)
        except ProviderUnavailable:
            if still_valid(latest):
                return latest
            raise
        if response.get("id_token") and not self._same_user(response["id_token"], latest["sub"]):
            self._token_sets.end_if_version(ref, latest["v"])
            _refused(latest, "id_token_refused", ended=True)
            raise SessionEnded()
        updated = with_response(latest, response, time.time())
        # As the lock's `owner`: tokens a failing-over Redis cannot take now are stored once it can.
        if not self._token_sets.replace(ref, latest["v"], self._records.sealed(sid, updated), lock_owner=owner):
            return self._stored_after_race(sid, ref)
        return {**updated, "v": latest["v"] + 1}

    def _same_user(self, id_token: str, sub: str) -> bool:
        """An ID token from a refresh passes the sign-in checks (no nonce) and names the session's user."""
        try:
            claims = self._login_client.verify_id_token(id_token, nonce=None)
        except LoginFailed as refusal:
            log.warning("refreshed ID token refused, session ended: %s", refusal.message)
            return False
        if claims["sub"] != sub:
            log.warning("refreshed ID token names another subject, session ended")
            return False
        return True

    def _stored_after_race(self, sid: str, ref: str) -> dict:
        newer = self._records.load(sid, ref)[0]
        if newer is None:
            raise SessionEnded()
        return newer


def _refused(record: dict, reason: str, *, ended: bool, error: str | None = None) -> None:
    """The audit events of a refused refresh: refresh.refused (with the provider's code as sent in
    `error` when `reason` cannot name it), then the session.ended it caused, when it `ended` the session."""
    audit("refresh.refused", reason=reason, error=error, **audit_fields(record))
    if ended:
        audit("session.ended", reason="refresh_refused", cause=reason, ended=[record["id"]], **audit_fields(record))
