"""The tokens behind a browser session: created at sign-in, read per request, refreshed by one
request at a time per session (across every worker and instance), removed at sign-out.

Why it is safe: a refresh holds the session's lock for longer than the refresh HTTP call may take,
and writes its result only by compare-and-set on the version it read, so even a lock that expired
could never put an older refresh token over a newer one.
"""

import secrets
import time

from flask import current_app, g

from ..errors import ProviderUnavailable, Unauthorized, Unavailable
from ..extensions import services
from .oidc import RefreshRejected
from .sessions import session_ref

REFRESH_MARGIN = 60
IDLE_TOUCH_SLACK_MS = 60_000
WAIT_STEP = 0.05
SESSION_ENDED = "the session has ended; sign in again"
SESSION_USERS_CACHED = 100_000
_session_users: dict[str, str] = {}


def start_session_tokens(ref: str, *, username: str, sub: str, response: dict) -> dict:
    """Store the token response of a fresh sign-in as the session's token set."""
    now = time.time()
    base = {
        "user": username,
        "sub": sub,
        "started": now,
        "ends": now + current_app.config["SESSION_MAX_AGE"],
        "refresh_token": None,
        "id_token": None,
        "scope": "",
    }
    record = _with_response(base, response, now)
    services().store.token_sets.create(ref, record, _ttl_ms(record, now))
    return record


def end_session_tokens(ref: str) -> dict | None:
    """Remove everything the session keeps in Redis; return what it held."""
    token_sets = services().store.token_sets
    record, _ = token_sets.load(ref)
    token_sets.delete(ref)
    return record


def current_token_set(ref: str, *, prefetch_profile: bool = False) -> dict:
    """The session's live token set, its idle expiry pushed back; Unauthorized when there is none.
    With `prefetch_profile`, the user's profile is read in the same round trip when this process
    knows the session's user, and left in `g.session_profile` as (username, raw hash)."""
    token_sets = services().store.token_sets
    username = _session_users.get(ref) if prefetch_profile else None
    if username:
        record, ttl_ms, raw_profile = token_sets.load_with_profile(ref, username)
        g.session_profile = (username, raw_profile)
    else:
        record, ttl_ms = token_sets.load(ref)
    if record is None:
        raise Unauthorized(SESSION_ENDED)
    _remember_user(ref, record["user"])
    now = time.time()
    if now >= record["ends"]:
        token_sets.delete(ref)
        raise Unauthorized(SESSION_ENDED)
    wanted_ms = _ttl_ms(record, now)
    # Extend at most about once a minute (sooner for short timeouts): a write on every read costs.
    if ttl_ms < wanted_ms - min(IDLE_TOUCH_SLACK_MS, wanted_ms // 4):
        token_sets.extend(ref, wanted_ms)
    return record


def access_token_for_cookie(cookie: str) -> str:
    """A usable access token for the session named by the cookie value, refreshed when near expiry."""
    ref = session_ref(current_app.config["SECRET_KEY"], cookie)
    record = current_token_set(ref, prefetch_profile=True)
    if record["expires_at"] - time.time() >= REFRESH_MARGIN:
        return record["access_token"]
    return _refreshed(ref, record)["access_token"]


def _refreshed(ref: str, record: dict) -> dict:
    token_sets = services().store.token_sets
    timeout = current_app.config["IDP_TIMEOUT"]
    try:
        services().provider.metadata()  # any discovery fetch happens now, not while holding the lock
    except ProviderUnavailable:
        if _still_valid(record):
            return record
        raise
    owner = secrets.token_hex(16)
    # Longer than the refresh call can last (connect + read timeouts), so the lock outlives it.
    if token_sets.lock(ref, owner, int((2 * timeout + 5) * 1000)):
        try:
            return _refresh_locked(ref)
        finally:
            token_sets.unlock(ref, owner)
    if _still_valid(record):
        return record
    deadline = time.monotonic() + 2 * timeout + 1
    while time.monotonic() < deadline:
        time.sleep(WAIT_STEP)
        latest, _ = token_sets.load(ref)
        if latest is None:
            raise Unauthorized(SESSION_ENDED)
        if latest["v"] != record["v"]:
            return latest
    raise Unavailable("the session's tokens are being refreshed; try again")


def _refresh_locked(ref: str) -> dict:
    token_sets = services().store.token_sets
    latest, _ = token_sets.load(ref)
    if latest is None:
        raise Unauthorized(SESSION_ENDED)
    if latest["expires_at"] - time.time() >= REFRESH_MARGIN:
        return latest  # another request refreshed while we waited for the lock
    if not latest.get("refresh_token"):
        token_sets.delete(ref)
        raise Unauthorized(SESSION_ENDED)
    try:
        response = services().login_client.refresh(latest["refresh_token"])
    except RefreshRejected:
        # If a refresh that outlived its lock stored newer tokens meanwhile, they win.
        if token_sets.end_if_version(ref, latest["v"]):
            raise Unauthorized(SESSION_ENDED) from None
        newer, _ = token_sets.load(ref)
        if newer is None:
            raise Unauthorized(SESSION_ENDED) from None
        return newer
    except ProviderUnavailable:
        if _still_valid(latest):
            return latest
        raise
    updated = _with_response(latest, response, time.time())
    if not token_sets.replace(ref, latest["v"], updated):
        newer, _ = token_sets.load(ref)
        if newer is None:
            raise Unauthorized(SESSION_ENDED)
        return newer
    return {**updated, "v": latest["v"] + 1}


def _with_response(record: dict, response: dict, now: float) -> dict:
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


def _remember_user(ref: str, username: str) -> None:
    # A session's user never changes (a new sign-in gets a new session), so a process may keep it.
    if ref not in _session_users:
        if len(_session_users) >= SESSION_USERS_CACHED:
            _session_users.clear()
        _session_users[ref] = username


def _still_valid(record: dict) -> bool:
    return record["expires_at"] > time.time() + 1


def _ttl_ms(record: dict, now: float) -> int:
    idle = current_app.config["SESSION_IDLE_TIMEOUT"]
    return max(1, int(min(idle, record["ends"] - now) * 1000))
