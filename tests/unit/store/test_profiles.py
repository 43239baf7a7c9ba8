"""Profiles on fakeredis: which names are usernames, the public read, disabling an account, and a subject
linked elsewhere while it signed in."""

import pytest

from app.store.import_plan import ImportCounts, ImportRecord
from app.store.keys import Keys
from app.store.profile_import import ProfileImport
from app.store.profile_record import Profile, normalize_username
from app.store.profiles import NoProfile, Profiles, SubjectClash

KEYS = Keys("t:")


@pytest.fixture
def profiles(fake_redis):
    return Profiles(fake_redis, KEYS)


@pytest.mark.parametrize(
    ("raw", "username"),
    [
        ("alice", "alice"),
        ("Alice", "alice"),
        ("a.b_c-d9", "a.b_c-d9"),
        ("x" * 64, "x" * 64),
        ("x" * 65, None),
        ("", None),
        ("alice smith", None),
        ("alice@example.com", None),
        ("../alice", None),
        (42, None),
        (None, None),
    ],
)
def test_only_short_lowercase_ascii_words_are_usernames(raw, username):
    assert normalize_username(raw) == username


def test_the_public_read_of_an_unknown_user_is_none(profiles):
    assert profiles.get_public("nobody") is None


def test_the_public_read_leaves_out_the_private_stats(profiles):
    profiles.put(Profile("alice", "@alice", "Alice", stats={"pokes_sent": 3}, aggregate_scores={"karma": 7}))
    public = profiles.get_public("alice")
    assert (public.handle, public.aggregate_scores, public.stats) == ("@alice", {"karma": 7}, {})


@pytest.mark.parametrize(("stored", "display_name"), [({"display_name": "Bob"}, "Bob"), ({}, "bob")])
def test_a_profile_stored_without_a_handle_or_name_is_public_under_its_username(
    profiles, fake_redis, stored, display_name
):
    fake_redis.hset(KEYS.user("bob"), mapping={"username": "bob", **stored})
    public = profiles.get_public("bob")
    assert (public.username, public.handle, public.display_name) == ("bob", "bob", display_name)


def test_disabling_an_unknown_user_says_so_and_creates_nothing(profiles, fake_redis):
    assert profiles.set_disabled("nobody", True) is False
    assert fake_redis.exists(KEYS.user("nobody")) == 0


def test_an_account_can_be_disabled_and_enabled_again(profiles):
    profiles.put(Profile("alice", "@alice", "Alice"))
    assert profiles.set_disabled("alice", True) is True
    assert profiles.get("alice").disabled is True
    assert profiles.set_disabled("alice", False) is True
    assert profiles.get("alice").disabled is False


def test_a_new_subject_without_a_username_claim_is_refused_and_nothing_is_written(profiles, fake_redis):
    with pytest.raises(NoProfile, match="subject sub-dan has no profile and no username claim"):
        profiles.find_or_link_username("sub-dan", None, "Dan")
    assert fake_redis.keys("*") == []


def test_an_import_finds_an_account_the_operator_enabled_again_as_its_file_says(profiles, fake_redis):
    importer = ProfileImport(fake_redis, KEYS, profiles)
    assert importer.run([ImportRecord("bob", {"disabled": False})]) == ImportCounts(created=1)
    profiles.set_disabled("bob", True)
    profiles.set_disabled("bob", False)  # `users enable` and the import write "enabled" alike
    assert importer.run([ImportRecord("bob", {"disabled": False})]) == ImportCounts(unchanged=1)


def test_the_subject_link_memory_holds_as_many_links_as_it_is_told(fake_redis):
    profiles = Profiles(fake_redis, KEYS, link_cache_size=1)
    fake_redis.set(KEYS.subject("sub-1"), "alice")
    fake_redis.set(KEYS.subject("sub-2"), "bob")
    assert (profiles.linked_username("sub-1"), profiles.linked_username("sub-2")) == ("alice", "bob")
    fake_redis.delete(KEYS.subject("sub-1"))
    assert profiles.linked_username("sub-1") is None  # pushed out by sub-2's link: read again


def test_a_link_made_by_one_process_is_found_by_another_without_linking(fake_redis):
    assert Profiles(fake_redis, KEYS).find_or_link_username("sub-carol", "Carol", "Carol C") == "carol"
    assert Profiles(fake_redis, KEYS).linked_username("sub-carol") == "carol"


