"""Every Redis key the service uses, built here and only here, under a configurable prefix.

Each command touches exactly one of these keys, so a Redis Cluster can serve any of them; the
scripts that touch several (a poke) find them in one slot through a hash tag (`{target}`).
"""


class Keys:
    """Builds key names under `prefix`."""

    def __init__(self, prefix: str):
        self.prefix = prefix

    def user(self, username: str) -> str:
        return f"{self.prefix}user:{{{username}}}"

    def subject(self, sub: str) -> str:
        return f"{self.prefix}sub:{sub}"

    def cooldown(self, poker: str, target: str) -> str:
        return f"{self.prefix}cooldown:{{{target}}}:{poker}"

    def used_state(self, login_id: str) -> str:
        # The id is a digest: the state itself stays out of Redis.
        return f"{self.prefix}login-used:{login_id}"

    def session(self, session_ref: str) -> str:
        return f"{self.prefix}session:{session_ref}"

    def token_set(self, session_ref: str) -> str:
        return f"{self.prefix}tokens:{session_ref}"

    def refresh_lock(self, session_ref: str) -> str:
        return f"{self.prefix}refresh-lock:{session_ref}"

    def session_end(self, session_ref: str) -> str:
        return f"{self.prefix}session-end:{session_ref}"

    def sessions_of_subject(self, sub: str) -> str:
        return f"{self.prefix}sessions-of:{sub}"

    def sessions_of_provider_session(self, provider_sid: str) -> str:
        return f"{self.prefix}sessions-of-sid:{provider_sid}"

    def logout_token(self, jti: str) -> str:
        return f"{self.prefix}logout-jti:{jti}"

    def dpop_proofs(self, jkt: str) -> str:
        # A key's proof ids and its count share the thumbprint's hash tag (see proofs).
        return f"{self.prefix}dpop-jti:{{{jkt}}}"

    def dpop_proof_count(self, jkt: str) -> str:
        return f"{self.prefix}dpop-rate:{{{jkt}}}"

    def token_checks_of(self, client: str) -> str:
        return f"{self.prefix}token-checks:{client}"

    def token_checks(self) -> str:
        return f"{self.prefix}token-checks"

    def introspection(self, token_digest: str) -> str:
        return f"{self.prefix}introspection:{token_digest}"

    def introspection_backoff(self) -> str:
        return f"{self.prefix}introspection-backoff"

    def active_sessions(self) -> str:
        return f"{self.prefix}sessions:active"

    def rate_limits(self) -> str:
        # Flask-Limiter's: each of its counters is `<this>:LIMITER/<client>/<endpoint>/<limit>`.
        return f"{self.prefix}limits"
