"""Sessions across a SECRET_KEY rotation: one still stored under its name for a key of
SECRET_KEY_FALLBACKS is renamed for SECRET_KEY and indexed again (app.sessions.records seals its tokens
again under SECRET_KEY when it next opens them)."""

from ..store.session_index import SessionIndex
from ..store.tokensets import TokenSets
from .interface import session_ref
from .records import well_formed


class Renaming:
    """Moves sessions from their names under the fallback keys to their names under SECRET_KEY."""

    def __init__(self, token_sets: TokenSets, index: SessionIndex, fallbacks: tuple[str, ...]):
        self._token_sets = token_sets
        self._index = index
        self._fallbacks = fallbacks

    def move(self, sid: str, ref: str) -> None:
        """Move session `sid` to `ref`, its name under SECRET_KEY, from its name under the first fallback
        key that has it, and index it there; nothing when `ref` exists already or no fallback has it."""
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
