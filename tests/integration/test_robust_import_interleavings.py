"""`flask users import` landing in each gap of alice's first real sign-in at the dev provider (and her
sign-in in each gap of the import), against the real Redis: whichever side wins, no subject ends up
on two profiles and no profile on two subjects, and the loser changes nothing and says why. The other
side's whole step runs right after (or right before) one Redis script of this side; nothing of either
side is replaced."""

import json

import pytest
import requests

from app import create_app
from app.extensions import services
from config import Config
from dev import oidc_driver
from tests.helpers.profile_links import one_subject_one_profile
from tests.helpers.real_services import PASSWORD, delete_prefix, integration_env
from tests.helpers.signin import callback_path, signed_in_client, start_login

pytestmark = pytest.mark.integration

ALICE_SUB = "e3b3e97f-427a-427a-b5e4-c3f4200b05c5"  # alice at the dev provider (dev/demo-users.json)
IMPORT_SUB = "imported-sub"
STATS = {"steam": {"hours_played": 7}}
CREATED = '{"created": 1, "updated": 0, "unchanged": 0}'  # what a successful import prints
UPDATED = '{"created": 0, "updated": 1, "unchanged": 0}'
LINKED_MEANWHILE = "this account was linked to another profile while it signed in; sign in again"
TAKEN = "this account&#39;s username belongs to another account"
CHANGED = "while this import ran; nothing was imported, run it again"
ALIAS_RECORD = {"username": "alias", "sub": ALICE_SUB, "stats": STATS}
OTHER_SUBJECT = {"username": "alice", "sub": IMPORT_SUB, "stats": STATS}
WITHOUT_SUB = {"username": "alice", "stats": STATS}

# (the gap: the sign-in's claim of its username or the import's write of its profile, and whether the
# other side runs after or before it; the record; --relink; what the import prints; the sign-in's
# status and message; which profile each subject has afterwards)
CASES = {
    "an import links the subject between the sign-in's claim and its link": (
        ("claim", "after"), ALIAS_RECORD, False, CREATED, (403, LINKED_MEANWHILE), {"alias": ALICE_SUB},
    ),
    "the sign-in links the subject between the import's write and its link": (
        ("write", "after"), ALIAS_RECORD, False,
        f"record 0: field 'sub': subject was linked to profile alice {CHANGED}", (302, None), {"alice": ALICE_SUB},
    ),
    "the sign-in links the subject just before the import's write": (
        ("write", "before"), ALIAS_RECORD, False,
        f"record 0: field 'sub': subject was linked to profile alice {CHANGED}", (302, None), {"alice": ALICE_SUB},
    ),
    "an import for another subject between the claim and the link": (
        ("claim", "after"), OTHER_SUBJECT, False,
        "record 0: field 'sub': profile alice is linked to another subject; use --relink to change it",
        (302, None), {"alice": ALICE_SUB},
    ),
    "a relink between the claim and the link": (
        ("claim", "after"), OTHER_SUBJECT, True, UPDATED, (403, TAKEN), {"alice": IMPORT_SUB},
    ),
    "the sign-in between the import's write for another subject and its link": (
        ("write", "after"), OTHER_SUBJECT, False, CREATED, (403, TAKEN), {"alice": IMPORT_SUB},
    ),
    "a record without sub between the claim and the link": (
        ("claim", "after"), WITHOUT_SUB, False, UPDATED, (302, None), {"alice": ALICE_SUB},
    ),
    "the sign-in just before the write of a record without sub": (
        ("write", "before"), WITHOUT_SUB, False,
        f"record 0: field 'username': profile alice was created by a first sign-in {CHANGED}",
        (302, None), {"alice": ALICE_SUB},
    ),
}  # fmt: skip


@pytest.fixture
def two_processes(idp, redis_url):
    """A web app and an operator's CLI over one Redis key prefix, with no profile yet."""
    env = integration_env(idp, redis_url)
    yield create_app(Config(env)), create_app(Config(env))
    delete_prefix(redis_url, env["REDIS_KEY_PREFIX"])


