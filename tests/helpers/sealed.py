"""Reads a session's token set the way the app stores it: public fields in JSON, the tokens sealed
for the session cookie (app.auth.sealing)."""

import json

from app.auth.sealing import Sealer


def opened_token_set(raw: bytes | None, secret_key: str, cookie: str) -> dict | None:
    """The stored token set `raw` with its tokens unsealed, or None when there is none."""
    if not raw:
        return None
    stored = json.loads(raw)
    public = {name: value for name, value in stored.items() if name not in {"sealed", "revocable"}}
    return {**public, **json.loads(Sealer(secret_key, []).open(cookie, stored["sealed"])[0])}