def test_a_subject_linked_to_another_profile_while_it_signed_in_is_told_to_sign_in_again(profiles, fake_redis):
    fake_redis.set(KEYS.subject("sub-carol"), "caroline")  # another process linked it after this one looked
    with pytest.raises(SubjectClash) as clash:
        profiles.link_subject("sub-carol", "Carol", "Carol C")
    assert clash.value.message == "this account was linked to another profile while it signed in; sign in again"
    assert clash.value.log_line() == (
        "subject sub-carol was linked to profile caroline while it signed in as carol; the sign-in changed nothing"
    )
    assert fake_redis.exists(KEYS.user("carol")) == 0  # the profile it made for the sign-in is undone
    assert fake_redis.get(KEYS.subject("sub-carol")) == b"caroline"


def test_an_unclaimed_profile_is_not_claimed_unless_the_operator_allows_it(profiles, fake_redis):
    fake_redis.hset(KEYS.user("kate"), mapping=Profile("kate", "@kate", "Kate").to_hash())  # imported without sub
    with pytest.raises(SubjectClash) as clash:
        profiles.link_subject("sub-kate", "Kate", "Kate K")
    assert clash.value.message == (
        "the username kate is taken by a profile not yet linked to an account; an operator must link it"
    )
    assert profiles.get("kate") == Profile("kate", "@kate", "Kate")
    assert fake_redis.exists(KEYS.subject("sub-kate")) == 0


def test_an_unclaimed_profile_claimed_by_a_subject_linked_elsewhere_meanwhile_is_unclaimed_again(fake_redis):
    profiles = Profiles(fake_redis, KEYS, link_unclaimed=True)
    fake_redis.hset(KEYS.user("kate"), mapping=Profile("kate", "@kate", "Kate").to_hash())  # imported without sub
    fake_redis.set(KEYS.subject("sub-kate"), "katherine")
    with pytest.raises(SubjectClash) as clash:
        profiles.link_subject("sub-kate", "Kate", "Kate K")
    assert clash.value.linked_to == "katherine"
    assert profiles.get("kate") == Profile("kate", "@kate", "Kate")  # kept, and nobody's again


def test_a_profile_naming_its_subject_without_a_link_is_linked_at_sign_in(profiles, fake_redis):
    # An import stopped between writing the profile and its link leaves the profile naming the subject alone.
    fake_redis.hset(KEYS.user("carol"), mapping=Profile("carol", "@carol", "Carol", sub="sub-carol").to_hash())
    assert profiles.link_subject("sub-carol", "Carol", "Carol C") == "carol"
    assert fake_redis.get(KEYS.subject("sub-carol")) == b"carol"
    assert profiles.get("carol") == Profile("carol", "@carol", "Carol", sub="sub-carol")


# what an operator does to the profile right after the sign-in claimed it -> (the owner then, the message)
MEANWHILE = {
    "relinks it to another subject": (
        "operator-sub",
        "this account's username belongs to another account",
    ),
    "takes its subject away": (
        None,
        "the username carol is taken by a profile not yet linked to an account; an operator must link it",
    ),
}


@pytest.mark.parametrize("case", MEANWHILE)
def test_a_profile_an_operator_changed_between_the_claim_and_the_link_is_not_linked(
    profiles, fake_redis, monkeypatch, case
):
    owner, message = MEANWHILE[case]
    claim = profiles._claim

    def claim_then_the_operator(*args, **kwargs):
        claimed = claim(*args, **kwargs)
        if owner:
            fake_redis.hset(KEYS.user("carol"), "sub", owner)
        else:
            fake_redis.hdel(KEYS.user("carol"), "sub")
        return claimed

    monkeypatch.setattr(profiles, "_claim", claim_then_the_operator)
    with pytest.raises(SubjectClash) as clash:
        profiles.link_subject("sub-carol", "Carol", "Carol C")
    assert (clash.value.owner, clash.value.message) == (owner, message)
    assert clash.value.log_line().startswith("username carol is taken: subject sub-carol, owner ")
    assert fake_redis.exists(KEYS.subject("sub-carol")) == 0  # the link it had just made is undone
    assert profiles.linked_username("sub-carol") is None
