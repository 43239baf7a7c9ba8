"""Exceptions of the domain; app.error_responses turns each into the contract's body and headers."""

REALM = "profile-poke"
RETRY_AFTER_UNAVAILABLE = "5"
SESSION_ENDED = "the session has ended; sign in again"
PROVIDER_BUSY = "the identity provider is busy; try again later"


class ApiError(Exception):
    """An error answered with the JSON envelope `{"error": {"code", "message"}}`."""

    status = 500
    code = "internal_error"

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message

    def headers(self) -> dict[str, str]:
        return {}

    def members(self) -> dict:
        """Members the envelope's `error` object carries beside `code` and `message`."""
        return {}


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


class Unavailable(ApiError):
    status, code = 503, "unavailable"

    def headers(self) -> dict[str, str]:
        return {"Retry-After": RETRY_AFTER_UNAVAILABLE}


class EndpointNotConfigured(Unavailable):
    """The provider's documents name no endpoint that the configured mode needs, and no setting does:
    a misconfiguration, so the message names the setting rather than an outage."""

    def __init__(self, endpoint: str, setting: str):
        super().__init__(f"the identity provider lists no {endpoint}; set {setting}")
        self.endpoint, self.setting = endpoint, setting


class NotFound(ApiError):
    status, code = 404, "not_found"


class SubjectUnknown(InvalidToken):
    """An active token whose provider names no subject, in its introspection answer nor at userinfo;
    `reason` (for the log) says what userinfo did."""

    def __init__(self, reason: str):
        super().__init__("the provider names no subject for this access token")
        self.reason = reason


class RetryLater(ApiError):
    """A bound reached: the answer's `Retry-After` says in how many seconds to try again."""

    def __init__(self, message: str, retry_after: int):
        super().__init__(message)
        self.retry_after = retry_after

    def headers(self) -> dict[str, str]:
        return {**super().headers(), "Retry-After": str(self.retry_after)}


class TooManyTokenChecks(RetryLater):
    """One client, or its network, sent more unknown tokens than the provider may be asked about: 429."""

    status, code = 429, "too_many_requests"

    def __init__(self, retry_after: int, *, network: bool = False):
        where = "network" if network else "address"  # the client's own bound, or one of its networks'
        super().__init__(f"too many unknown access tokens from this {where}; try again later", retry_after)


class TooManyDpopProofs(RetryLater):
    """One DPoP key sent more proofs than RATE_LIMIT_DPOP_PROOFS allows: 429."""

    status, code = 429, "too_many_requests"

    def __init__(self, retry_after: int):
        super().__init__("too many DPoP proofs signed with this key; try again later", retry_after)


class TokenChecksExhausted(RetryLater, Unavailable):
    """Every client together sent more unknown tokens than the provider may be asked about, and so did
    this client's network: 503."""

    def __init__(self, retry_after: int):
        super().__init__(PROVIDER_BUSY, retry_after)


class ProviderBusy(RetryLater, Unavailable):
    """The provider asked every instance to stop calling it (429 or 503 with Retry-After): 503 until then
    for each token it would have to answer; answers already known are served as before."""

    def __init__(self, retry_after: int):
        super().__init__(PROVIDER_BUSY, retry_after)


class BadLogoutToken(Exception):
    """A back-channel logout token that is refused: 400 `{"error": "invalid_request", ...}`. `reason` is
    the fixed code its backchannel.refused audit event carries (one of app.audit.BACKCHANNEL_REFUSALS),
    with the token's `sub` once its signature and claims were verified."""

    def __init__(self, message: str, reason: str, *, sub: str | None = None):
        super().__init__(message)
        self.reason, self.sub = reason, sub


class ProviderUnavailable(Exception):
    """The identity provider could not be reached or answered nonsense."""


class UnknownUser(Exception):
    """GET /users/{username} for a user that does not exist: the contract's plain-text 404."""


class PokeFailed(Exception):
    """A refused poke, answered with the contract's `{"success": false, "error": ...}` body."""

    status = 400

    def __init__(self, message: str, status: int = 400, retry_after: int | None = None, outcome: str = "invalid"):
        super().__init__(message)
        self.message, self.status, self.retry_after = message, status, retry_after
        self.outcome = outcome  # what the metrics count it as: invalid, self, unknown_target or cooldown


class LoginFailed(Exception):
    """A browser sign-in step that cannot go on; shown as a page, or JSON to a fetch. `reason` is the
    fixed code its signin.failed audit event carries (one of app.audit.SIGNIN_FAILURES), with the
    user's `sub` (from a verified ID token) and `user` (their profile) when the step knew them."""

    def __init__(
        self,
        message: str,
        status: int = 400,
        code: str = "login_failed",
        *,
        reason: str = "refused",
        sub: str | None = None,
        user: str | None = None,
    ):
        super().__init__(message)
        self.message, self.status, self.code, self.reason = message, status, code, reason
        self.sub, self.user = sub, user
