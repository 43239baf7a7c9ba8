"""A browser session's token record as stored: one Redis key per session, its tokens sealed under the
session cookie (app.sessions.sealing), versioned for compare-and-set. A record no key opens, or one from
before sealing, ends its session. How a session ended by itself (idle, absolute, malformed) is audited
here, when its browser comes back; what its sign-in proved (acr, amr, auth_time) is written and read here."""

import logging
import math
import time

from ..audit import audit
from ..store.tokensets import TokenSets
from ..tokens.principal import epoch_seconds
from .sealing import Sealer, Unsealable

log = logging.getLogger(__name__)

REFRESH_MARGIN = 60
# How long after its absolute end a session left to expire is still audited when its browser comes back.
END_TOLD_FOR = 86_400
MAX_NAMED = 255  # longer plaintext fields of a malformed record are not repeated in its audit event
# The fields of a record the app reads, and their types: a record without them ends its session.
FIELD_TYPES = {
    "v": int,
    "id": str,
    "user": str,
    "sub": str,
    "scope": str,
    "started": float,
    "ends": float,
    "expires_at": float,
}


class SessionRecords:
    """Reads and seals the token records of browser sessions."""

    def __init__(self, token_sets: TokenSets, sealer: Sealer):
        self._token_sets = token_sets
        self._sealer = sealer

    def create(self, sid: str, ref: str, record: dict, ttl_ms: int) -> None:
        """Store the record of a new session `sid` as `ref`, and who it was and when it ends (no token)
        for found_ended."""
        end = {name: record[name] for name in ("id", "user", "sub", "ends")}
        end_ttl_ms = int((record["ends"] - time.time() + END_TOLD_FOR) * 1000)
        self._token_sets.create(ref, self.sealed(sid, record), ttl_ms, end=end, end_ttl_ms=end_ttl_ms)

    def load(self, sid: str, ref: str) -> tuple[dict | None, int]:
        """The record of session `sid` (stored as `ref`) with its tokens unsealed, and its time to live in
        ms; None when there is none or it cannot be opened."""
        stored, ttl_ms = self._token_sets.load(ref)
        return self.opened(sid, ref, stored), ttl_ms

    def opened(self, sid: str, ref: str, stored: dict | None) -> dict | None:
        """The record with its tokens unsealed; None (and the session ended) when they cannot be."""
        if stored is None:
            return None
        try:
            record, stale = self._sealer.open_record(sid, stored)
            _check_fields(record)
        except Unsealable as error:
            log.warning("session ended: its tokens cannot be unsealed (%s)", error)
            self._token_sets.delete(ref)
            _ended("malformed", stored)
            return None
        if stale and self._token_sets.replace(ref, record["v"], self.sealed(sid, record)):
            record["v"] += 1  # sealed again under the current SECRET_KEY
        return record

    def sealed(self, sid: str, record: dict) -> dict:
        """`record` as it is stored for session `sid`: its tokens sealed."""
        return self._sealer.seal_record(sid, record)

    def found_ended(self, ref: str) -> None:
        """Audit, once, the end of the session `ref` whose record is gone, when it was left to expire
        (idle, or past its absolute end); nothing when it was ended (each end audits itself)."""
        end = self._token_sets.take_end(ref)
        if end and isinstance(end.get("ends"), int | float):
            _ended("absolute" if time.time() >= end["ends"] else "idle", end)

    def end_at_limit(self, ref: str, record: dict) -> None:
        """End the session `ref` whose `record` has outlived its absolute end, audited."""
        self._token_sets.delete(ref)
        _ended("absolute", record)


def well_formed(record: dict) -> bool:
    """Whether every field the app reads has its type (the tokens aside, which only opening checks)."""
    try:
        _check_fields(record)
    except Unsealable:
        return False
    return True


def _check_fields(record: dict) -> None:
    """Unsealable unless every field the app reads has its type (times finite numbers)."""
    for name, kind in FIELD_TYPES.items():
        value = record.get(name)
        if kind is float:
            fits = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
        else:
            fits = isinstance(value, kind) and not isinstance(value, bool)
        if not fits:
            raise Unsealable(f"its field {name} is missing or not a {kind.__name__}")


def with_response(record: dict, response: dict, now: float) -> dict:
    """`record` updated from a token response; the session never outlives the refresh token."""
    ends = record["ends"]
    if isinstance(response.get("refresh_expires_in"), int) and response["refresh_expires_in"] > 0:
        ends = min(ends, now + response["refresh_expires_in"])
    return {
        **record,
        "access_token": response["access_token"],
        "refresh_token": response.get("refresh_token") or record["refresh_token"],
        "id_token": response.get("id_token") or record["id_token"],
        "expires_at": now + int(response.get("expires_in") or 300),
        "scope": response.get("scope", record["scope"]),
        "ends": ends,
    }


def _ended(reason: str, record: dict) -> None:
    """The one audit event of a session that ended by itself, naming it from what its record shows."""
    named = {
        name: value
        for name, value in ((name, record.get(name)) for name in ("id", "user", "sub"))
        if isinstance(value, str) and len(value) <= MAX_NAMED
    }
    session = named.pop("id", None)
    audit("session.ended", reason=reason, ended=[session] if session else [], session=session, **named)


def needs_refresh(record: dict) -> bool:
    """Whether the record's access token expires within REFRESH_MARGIN seconds."""
    return record["expires_at"] - time.time() < REFRESH_MARGIN


def still_valid(record: dict) -> bool:
    """Whether the record's access token is good for more than another second."""
    return record["expires_at"] > time.time() + 1


def audit_fields(record: dict | None) -> dict:
    """Who a session's audit event names: its user, subject and public id (never the cookie or a token)."""
    return {"sub": record["sub"], "user": record["user"], "session": record["id"]} if record else {}


def proven_authentication(claims: dict) -> dict:
    """The ID token's `acr` (a string), `amr` (a list of strings) and `auth_time` (an integer), each
    None when it is absent or of another type."""
    acr, amr, auth_time = claims.get("acr"), claims.get("amr"), claims.get("auth_time")
    return {
        "acr": acr if isinstance(acr, str) and acr else None,
        "amr": list(amr) if isinstance(amr, list) and all(isinstance(m, str) for m in amr) else None,
        "auth_time": auth_time if isinstance(auth_time, int) and not isinstance(auth_time, bool) else None,
    }


def sign_in_proof(record: dict) -> dict:
    """How the session's user authenticated (`acr`, `amr`, `auth_time`), each only when known and well formed."""
    proof = {}
    if isinstance(record.get("acr"), str) and record["acr"]:
        proof["acr"] = record["acr"]
    amr = record.get("amr")
    if isinstance(amr, list) and all(isinstance(method, str) for method in amr):
        proof["amr"] = amr
    auth_time = epoch_seconds(record.get("auth_time"))
    if auth_time is not None:
        proof["auth_time"] = auth_time
    return proof
