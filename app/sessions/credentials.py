"""The tokens behind browser sessions: created at sign-in, read per request, refreshed near expiry
(app.sessions.refresh: one request at a time per session), removed at sign-out.

At rest the three tokens are sealed (app.sessions.sealing) under a key only the cookie opens; the rest of
the record (user, times, version) stays readable for the compare-and-set and "your sessions". A
record no key opens, or one from before sealing, ends its session.
"""

import secrets
import time
from dataclasses import dataclass

from ..errors import SessionEnded
from ..provider.login_client import LoginClient
from ..store.profiles import Profile
from ..store.session_index import SessionIndex
from ..store.tokensets import TokenSets
from .interface import session_ref
from .records import SessionRecords, needs_refresh, sign_in_proof, well_formed, with_response
from .refresh import Refresher
from .sealing import Sealer

IDLE_TOUCH_SLACK_MS = 60_000
SESSION_USERS_CACHED = 100_000


def proven_authentication(claims: dict) -> dict:
    """The ID token's `acr` (a string), `amr` (a list of strings) and `auth_time` (an integer), each
    None when it is absent or of another type."""
    acr, amr, auth_time = claims.get("acr"), claims.get("amr"), claims.get("auth_time")
    return {
        "acr": acr if isinstance(acr, str) and acr else None,
        "amr": list(amr) if isinstance(amr, list) and all(isinstance(m, str) for m in amr) else None,
        "auth_time": auth_time if isinstance(auth_time, int) and not isinstance(auth_time, bool) else None,
    }


@dataclass(frozen=True)
class SessionCredential:
    """What a session cookie stands for: a usable access token, and the user's profile when it was
    read in the same round trip (None when it was not read, or there is none)."""

    access_token: str
    profile: Profile | None = None
    acr: str | None = None  # how the session's user signed in (from its ID token), for step-up
    auth_time: int | None = None


