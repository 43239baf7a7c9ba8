"""Every Redis key the service uses, built here and only here, under a configurable prefix.

Each command touches exactly one of these keys, so a Redis Cluster can serve any of them; the one
script that reads two (a poke) finds both in one slot through the `{target}` hash tag.
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

    def pending_login(self, state: str) -> str:
        return f"{self.prefix}login:{state}"

    def session(self, session_ref: str) -> str:
        return f"{self.prefix}session:{session_ref}"

    def token_set(self, session_ref: str) -> str:
        return f"{self.prefix}tokens:{session_ref}"

    def refresh_lock(self, session_ref: str) -> str:
        return f"{self.prefix}refresh-lock:{session_ref}"

    def active_sessions(self) -> str:
        return f"{self.prefix}sessions:active"
