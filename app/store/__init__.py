"""Redis state: profiles, subject links, pokes and their cooldowns, sign-in states used, session token
sets, the DPoP proofs seen and the introspection answers."""

from .introspections import Introspections
from .keys import Keys
from .logins import UsedStates
from .pokes import Pokes
from .profile_import import ProfileImport
from .profiles import Profiles
from .proofs import SeenProofs
from .session_index import SessionIndex
from .tokensets import TokenSets


class Store:
    """One app's view of Redis, each concern behind its own object."""

    def __init__(
        self, redis, prefix: str, *, link_unclaimed_profiles: bool = False, dpop_proofs_per_key: str = "600 per minute"
    ):
        self.redis = redis
        self.keys = Keys(prefix)
        self.profiles = Profiles(redis, self.keys, link_unclaimed=link_unclaimed_profiles)
        self.profile_import = ProfileImport(redis, self.keys, self.profiles)
        self.pokes = Pokes(redis, self.keys)
        self.used_states = UsedStates(redis, self.keys)
        self.token_sets = TokenSets(redis, self.keys)
        self.session_index = SessionIndex(redis, self.keys)
        self.seen_proofs = SeenProofs(redis, self.keys, per_key=dpop_proofs_per_key)
        self.introspections = Introspections(redis, self.keys)
