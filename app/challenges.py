"""The API's 401 and 403: each carries its `WWW-Authenticate: Bearer` challenge (RFC 6750 section 3; RFC
9470 section 3 for a step-up), which app.error_responses sends with the error's envelope."""

from .errors import ApiError

REALM = "profile-poke"
SESSION_ENDED = "the session has ended; sign in again"


class _BearerError(ApiError):
    """A 401 or 403, which always carries `WWW-Authenticate: Bearer` (RFC 6750 section 3)."""

    def challenge(self) -> str:
        return f'Bearer realm="{REALM}"'

    def headers(self) -> dict[str, str]:
        return {"WWW-Authenticate": self.challenge()}


class Unauthorized(_BearerError):
    """No credentials on a route that needs them: the challenge has no error attribute."""

    status, code = 401, "unauthorized"


class InvalidToken(_BearerError):
    status, code = 401, "invalid_token"

    def challenge(self) -> str:
        return f'Bearer realm="{REALM}", error="invalid_token", error_description="{self.message}"'


class InsufficientScope(_BearerError):
    status, code = 403, "insufficient_scope"

    def __init__(self, scope: str):
        super().__init__(f"scope {scope} required")
        self.scope = scope

    def challenge(self) -> str:
        return f'Bearer realm="{REALM}", error="insufficient_scope", scope="{self.scope}"'


class InsufficientUserAuthentication(_BearerError):
    """A sign-in too weak or too old for the action (RFC 9470): the client signs in again with
    `acr_values` / `max_age` and retries."""

    status, code = 401, "insufficient_user_authentication"

    def __init__(self, message: str, *, acr_values: str | None, max_age: int | None, reason: str = "acr"):
        super().__init__(message)
        self.acr_values, self.max_age = acr_values, max_age
        self.reason = reason  # what fell short, for the stepup.refused audit event: acr, max_age, no_auth_time

    def parameters(self) -> str:
        """The challenge's auth-params (RFC 9470 3), for whichever scheme the client used."""
        wanted = f', acr_values="{self.acr_values}"' if self.acr_values else ""
        fresh = f', max_age="{self.max_age}"' if self.max_age is not None else ""
        return f'error="{self.code}", error_description="{self.message}"{wanted}{fresh}'

    def challenge(self) -> str:
        return f'Bearer realm="{REALM}", {self.parameters()}'

    def members(self) -> dict:
        wanted = {"acr_values": self.acr_values} if self.acr_values else {}
        return {**wanted, **({"max_age": self.max_age} if self.max_age is not None else {})}


class SessionEnded(Unauthorized):
    """The browser session behind a cookie is gone (ended, expired, or its tokens refused)."""

    def __init__(self):
        super().__init__(SESSION_ENDED)


class Forbidden(_BearerError):
    """Valid credentials that may not do this: an application token, a disabled account, no CSRF header."""

    status, code = 403, "forbidden"

    def challenge(self) -> str:
        return f'Bearer realm="{REALM}", error_description="{self.message}"'


class SubjectUnknown(InvalidToken):
    """An active token whose provider names no subject, in its introspection answer nor at userinfo;
    `reason` (for the log) says what userinfo did."""

    def __init__(self, reason: str):
        super().__init__("the provider names no subject for this access token")
        self.reason = reason
