"""A short label for a User-Agent header ("Chrome on Linux"), enough to tell your sessions apart."""

import re

BROWSERS = [  # order matters: Edge and Chrome also say "Safari", Chrome-based Edge also says "Chrome"
    ("Edge", re.compile(r"\bEdg(e|A|iOS)?/")),
    ("Firefox", re.compile(r"\bFirefox/")),
    ("Chrome", re.compile(r"(Chrome|Chromium|CriOS)/")),  # HeadlessChrome too
    ("Safari", re.compile(r"\bSafari/")),
    ("curl", re.compile(r"^curl/")),
    ("python-requests", re.compile(r"^python-requests/")),
]
SYSTEMS = [
    ("Android", re.compile(r"\bAndroid\b")),
    ("iOS", re.compile(r"\b(iPhone|iPad)\b")),
    ("Windows", re.compile(r"\bWindows\b")),
    ("macOS", re.compile(r"\bMac OS X\b")),
    ("Linux", re.compile(r"\bLinux\b")),
]


def user_agent_label(header: str | None) -> str:
    """ "<browser> on <system>", as much of it as the header tells, or "unknown browser"."""
    header = (header or "")[:512]
    browser = next((name for name, pattern in BROWSERS if pattern.search(header)), None)
    system = next((name for name, pattern in SYSTEMS if pattern.search(header)), None)
    if browser and system:
        return f"{browser} on {system}"
    return browser or (f"a browser on {system}" if system else "unknown browser")