class SessionTokens:
    """Every browser session's token set, named by the session id the cookie carries."""

    def __init__(
        self,
        token_sets: TokenSets,
        login_client: LoginClient,
        index: SessionIndex,
        *,
        secret_key: str,
        secret_key_fallbacks: tuple[str, ...] = (),
        idle_timeout: float,
        max_age: float,
        idp_timeout: float,
        refresh_wait: float | None = None,
        users_cached: int = SESSION_USERS_CACHED,
    ):
        self._token_sets = token_sets
        self._index = index
        self._secret_key = secret_key
        self._fallbacks = tuple(secret_key_fallbacks)
        self._sealer = Sealer(secret_key, list(secret_key_fallbacks))
        self._idle_timeout = idle_timeout
        self._max_age = max_age
        self._records = SessionRecords(token_sets, self._sealer)
        self._refresher = Refresher(
            self._records,
            token_sets,
            login_client,
            # Longer than the refresh call can last (connect + read timeouts), so the lock outlives it.
            lock_ms=int((2 * idp_timeout + 5) * 1000),
            wait=2 * idp_timeout + 1 if refresh_wait is None else refresh_wait,
        )
        self._users_cached = users_cached
        # A session's user never changes (a new sign-in gets a new session), so a process may keep it.
        self._session_users: dict[str, str] = {}

    def start(
        self,
        sid: str,
        *,
        username: str,
        sub: str,
        response: dict,
        provider_sid: str | None = None,
        user_agent: str = "unknown browser",
        acr: str | None = None,
        amr: list[str] | None = None,
        auth_time: int | None = None,
    ) -> dict:
        """Store the token response of a fresh sign-in as the token set of session `sid`, and index the
        session under its user and its provider session (`provider_sid`, the ID token's `sid`). `acr`,
        `amr` and `auth_time` (how the user authenticated, from proven_authentication) are kept when
        they have their types, else None."""
        now = time.time()
        base = {
            "id": secrets.token_urlsafe(16),  # the session's public name in "your sessions"; not the cookie
            "user": username,
            "sub": sub,
            "started": now,
            "ends": now + self._max_age,
            "refresh_token": None,
            "id_token": None,
            "scope": "",
            "user_agent": user_agent,
            "provider_sid": provider_sid,  # kept so a SECRET_KEY rotation can re-index the session
            **proven_authentication({"acr": acr, "amr": amr, "auth_time": auth_time}),
        }
        record = with_response(base, response, now)
        ref = self._ref(sid)
        self._records.create(sid, ref, record, self._ttl_ms(record, now))
        entry = {"ref": ref, "started": now, "ends": record["ends"], "user_agent": user_agent}
        self._index.add(sub=sub, session_id=record["id"], entry=entry, provider_sid=provider_sid)
        return record

    def end(self, sid: str) -> dict | None:
        """Remove everything session `sid` keeps in Redis; return the token set it held."""
        ref = self._ref(sid)
        record, _ = self._records.load(sid, ref)
        if record is None:
            self._records.found_ended(ref)  # before the delete, which forgets how it ended
        self._token_sets.delete(ref)
        self._session_users.pop(ref, None)
        if record:
            self._index.forget(sub=record["sub"], session_ids=[record["id"]])
        return record

    def current(self, sid: str) -> dict:
        """The live token set of session `sid`, its idle expiry pushed back; SessionEnded without one."""
        return self._current(sid, self._ref(sid))

    def inspect(self, sid: str) -> tuple[dict, float]:
        """The live token set of session `sid` and when its idle timeout ends (epoch seconds), read
        only: a look never extends a session; SessionEnded without one."""
        ref = self._ref(sid)
        record, ttl_ms = self._records.load(sid, ref)
        return self._lasting(ref, record), time.time() + max(0, ttl_ms) / 1000

    def revocable_refresh_token(self, ref: str) -> str | None:
        """The refresh token of the session stored as `ref` (any of the user's), for revocation."""
        stored, _ = self._token_sets.load(ref)
        return self._sealer.revocable_refresh_token(stored) if stored else None

    def migrate(self, sid: str) -> None:
        """Move a session stored under a SECRET_KEY_FALLBACKS name to its name under SECRET_KEY."""
        ref = self._ref(sid)
        if not self._fallbacks or self._token_sets.exists(ref):
            return
        for old in self._fallbacks:
            stored = self._token_sets.move(session_ref(old, sid), ref)
            if stored and not well_formed(stored):
                return  # not indexed: opening it ends the session and removes it
            if stored:
                entry = {
                    "ref": ref,
                    "started": stored["started"],
                    "ends": stored["ends"],
                    "user_agent": stored.get("user_agent", "unknown browser"),
                }
                self._index.add(
                    sub=stored["sub"], session_id=stored["id"], entry=entry, provider_sid=stored.get("provider_sid")
                )
                return

    def credential_for_cookie(self, cookie: str) -> SessionCredential:
        """A usable access token for the session the cookie names, refreshed when near expiry, with the
        user's profile read in the same round trip when this process already knows the session's user;
        SessionEnded when the session has ended, Unavailable when a refresh by another request lasts."""
        ref = self._ref(cookie)
        username = self._session_users.get(ref)
        profile = None
        if username:
            stored, ttl_ms, raw_profile = self._token_sets.load_with_profile(ref, username)
            record = self._records.opened(cookie, ref, stored)
            profile = Profile.from_hash(raw_profile) if raw_profile else None
        else:
            record, ttl_ms = self._records.load(cookie, ref)
        if record is None and self._fallbacks:
            self.migrate(cookie)
            record, ttl_ms = self._records.load(cookie, ref)
        record = self._live(ref, record, ttl_ms)
        if needs_refresh(record):
            record = self._refresher.refreshed(cookie, ref, record)
        proof = sign_in_proof(record)
        return SessionCredential(record["access_token"], profile, proof.get("acr"), proof.get("auth_time"))

    def newer_access_token(self, cookie: str, refused: str) -> str | None:
        """The session's newest access token when it is not `refused` (after any refresh in flight has
        stored its tokens), else None; read from Redis alone, never from the provider."""
        record = self._refresher.newer_than(cookie, self._ref(cookie), refused)
        return record["access_token"] if record is not None else None

    def _ref(self, sid: str) -> str:
        return session_ref(self._secret_key, sid)

    def _current(self, sid: str, ref: str) -> dict:
        record, ttl_ms = self._records.load(sid, ref)
        return self._live(ref, record, ttl_ms)

    def _live(self, ref: str, record: dict | None, ttl_ms: int) -> dict:
        record = self._lasting(ref, record)
        self._remember_user(ref, record["user"])
        now = time.time()
        wanted_ms = self._ttl_ms(record, now)
        # Extend at most about once a minute (sooner for short timeouts): a write on every read costs.
        if ttl_ms < wanted_ms - min(IDLE_TOUCH_SLACK_MS, wanted_ms // 4):
            self._token_sets.extend(ref, wanted_ms)
        return record

    def _lasting(self, ref: str, record: dict | None) -> dict:
        """`record` while its session lasts; SessionEnded, its end audited, when it is gone or past its end."""
        if record is None:
            self._records.found_ended(ref)
            raise SessionEnded()
        if time.time() >= record["ends"]:
            self._records.end_at_limit(ref, record)
            raise SessionEnded()
        return record

    def _remember_user(self, ref: str, username: str) -> None:
        if ref not in self._session_users:
            if len(self._session_users) >= self._users_cached:
                self._session_users.clear()
            self._session_users[ref] = username

    def _ttl_ms(self, record: dict, now: float) -> int:
        return max(1, int(min(self._idle_timeout, record["ends"] - now) * 1000))
