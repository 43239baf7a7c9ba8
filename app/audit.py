"""Security events: one JSON line each on the `audit` logger, and the same events counted in /metrics.

Each event names what happened and, where known, who (`sub`, `user`), which session (its public id,
never the cookie), and why (`reason`); the request's id and client address are added to the line
(app.logs.request_fields). Never a token, code, verifier or cookie.

This module is the one home of the audit vocabulary: EVENTS lists every event and the reason codes it
may carry (tests/unit/test_audit_vocabulary.py ties the list to the code that writes them, both ways).
"""

import logging
from datetime import UTC, datetime

from .metrics import count_audit_event

log = logging.getLogger("audit")
log.setLevel(logging.INFO)  # written whatever LOG_LEVEL says: an audit trail is not debugging output

NO_REASON = "none"  # the reason label of an event that has none
# A prompt=none sign-in the provider answered "the user must interact": not a LoginFailed (the browser
# goes back to its page), yet audited as a sign-in that did not happen.
SILENT_DECLINED = "silent_declined"
# The `reason` of every LoginFailed.
SIGNIN_FAILURES = (
    *("unsolicited_error", "unknown_state", "other_browser", "no_iss", "wrong_issuer", "provider_refused"),
    *("no_code", "bad_request", "code_refused", "bad_token_response", "no_id_token", "id_token_refused"),
    *("scope_not_granted", "no_subject", "subject_clash", "unusable_username", "no_username", "account_disabled"),
    *("par_failed", "stale_auth_time"),
)
# Error codes a token endpoint refuses a grant with (RFC 6749 5.2, RFC 9449 7.1 and 8): kept as sent.
PROVIDER_ERRORS = (
    *("invalid_request", "invalid_client", "invalid_grant", "unauthorized_client", "unsupported_grant_type"),
    *("invalid_scope", "invalid_dpop_proof", "use_dpop_nonce"),
)
UNLISTED_ERROR = "unlisted_error"  # a code outside PROVIDER_ERRORS: the line's `error` field has it
NO_ERROR_CODE = "no_error_code"  # a 400 or 401 whose body names no error code
SUPERSEDED = "superseded"  # the provider refused a refresh that another request had already made
# Why a back-channel logout token was refused (app.sessions.backchannel).
BACKCHANNEL_REFUSALS = (
    *("missing", "unverified", "typ", "issuer", "audience", "iat", "too_old", "expired", "events", "nonce"),
    *("jti", "no_subject", "replayed"),
)
EVENTS: dict[str, tuple[str, ...]] = {
    "signin.succeeded": (),
    "signin.failed": (*SIGNIN_FAILURES, SILENT_DECLINED),
    "signout": (),
    "session.ended": (
        *("user", "backchannel", "refresh_refused", "admin", "idle", "absolute", "malformed", "replaced"),
    ),
    "refresh.refused": (*PROVIDER_ERRORS, UNLISTED_ERROR, NO_ERROR_CODE, "id_token_refused", SUPERSEDED),
    "backchannel.refused": BACKCHANNEL_REFUSALS,
    "stepup.refused": ("acr", "max_age", "no_auth_time"),
    "ratelimit.hit": (
        *("login", "callback", "exchange", "login_network", "callback_network", "exchange_network"),
        *("token_checks", "token_checks_total", "dpop_proofs"),
    ),
    **{f"admin.users.{action}": () for action in ("import", "create", "show", "disable", "enable")},
}


def audit(event: str, **fields) -> None:
    """Write one audit event `event` (one of EVENTS) with `fields`, None ones left out, and count it by
    event and reason."""
    now = datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    present = {name: value for name, value in fields.items() if value is not None}
    log.info(event, extra={"fields": {"time": now, "event": event, **present}})
    count_audit_event(event, present.get("reason", NO_REASON))


def provider_error(code) -> str:
    """The reason code for an error code a provider sent: the code itself when it is one of
    PROVIDER_ERRORS, UNLISTED_ERROR for any other, NO_ERROR_CODE when there is none."""
    if not isinstance(code, str) or not code:
        return NO_ERROR_CODE
    return code if code in PROVIDER_ERRORS else UNLISTED_ERROR


def known_series() -> list[tuple[str, str]]:
    """Every (event, reason) label pair the audit counter can take, so each starts at 0."""
    return [(event, reason) for event, reasons in EVENTS.items() for reason in reasons or (NO_REASON,)]
