"""The short user-agent labels of "your sessions"."""

import pytest

from app.sessions.user_agents import user_agent_label

CHROME = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0.0.0 Safari/537.36"


@pytest.mark.parametrize(
    "header, label",
    [
        (CHROME, "Chrome on Linux"),
        (CHROME.replace("Chrome/", "HeadlessChrome/"), "Chrome on Linux"),
        (CHROME + " Edg/156.0", "Edge on Linux"),
        ("Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:140.0) Gecko/20100101 Firefox/140.0", "Firefox on Windows"),
        (
            "Mozilla/5.0 (iPhone; CPU iPhone OS 18_0 like Mac OS X) AppleWebKit/605.1.15 Version/18.0 Mobile/15E148 "
            "Safari/604.1",
            "Safari on iOS",
        ),
        ("curl/8.5.0", "curl"),
        (None, "unknown browser"),
        ("x" * 10_000, "unknown browser"),
    ],
)
def test_a_user_agent_becomes_a_short_label(header, label):
    assert user_agent_label(header) == label
