"""A user's browser sessions, seen across devices: list them, end one or all others (revoking their
refresh tokens), and end those the provider says are over (back-channel logout)."""

import logging
import time
from datetime import UTC, datetime

from ..audit import audit
from ..errors import NotFound
from ..provider.login_client import LoginClient
from ..store.session_index import SessionIndex
from ..store.tokensets import TokenSets
from .credentials import SessionTokens

log = logging.getLogger(__name__)


def _iso(timestamp: float) -> str:
    return datetime.fromtimestamp(int(timestamp), UTC).isoformat().replace("+00:00", "Z")


class BrowserSessions:
    """What "your sessions" and back-channel logout do, over the session index and token sets."""

    def __init__(
        self,
        session_tokens: SessionTokens,
        token_sets: TokenSets,
        index: SessionIndex,
        login_client: LoginClient,
        *,
        idle_timeout: float,
    ):
        self._session_tokens = session_tokens
        self._token_sets = token_sets
        self._index = index
        self._login_client = login_client
        self._idle_timeout = idle_timeout

    def listing(self, sid: str) -> list[dict]:
        """The live sessions of the user of session `sid`, newest first, the current one marked."""
        current = self._session_tokens.current(sid)
        entries = self._index.of_subject(current["sub"])
        ttls = self._token_sets.ttls([entry["ref"] for entry in entries.values()])
        now, sessions, gone = time.time(), [], []
        for (session_id, entry), ttl_ms in zip(entries.items(), ttls, strict=True):
            if ttl_ms <= 0:
                gone.append(session_id)
                continue
            # Each use pushes the idle expiry back to the full timeout (to within a minute), so the
            # time since the last use is what the expiry has lost since.
            idle = min(self._idle_timeout, entry["ends"] - now)
            last_used = max(entry["started"], now - max(0.0, idle - ttl_ms / 1000))
            sessions.append(
                {
                    "id": session_id,
                    "started_at": _iso(entry["started"]),
                    "last_used_at": _iso(last_used),
                    "user_agent": entry["user_agent"],
                    "current": session_id == current["id"],
                }
            )
        self._index.forget(sub=current["sub"], session_ids=gone)
        return sorted(sessions, key=lambda session: session["started_at"], reverse=True)

    def end_one(self, sid: str, session_id: str) -> None:
        """End one session of the user of session `sid` and revoke its refresh token; NotFound when
        `session_id` is not one of that user's live sessions."""
        current = self._session_tokens.current(sid)
        entry = self._index.of_subject(current["sub"]).get(session_id)
        if entry is None:
            raise NotFound("no such session of yours")
        if not self._end_ref(entry["ref"]):
            self._index.forget(sub=current["sub"], session_ids=[session_id])
            raise NotFound("no such session of yours")
        self._index.forget(sub=current["sub"], session_ids=[session_id])
        _ended("user", current, [session_id])

    def end_others(self, sid: str) -> None:
        """End every session of the user of session `sid` but that one, revoking their refresh tokens."""
        current = self._session_tokens.current(sid)
        others = {key: entry for key, entry in self._index.of_subject(current["sub"]).items() if key != current["id"]}
        for entry in others.values():
            self._end_ref(entry["ref"])
        self._index.forget(sub=current["sub"], session_ids=list(others))
        _ended("user", current, list(others))

    def end_for_logout_token(self, claims: dict) -> list[str]:
        """End the sessions a valid logout token names: those of its `sid`, else every one of its
        `sub`; return the ids of those that were live. The provider already ended its side, so nothing
        is revoked. The index goes last, so a retry after a failure still finds every session."""
        if claims.get("sid"):
            refs = self._index.refs_of_provider_session(claims["sid"])
            ids = [stored.get("id") for stored in (self._token_sets.load(ref)[0] or {} for ref in refs)]
            ended = [session_id for session_id, ref in zip(ids, refs, strict=True) if self._token_sets.delete(ref)]
            self._index.forget_provider_session(claims["sid"])
        else:
            entries = self._index.of_subject(claims["sub"])
            ended = [session_id for session_id, entry in entries.items() if self._token_sets.delete(entry["ref"])]
            self._index.forget(sub=claims["sub"], session_ids=list(entries))
        return [session_id for session_id in ended if isinstance(session_id, str)]

    def end_all(self, sub: str) -> list[str]:
        """End every session of the user `sub` and revoke their refresh tokens (an operator's sign-out);
        return the ids of those that were live."""
        entries = self._index.of_subject(sub)
        ended = [session_id for session_id, entry in entries.items() if self._end_ref(entry["ref"])]
        self._index.forget(sub=sub, session_ids=list(entries))
        return ended

    def _end_ref(self, ref: str) -> bool:
        refresh_token = self._session_tokens.revocable_refresh_token(ref)
        ended = self._token_sets.delete(ref)
        if refresh_token:
            self._login_client.revoke(refresh_token)
        return bool(ended)


def _ended(by: str, current: dict, session_ids: list[str]) -> None:
    """The one audit event of a user ending sessions from session `current`."""
    audit(
        "session.ended", reason=by, sub=current["sub"], user=current["user"], session=current["id"], ended=session_ids
    )
