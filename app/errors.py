"""Exceptions of the domain (the API's 401 and 403, with their challenges, are app.challenges'): 404, the
bounds' 429 and 503 with `Retry-After`, a sign-in step, the provider, a logout token, a poke and an unknown
user. app.error_responses turns each into its body and headers (how Redis fails is app.redis_failures')."""

RETRY_AFTER_UNAVAILABLE = "5"
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