def in_the_gap(monkeypatch, owner, script: str, when: str, other) -> list:
    """Run `other` whole right `when` ("after" or "before") owner's Redis script `script` next runs;
    returns the list its result goes into."""
    original, results = getattr(owner, script), []

    def gap(*args, **kwargs):
        monkeypatch.setattr(owner, script, original)
        if when == "before":
            results.append(other())
        outcome = original(*args, **kwargs)
        if when == "after":
            results.append(other())
        return outcome

    monkeypatch.setattr(owner, script, gap)
    return results


def stats_of(redis, prefix: str, username: str):
    raw = redis.hget(f"{prefix}user:{{{username}}}", "stats")
    return json.loads(raw) if raw else None


@pytest.mark.parametrize(
    ("gap", "record", "relink", "imported", "answer", "owners"), list(CASES.values()), ids=list(CASES)
)
def test_whichever_side_wins_the_loser_changes_nothing_and_says_why(
    two_processes, redis, tmp_path, monkeypatch, audit_lines, gap, record, relink, imported, answer, owners
):
    web, cli = two_processes
    prefix = web.config["REDIS_KEY_PREFIX"]
    path = tmp_path / "users.json"
    path.write_text(json.dumps([record]))
    client = web.test_client()
    callback = callback_path(oidc_driver.login_at_idp(requests.Session(), start_login(client), "alice", PASSWORD))

    def import_it():
        return cli.test_cli_runner().invoke(args=["users", "import", *(["--relink"] if relink else []), str(path)])

    (step, when), store = gap, (web if gap[0] == "claim" else cli).extensions["profile_poke"].store
    if step == "claim":
        other = in_the_gap(monkeypatch, store.profiles, "_claim", when, import_it)
        signed_in = client.get(callback)
        result = other[0]
    else:
        other = in_the_gap(monkeypatch, store.profile_import, "_write_all", when, lambda: client.get(callback))
        result = import_it()
        signed_in = other[0]

    assert one_subject_one_profile(redis, prefix) == (owners, {sub: user for user, sub in owners.items()})
    assert imported in result.output, result.output
    assert result.exit_code == (0 if imported in (CREATED, UPDATED) else 1)
    status, message = answer
    assert signed_in.status_code == status, signed_in.get_data(as_text=True)
    if message:
        assert message in signed_in.get_data(as_text=True)
        assert [event["reason"] for event in audit_lines.events("signin.failed")] == ["subject_clash"]
    written = stats_of(redis, prefix, record["username"]) == STATS
    assert written is (result.exit_code == 0)  # a refused import wrote none of its fields


def test_the_sign_in_that_lost_its_subject_to_an_import_lands_on_the_imported_profile_next_time(
    two_processes, redis, tmp_path, monkeypatch
):
    web, cli = two_processes
    path = tmp_path / "users.json"
    path.write_text(json.dumps([ALIAS_RECORD]))
    client = web.test_client()
    callback = callback_path(oidc_driver.login_at_idp(requests.Session(), start_login(client), "alice", PASSWORD))
    in_the_gap(
        monkeypatch,
        web.extensions["profile_poke"].store.profiles,
        "_claim",
        "after",
        lambda: cli.test_cli_runner().invoke(args=["users", "import", str(path)]),
    )
    assert client.get(callback).status_code == 403
    assert signed_in_client(web, "alice").get("/auth/session").json["user"] == "alias"


def test_re_importing_scores_by_username_updates_a_signed_in_users_profile_and_keeps_the_link(
    two_processes, redis, tmp_path
):
    web, cli = two_processes
    client = signed_in_client(web, "alice")
    path = tmp_path / "users.json"
    path.write_text(json.dumps([{"username": "alice", "aggregate_scores": {"overall": 99}}]))
    result = cli.test_cli_runner().invoke(args=["users", "import", str(path)])
    assert result.exit_code == 0, result.output
    with cli.app_context():
        assert services().store.profiles.get("alice").sub == ALICE_SUB
    assert one_subject_one_profile(redis, web.config["REDIS_KEY_PREFIX"]) == (
        {"alice": ALICE_SUB},
        {ALICE_SUB: "alice"},
    )
    assert client.get("/api/v1/me/profile", headers={"X-CSRF": "1"}).json["data"]["aggregate_scores"] == {"overall": 99}
