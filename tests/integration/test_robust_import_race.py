"""An operator's import or create racing the same person's first sign-in, against the real Redis: one
profile never ends up with two subjects, the loser is refused and says why, and a refused import
writes nothing. Run 50 times each, from two threads, at the store and end to end (a real sign-in at
the dev provider against `flask users import`)."""

import json
import threading
import time

import pytest
import requests

from app import create_app
from app.extensions import services
from app.store.profile_import import ImportCounts, ImportRecord, ImportRefused
from app.store.profiles import SubjectClash
from config import Config
from dev import oidc_driver
from tests.helpers.real_services import PASSWORD, delete_prefix, integration_env
from tests.helpers.signin import callback_path, start_login

pytestmark = pytest.mark.integration

ROUNDS = 50
STATS = {"steam": {"hours_played": 7}}
SIGNIN_SUB, IMPORT_SUB = "first-sign-in-sub", "imported-sub"
ALICE_SUB = "e3b3e97f-427a-427a-b5e4-c3f4200b05c5"  # alice at the dev provider (dev/demo-users.json)
REFUSED_IMPORT = (
    " while this import ran; nothing was imported, run it again",  # the write found the profile changed
    "is linked to another subject; use --relink to change it",  # the sign-in had already linked it
    "is linked to an account; a record for it must name its subject",
    "already exists",  # users create
)


@pytest.fixture
def two_processes(idp, redis_url):
    """Two app instances over one Redis key prefix, as an operator's CLI and a web process are."""
    env = integration_env(idp, redis_url)
    yield create_app(Config(env)), create_app(Config(env))
    delete_prefix(redis_url, env["REDIS_KEY_PREFIX"])


