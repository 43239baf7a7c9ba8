"""Every Redis key the service uses, built here and only here, under a configurable prefix.

Each command touches exactly one of these keys, so a Redis Cluster can serve any of them; the
scripts that touch several (a poke, a browser's pending sign-ins) find them in one slot through a
hash tag (`{target}`, `{browser tag}`).
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

    def pending_login(self, browser_tag: str, login_id: str) -> str:
        # It shares its browser's hash tag (see logins); the id is a digest, the state stays out of Redis.
        return f"{self.prefix}login:{{{browser_tag}}}:{login_id}"

    def pending_logins_of(self, browser_tag: str) -> str:
        return f"{self.prefix}logins:{{{browser_tag}}}"

    def pending_logins(self) -> str:
        return f"{self.prefix}pending-logins"

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

    def dpop_proof(self, jti_digest: str) -> str:
        return f"{self.prefix}dpop-jti:{jti_digest}"

    def token_checks_of(self, client: str) -> str:
        return f"{self.prefix}token-checks:{client}"

    def token_checks(self) -> str:
        return f"{self.prefix}token-checks"

    def active_sessions(self) -> str:
        return f"{self.prefix}sessions:active"

    def rate_limits(self) -> str:
        # Flask-Limiter's: each of its counters is `<this>:LIMITER/<client>/<endpoint>/<limit>`.
        return f"{self.prefix}limits"
