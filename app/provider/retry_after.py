"""How long a provider that throttles (429 or 503) asks to be left alone: its Retry-After, in seconds or
as an HTTP date, within bounds."""

from email.utils import parsedate_to_datetime

BACKOFF, BACKOFF_MAX = 5, 300  # seconds: without a usable Retry-After; the most it may ask for


def backoff_seconds(retry_after: str | None, now: float) -> float:
    """What a Retry-After asks for (seconds, or an HTTP date), between 1 and BACKOFF_MAX; BACKOFF without one."""
    value = (retry_after or "").strip()
    try:
        seconds = float(value) if value.isdigit() else parsedate_to_datetime(value).timestamp() - now
    except (TypeError, ValueError, OverflowError):
        seconds = BACKOFF
    return min(max(seconds, 1.0), BACKOFF_MAX)
