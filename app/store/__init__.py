"""Redis state: profiles, subject links, pokes and their cooldowns, sign-in states used, session token
sets, the DPoP proofs seen and the introspection answers."""

from collections.abc import Callable

from .introspections import Introspections
from .keys import Keys
from .logins import UsedStates
from .pokes import Pokes
from .profile_import import ProfileImport
from .profiles import Profiles
from .proofs import SeenProofs
from .replicas import ConfirmedWrites
from .session_index import SessionIndex
from .tokensets import TokenSets


class Store:
    """One app's view of Redis, each concern behind its own object."""

    def __init__(
        self,
        redis,
        prefix: str,
        *,
        link_unclaimed_profiles: bool = False,
        dpop_proofs_per_key: str = "600 per minute",
        wait_timeout_ms: int = 0,
        on_unconfirmed: Callable[[str], None] = lambda write: None,
    ):
        """`wait_timeout_ms` bounds the wait for a replica to confirm a write a failover must not lose (0:
        none); `on_unconfirmed` hears of each such write no replica confirmed in time."""
        self.redis = redis
        self.keys = Keys(prefix)
        self.confirmed = ConfirmedWrites(redis, timeout_ms=wait_timeout_ms, on_unconfirmed=on_unconfirmed)
        self.profiles = Profiles(redis, self.keys, link_unclaimed=link_unclaimed_profiles)
        self.profile_import = ProfileImport(redis, self.keys, self.profiles)
        self.pokes = Pokes(redis, self.keys, self.confirmed)
        self.used_states = UsedStates(redis, self.keys)
        self.token_sets = TokenSets(redis, self.keys, self.confirmed)
        self.session_index = SessionIndex(redis, self.keys, self.confirmed)
        self.seen_proofs = SeenProofs(redis, self.keys, per_key=dpop_proofs_per_key)
        self.introspections = Introspections(redis, self.keys)
