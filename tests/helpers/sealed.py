"""Reads a session's token set the way the app stores it: public fields in JSON, the tokens sealed
for the session cookie (app.sessions.sealing)."""

import json

from app.sessions.sealing import Sealer


def opened_token_set(raw: bytes | None, secret_key: str, cookie: str) -> dict | None:
    """The stored token set `raw` with its tokens unsealed, or None when there is none."""
    if not raw:
        return None
    return Sealer(secret_key, []).open_record(cookie, json.loads(raw))[0]
