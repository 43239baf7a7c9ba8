"""A malformed token record in the real Redis ends its session (401 / signed out, the record removed,
never a 500) on every session call, for a session signed in through the real dev provider."""

import json

import pytest
import requests

from tests.helpers.malformed_records import MALFORMATIONS, SESSION_CALLS
from tests.helpers.signin import cookie_value, signed_in_client, token_key

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("call", SESSION_CALLS)
@pytest.mark.parametrize("malformation", MALFORMATIONS)
def test_a_malformed_token_record_in_redis_signs_the_session_out_and_is_removed(app, redis, malformation, call):
    client = signed_in_client(app, "alice", requests.Session())
    cookie = cookie_value(client, app.config["SESSION_COOKIE_NAME"])
    env = {name: app.config[name] for name in ("REDIS_KEY_PREFIX", "SECRET_KEY")}
    key = token_key(env, cookie)
    stored = json.loads(redis.get(key))
    redis.set(key, MALFORMATIONS[malformation](stored, app.config["SECRET_KEY"], cookie), keepttl=True)
    request, answered_as_signed_out = SESSION_CALLS[call]
    response = request(client)
    assert answered_as_signed_out(response), (response.status_code, response.get_data(as_text=True)[:200])
    assert redis.get(key) is None
    assert client.get("/auth/session").json == {"authenticated": False}
