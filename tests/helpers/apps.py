"""Apps for the fast tests: a configured app over a given (fake) Redis."""

import fakeredis

from app import create_app
from app.extensions import services
from app.store.profile_record import Profile
from config import Config
from tests.helpers.settings import app_env


def app_with_alice(issuer: str, redis, **env):
    """An app that trusts `issuer`, on `redis`, with Alice's profile linked to her subject `user-sub-1`."""
    app = create_app(Config(app_env(issuer, **env)), redis=redis)
    with app.app_context():
        services().store.profiles.put(Profile("alice", "@alice", "Alice Liddell", sub="user-sub-1"))
    return app


def introspecting_app(issuer: str, **env):
    """app_with_alice validating access tokens by RFC 7662 introspection at `issuer`, on a fresh fake Redis."""
    settings = {
        "ACCESS_TOKEN_VALIDATION": "introspection",
        "INTROSPECTION_CLIENT_ID": "api",
        "INTROSPECTION_CLIENT_SECRET": "api-secret",
        **env,
    }
    return app_with_alice(issuer, fakeredis.FakeRedis(), **settings)
