"""A stand-in for the provider-facing LoginClient, with the interface SessionTokens uses: discover()
and refresh(). Each call can be given a behaviour, so a test can stage a race at an exact point."""

import itertools
import threading
from collections.abc import Callable

from app.auth.oidc import RefreshRejected
from app.errors import ProviderUnavailable


class FakeLoginClient:
    """Answers refreshes with numbered tokens (`at-1`, `rt-1`, ...) unless told otherwise."""

    def __init__(self, *, expires_in: int = 300):
        self.expires_in = expires_in
        self.refreshed_with: list[str] = []
        self.discover_down = False
        self.refresh_answer: str = "tokens"  # or "invalid_grant", "unavailable"
        self.before_discover: Callable[[], None] | None = None
        self.during_refresh: Callable[[], None] | None = None
        self._numbers = itertools.count(1)
        self._lock = threading.Lock()

    def discover(self) -> None:
        if self.before_discover:
            self.before_discover()
        if self.discover_down:
            raise ProviderUnavailable("discovery: ConnectionError")

    def refresh(self, refresh_token: str) -> dict:
        with self._lock:
            self.refreshed_with.append(refresh_token)
            number = next(self._numbers)
        if self.during_refresh:
            self.during_refresh()
        if self.refresh_answer == "invalid_grant":
            raise RefreshRejected()
        if self.refresh_answer == "unavailable":
            raise ProviderUnavailable("token endpoint: ConnectionError")
        return {
            "access_token": f"at-{number}",
            "refresh_token": f"rt-{number}",
            "expires_in": self.expires_in,
            "scope": "openid svc:profile.private",
        }
