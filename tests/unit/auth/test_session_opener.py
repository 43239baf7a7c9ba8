"""Which replaced session keeps its refresh token at the provider when a new sign-in takes its browser:
only one that may share the new session's provider session (the same user, the same or an unknown
`sid`), whose revocation would end the new session's grant too."""

import pytest

from app.auth.opener import may_share_provider_session


@pytest.mark.parametrize(
    ("replaced", "sub", "provider_sid", "shared"),
    [
        ({"sub": "alice", "provider_sid": "s1"}, "bob", "s1", False),  # another user: never their grant
        ({"sub": "alice", "provider_sid": None}, "bob", None, False),
        ({"sub": "alice", "provider_sid": "s1"}, "alice", "s2", False),  # a provider session of its own
        ({"sub": "alice", "provider_sid": "s1"}, "alice", "s1", True),  # single sign-on, a step-up
        ({"sub": "alice", "provider_sid": None}, "alice", "s2", True),  # no sid to compare: maybe shared
        ({"sub": "alice", "provider_sid": "s1"}, "alice", None, True),
        ({"sub": "alice"}, "alice", "s2", True),  # a record from before provider_sid was kept
    ],
)
def test_a_replaced_session_may_share_the_provider_session_only_with_a_sign_in_of_its_own_user(
    replaced, sub, provider_sid, shared
):
    assert may_share_provider_session(replaced, sub, provider_sid) is shared
