"""Security events: one JSON line each on the `audit` logger, and the same events counted in /metrics.

Each event names what happened and, where known, who (`sub`, `user`), which session (its public id,
never the cookie), and why (`reason`); the request's id and client address are added to the line
(app.logs.request_fields). Never a token, code, verifier or cookie.
"""

import logging
from datetime import UTC, datetime

from .metrics import count_audit_event

log = logging.getLogger("audit")
log.setLevel(logging.INFO)  # written whatever LOG_LEVEL says: an audit trail is not debugging output


def audit(event: str, **fields) -> None:
    """Write one audit event `event` (one of app.metrics.AUDIT_EVENTS) with `fields`, None ones left out,
    and count it by event and reason."""
    now = datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    present = {name: value for name, value in fields.items() if value is not None}
    log.info(event, extra={"fields": {"time": now, "event": event, **present}})
    count_audit_event(event, present.get("reason"))
