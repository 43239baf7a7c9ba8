"""How long a throttling provider is left alone (app.provider.retry_after): its Retry-After in seconds or
as an HTTP date, never less than a second nor more than BACKOFF_MAX, and BACKOFF without a usable one."""

from datetime import UTC, datetime
from email.utils import format_datetime

import pytest

from app.provider.retry_after import BACKOFF, BACKOFF_MAX, backoff_seconds

NOW = 1_800_000_000.0


def http_date(at: float) -> str:
    return format_datetime(datetime.fromtimestamp(at, UTC), usegmt=True)


@pytest.mark.parametrize(
    ("retry_after", "seconds"),
    [
        ("12", 12),
        (" 7 ", 7),
        ("1", 1),
        ("0", 1),
        (str(BACKOFF_MAX + 1), BACKOFF_MAX),
        (http_date(NOW + 20), 20),
        (http_date(NOW - 20), 1),
        (None, BACKOFF),
        ("", BACKOFF),
        ("soon", BACKOFF),
        ("-5", BACKOFF),
    ],
    ids=[
        *("seconds", "spaces", "one second", "zero: one second", "capped", "a date", "a past date"),
        *("none", "empty", "a word", "negative"),
    ],
)
def test_a_retry_after_is_read_within_its_bounds(retry_after, seconds):
    assert backoff_seconds(retry_after, NOW) == seconds
