"""A stand-in for the provider-facing LoginClient, with the interface SessionTokens uses: discover()
and refresh(). Each call can be given a behaviour, so a test can stage a race at an exact point."""

import itertools
import threading
from collections.abc import Callable

from app.errors import LoginFailed, ProviderUnavailable
from app.provider.login_client import RefreshRejected


class FakeLoginClient:
    """Answers refreshes with numbered tokens (`at-1`, `rt-1`, ...) unless told otherwise."""

    def __init__(self, *, expires_in: int = 300):
        self.expires_in = expires_in
        self.refreshed_with: list[str] = []
        self.discover_down = False
        self.refresh_answer: str = "tokens"  # or "invalid_grant", "unavailable"
        self.id_token_claims: dict | None = None  # set: refreshes carry an ID token with these claims
        self.id_token_problem: str | None = None  # set: verify_id_token refuses with this reason
        self.verified: list[tuple[str, str | None]] = []
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
            raise RefreshRejected("invalid_grant")
        if self.refresh_answer == "unavailable":
            raise ProviderUnavailable("token endpoint: ConnectionError")
        response = {
            "access_token": f"at-{number}",
            "refresh_token": f"rt-{number}",
            "expires_in": self.expires_in,
            "scope": "openid svc:profile.private",
        }
        return {**response, "id_token": f"idt-{number}"} if self.id_token_claims is not None else response

    def verify_id_token(self, id_token: str, *, nonce: str | None) -> dict:
        self.verified.append((id_token, nonce))
        if self.id_token_problem:
            raise LoginFailed(f"the ID token was refused: {self.id_token_problem}", status=502)
        return self.id_token_claims
