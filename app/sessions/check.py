"""The session check (GET /auth/session): who is signed in, what the sign-in proved and when the
session ends, read without extending it: only sign-in and API calls keep a session alive."""

from ..challenges import Unauthorized
from .credentials import SessionTokens
from .records import sign_in_proof


def session_info(session_tokens: SessionTokens, sid: str | None, *, idle_timeout: int) -> dict:
    """The session `sid` as the browser may see it (never a token); `{"authenticated": false}` without one."""
    try:
        record, idle_expires_at = session_tokens.inspect(sid) if sid else (None, 0.0)
    except Unauthorized:
        record = None
    if record is None:
        return {"authenticated": False}
    return {
        "authenticated": True,
        "user": record["user"],
        "scopes": sorted(record["scope"].split()),
        "expires_at": int(record["ends"]),
        "idle_expires_at": int(min(idle_expires_at, record["ends"])),
        "idle_timeout": idle_timeout,
        **sign_in_proof(record),
    }