def at_once(*actions):
    """Run `actions` in threads released together; each one's result or the exception it raised."""
    start, results = threading.Barrier(len(actions)), [None] * len(actions)

    def run(index, action):
        start.wait()
        try:
            results[index] = action()
        except Exception as error:  # the outcome under test
            results[index] = error

    threads = [threading.Thread(target=run, args=(index, action)) for index, action in enumerate(actions)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    return results


def links_to(redis, prefix: str, username: str, *subs) -> list[str]:
    """Which of `subs` have a subject link pointing at `username`."""
    return [sub for sub in subs if redis.get(f"{prefix}sub:{sub}") == username.encode()]


def stored(app, username: str):
    with app.app_context():
        return services().store.profiles.get(username)


def first_sign_in(app, username: str):
    """What a first sign-in (or a first user token) of `username`'s own subject does to find or make
    its profile."""
    with app.app_context():
        profiles = services().store.profiles
    return lambda: profiles.find_or_link_profile(SIGNIN_SUB + username, username, "First Sign-In")


def operator(app, username: str, variant: str):
    sub = None if variant == "import without sub" else IMPORT_SUB + username
    record = ImportRecord(username, {"stats": STATS}, sub)
    with app.app_context():
        run = services().store.profile_import.run
    return lambda: run([record], create=variant == "create")


@pytest.mark.parametrize("variant", ["import with sub", "import without sub", "create"])
def test_an_import_racing_a_first_sign_in_leaves_one_subject_and_a_clear_refusal(two_processes, redis, variant):
    web, cli = two_processes
    prefix, outcomes = (
        web.config["REDIS_KEY_PREFIX"],
        {"sign-in won": 0, "of which refused at write": 0, "import won": 0},
    )
    for round_ in range(ROUNDS):
        username = f"racer{round_}"
        subs = (SIGNIN_SUB + username, IMPORT_SUB + username)
        signed_in, imported = at_once(first_sign_in(web, username), operator(cli, username, variant))
        profile = stored(web, username)
        if isinstance(imported, ImportRefused):
            outcomes["sign-in won"] += 1
            outcomes["of which refused at write"] += imported.reason.endswith(REFUSED_IMPORT[0])
            assert imported.reason.endswith(REFUSED_IMPORT), imported.reason
            assert signed_in.username == username and profile.sub == SIGNIN_SUB + username
            assert profile.stats == {}  # nothing of the refused import was written
            assert links_to(redis, prefix, username, *subs) == [SIGNIN_SUB + username]
        else:
            outcomes["import won"] += 1
            assert imported == ImportCounts(created=1) and isinstance(signed_in, SubjectClash), signed_in
            assert signed_in.message in (
                "this account's username belongs to another account",
                f"the username {username} is taken by a profile not yet linked to an account; an operator must link it",
            )
            assert profile.sub == (None if variant == "import without sub" else IMPORT_SUB + username)
            assert profile.stats == STATS
            expected = [] if variant == "import without sub" else [IMPORT_SUB + username]
            assert links_to(redis, prefix, username, *subs) == expected
    print(f"{variant}: {outcomes}")


def test_an_import_without_sub_never_touches_a_profile_linked_to_someone(two_processes, redis, tmp_path):
    web, _ = two_processes
    with web.app_context():
        services().store.profiles.link_subject(SIGNIN_SUB, "kate", "Kate")
    key = f"{web.config['REDIS_KEY_PREFIX']}user:{{kate}}"
    before = redis.hgetall(key)
    path = tmp_path / "users.json"
    path.write_text(json.dumps([{"username": "kate", "stats": STATS, "display_name": "Someone Else"}]))
    result = web.test_cli_runner().invoke(args=["users", "import", str(path)])
    assert result.exit_code == 1
    assert (
        "record 0: field 'sub': profile kate is linked to an account; a record for it must name its subject"
        in result.output
    )
    assert redis.hgetall(key) == before


def test_a_refused_record_undoes_the_records_written_before_it(two_processes, redis, tmp_path):
    web, _ = two_processes
    prefix = web.config["REDIS_KEY_PREFIX"]
    records = [ImportRecord("early", {"stats": STATS}, "early-sub"), ImportRecord("late", {"stats": STATS})]
    with web.app_context():
        importer = services().store.profile_import
        planned = [importer._plan(index, record, False, False, {}, None) for index, record in enumerate(records)]
        assert importer._apply(planned[0], importer._write_all(planned[:1])[0]) is None
        services().store.profiles.link_subject(SIGNIN_SUB, "late", "Late")  # the sign-in between the writes
        refused = importer._apply(planned[1], importer._write_all(planned[1:])[0])
        assert refused == (
            "username",
            "profile late was created by a first sign-in while this import ran; nothing was imported, run it again",
        )
        importer._revert(planned[0])
    assert redis.exists(f"{prefix}user:{{early}}") == 0 and redis.get(f"{prefix}sub:early-sub") is None


@pytest.fixture
def fresh_apps(idp, redis_url):
    """Builds apps over the real Redis and provider with no profile yet: every sign-in is a first one."""
    prefixes = []

    def build():
        env = integration_env(idp, redis_url)
        prefixes.append(env["REDIS_KEY_PREFIX"])
        return create_app(Config(env))

    yield build
    for prefix in prefixes:
        delete_prefix(redis_url, prefix)


def sign_in_and_import(app, path, *, delay: float):
    """Alice's first real sign-in (from the callback on) and `flask users import path` at once."""
    client = app.test_client()
    callback = oidc_driver.login_at_idp(requests.Session(), start_login(client), "alice", PASSWORD)
    runner = app.test_cli_runner()
    return at_once(
        lambda: client.get(callback_path(callback)),
        # The sign-in first exchanges its code at the provider: the import starts up to 45 ms late.
        lambda: time.sleep(delay) or runner.invoke(args=["users", "import", str(path)]),
    )


def test_flask_users_import_racing_alices_first_real_sign_in_leaves_one_subject(fresh_apps, redis, tmp_path):
    path = tmp_path / "users.json"
    path.write_text(json.dumps([{"username": "alice", "sub": IMPORT_SUB, "stats": STATS}]))
    outcomes = {"sign-in won": 0, "of which refused at write": 0, "import won": 0}
    for round_ in range(ROUNDS):
        fresh_app = fresh_apps()
        prefix = fresh_app.config["REDIS_KEY_PREFIX"]
        signed_in, imported = sign_in_and_import(fresh_app, path, delay=round_ % 10 * 0.005)
        profile = stored(fresh_app, "alice")
        assert len(links_to(redis, prefix, "alice", ALICE_SUB, IMPORT_SUB)) == 1
        if signed_in.status_code == 302:
            outcomes["sign-in won"] += 1
            assert imported.exit_code == 1 and "record 0: field " in imported.output, imported.output
            outcomes["of which refused at write"] += "while this import ran; nothing was imported" in imported.output
            assert profile.sub == ALICE_SUB and profile.stats == {}
        else:
            outcomes["import won"] += 1
            assert imported.exit_code == 0, imported.output
            assert signed_in.status_code == 403
            assert "this account&#39;s username belongs to another account" in signed_in.get_data(as_text=True)
            assert profile.sub == IMPORT_SUB and profile.stats == STATS
    print(f"end to end: {outcomes}")
