"""A pending sign-in is stored small, as [verifier, binding digest, return_to, prompt, max_age]; a record of any other
shape (an older version's, or written by hand) counts as no sign-in: 400, never a 500."""

import json
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest

from app.extensions import services
from tests.helpers.apps import app_with_alice
from tests.helpers.pages import error_page_message

UNKNOWN = "this sign-in is unknown, already used or expired; please sign in again"
OLDER_SHAPE = {"verifier": "v" * 86, "nonce": "n" * 43, "return_to": "/", "binding": "b" * 64, "redirect_uri": "/"}


@pytest.fixture
def app(op, fake_redis):
    return app_with_alice(op.issuer, fake_redis)


def started(client) -> tuple[str, str]:
    """Start a sign-in; its state and the Redis key of its pending record."""
    state = parse_qs(urlsplit(client.get("/auth/login").headers["Location"]).query)["state"][0]
    with client.application.app_context():
        return state, services().store.logins.key(state)


def test_a_pending_sign_in_keeps_only_the_verifier_a_binding_digest_return_to_prompt_and_max_age(app, fake_redis):
    _, key = started(app.test_client())
    verifier, binding, return_to, prompt, max_age = json.loads(fake_redis.get(key))
    assert (len(verifier), len(binding), return_to, prompt, max_age) == (43, 43, "/", "", "")
    assert len(fake_redis.get(key)) < 110


@pytest.mark.parametrize(
    "record", [OLDER_SHAPE, ["v" * 43, "b" * 43, "/"], ["v" * 43, 5, "/", "", ""], ["v" * 43, "b" * 43], "text", None]
)
def test_a_pending_record_of_another_shape_counts_as_an_unknown_sign_in(app, fake_redis, record):
    client = app.test_client()
    state, key = started(client)
    fake_redis.set(key, json.dumps(record), keepttl=True)
    response = client.get(f"/auth/callback?{urlencode({'state': state, 'code': 'a-code'})}")
    assert (response.status_code, error_page_message(response)) == (400, UNKNOWN)
