"""An operator's import or create racing a first sign-in, against the real Redis, 50 rounds each, from
two threads: at the store, and end to end (alice's real sign-in at the dev provider against
`flask users import`, with the same and with other usernames and subjects, over a Redis connection
that adds 0-2 ms to every command, the import started ever closer to the moment the sign-in links).
After every round a SCAN of Redis finds no subject on two profiles and no profile on two subjects, and
the loser changed nothing and said why. tests/integration/test_robust_import_interleavings.py puts
each side in each gap of the other."""

import json
import random
import threading
import time
from collections import Counter

import pytest
import redis as redis_py
import requests

from app import create_app
from app.extensions import services
from app.store.profile_import import ImportCounts, ImportRecord, ImportRefused
from app.store.profiles import SubjectClash
from config import Config
from dev import oidc_driver
from tests.helpers.profile_links import one_subject_one_profile
from tests.helpers.real_services import PASSWORD, delete_prefix, integration_env
from tests.helpers.signin import callback_path, start_login

pytestmark = pytest.mark.integration

ROUNDS = 50
STATS = {"steam": {"hours_played": 7}}
SIGNIN_SUB, IMPORT_SUB = "first-sign-in-sub", "imported-sub"
ALICE_SUB = "e3b3e97f-427a-427a-b5e4-c3f4200b05c5"  # alice at the dev provider (dev/demo-users.json)
CHANGED = " while this import ran; nothing was imported, run it again"
# Why an import is refused, and why a sign-in is (403 forbidden).
CREATED_MEANWHILE = f"profile alice was created by a first sign-in{CHANGED}"
LINKED_MEANWHILE = f"subject was linked to profile alice{CHANGED}"
IMPORT_REASONS = (
    CREATED_MEANWHILE,
    LINKED_MEANWHILE,
    "profile alice is linked to another subject; use --relink to change it",
    "subject is linked to profile alice",
)
TAKEN = "this account's username belongs to another account"
UNCLAIMED = "the username alice is taken by a profile not yet linked to an account; an operator must link it"
SUBJECT_MOVED = "this account was linked to another profile while it signed in; sign in again"


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


def first_sign_in(app, username: str):
    """What a first sign-in (or a first user token) of `username`'s own subject does to find or make
    its profile."""
    with app.app_context():
        profiles = services().store.profiles
    return lambda: profiles.find_or_link_profile(SIGNIN_SUB + username, username, "First Sign-In")


def operator(app, username: str, variant: str):
    sub = {"import without sub": None, "import for another username": SIGNIN_SUB + username}.get(
        variant, IMPORT_SUB + username
    )
    record = ImportRecord(record_name(variant, username), {"stats": STATS}, sub)
    with app.app_context():
        run = services().store.profile_import.run
    return lambda: run([record], create=variant == "create")


def record_name(variant: str, username: str) -> str:
    return f"other-{username}" if variant == "import for another username" else username


@pytest.mark.parametrize("variant", ["import with sub", "import without sub", "import for another username", "create"])
def test_an_import_racing_a_first_sign_in_leaves_one_subject_and_a_clear_refusal(two_processes, redis, variant):
    web, cli = two_processes
    prefix, outcomes = web.config["REDIS_KEY_PREFIX"], Counter()
    for round_ in range(ROUNDS):
        username = f"racer{round_}"
        signed_in, imported = at_once(first_sign_in(web, username), operator(cli, username, variant))
        owners, _ = one_subject_one_profile(redis, prefix)
        refused = imported if isinstance(imported, ImportRefused) else None
        clash = signed_in if isinstance(signed_in, SubjectClash) else None
        said = (refused.reason if refused else "imported", clash.message if clash else "signed in")
        outcomes[tuple(text.replace(username, "X") for text in said)] += 1
        assert refused or imported in (ImportCounts(created=1), ImportCounts(updated=1)), imported
        assert clash or signed_in.sub == SIGNIN_SUB + username, signed_in
        assert refused or stats_in(redis, prefix)[record_name(variant, username)] == STATS
        assert not (refused and clash)  # one of them wins
        if refused:  # nothing of the refused import was written
            assert refused.reason.endswith(("already exists", CHANGED, "--relink to change it", f"profile {username}"))
            assert STATS not in (stats_in(redis, prefix).get(key) for key in (username, f"other-{username}"))
        if clash:
            assert clash.message in (TAKEN, UNCLAIMED.replace("alice", username), SUBJECT_MOVED)
            assert owners.get(username) != SIGNIN_SUB + username  # the sign-in's own profile: not made, not claimed
    print(f"{variant}: {dict(outcomes)}")


def stats_in(redis, prefix: str) -> dict:
    """Each profile's stats by username, read by SCAN."""
    return {
        key.decode()[len(f"{prefix}user:{{") : -1]: json.loads(redis.hget(key, "stats") or "{}")
        for key in redis.scan_iter(match=f"{prefix}user:*", count=500)
    }


def test_a_refused_record_undoes_the_records_written_before_it(two_processes, redis):
    web, _ = two_processes
    prefix = web.config["REDIS_KEY_PREFIX"]
    records = [ImportRecord("early", {"stats": STATS}, "early-sub"), ImportRecord("late", {"stats": STATS})]
    with web.app_context():
        importer = services().store.profile_import
        planned = [importer._plan(index, record, False, False, {}, None) for index, record in enumerate(records)]
        assert importer._apply(planned[0], importer._write_all(planned[:1])[0]) is None
        services().store.profiles.link_subject(SIGNIN_SUB, "late", "Late")  # the sign-in between the writes
        refused = importer._apply(planned[1], importer._write_all(planned[1:])[0])
        assert refused == ("username", f"profile late was created by a first sign-in{CHANGED}")
        importer._revert(planned[0])
    assert one_subject_one_profile(redis, prefix) == ({"late": SIGNIN_SUB}, {SIGNIN_SUB: "late"})


@pytest.fixture
def slow_redis_network(monkeypatch):
    """Every Redis command this process sends leaves 0-2 ms late, as over a busy network: the few
    commands of a sign-in's link and an import's write then interleave in many orders."""
    send = redis_py.connection.AbstractConnection.send_packed_command

    def late(self, command, check_health=True):
        time.sleep(random.uniform(0, 0.002))
        return send(self, command, check_health)

    monkeypatch.setattr(redis_py.connection.AbstractConnection, "send_packed_command", late)


class KeysFetched:
    """Watches for a sign-in's fetch of the provider's signing keys (the dev provider's `/certs`), its
    last call to the provider before it links a subject, so that an import started then meets its Redis
    steps rather than the provider's varying answer times; the answer reaches the sign-in `hold`
    seconds late, as over a slow network."""

    def __init__(self):
        self.event, self.hold = threading.Event(), 0.0

    def watch(self, send):
        def watched(session, request, **kwargs):
            response = send(session, request, **kwargs)
            if request.url.endswith("/protocol/openid-connect/certs"):
                self.event.set()
                time.sleep(self.hold)
            return response

        return watched


@pytest.fixture
def keys_fetched(monkeypatch):
    watcher = KeysFetched()
    monkeypatch.setattr(requests.Session, "send", watcher.watch(requests.Session.send))
    return watcher


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


# Which side went first, by what came of a round: the import starts later after a round it began
# too early, and earlier after one it began too late, so the rounds close in on where the steps of the
# two sides interleave.
IMPORT_FIRST, INTERLEAVED, SIGN_IN_FIRST, EITHER = 1, 0, -1, None
# Per record: what may come of it (what the import said, what the sign-in got: the user it signed in
# as, or the message of its 403), which profile each subject has then, and which side went first.
RACES = {
    "the same username for another subject": (
        {"username": "alice", "sub": IMPORT_SUB, "stats": STATS},
        {
            ("imported", TAKEN): ({"alice": IMPORT_SUB}, IMPORT_FIRST),
            (CREATED_MEANWHILE, "alice"): ({"alice": ALICE_SUB}, INTERLEAVED),
            (IMPORT_REASONS[2], "alice"): ({"alice": ALICE_SUB}, SIGN_IN_FIRST),
        },
    ),
    "the same username without sub": (
        {"username": "alice", "stats": STATS},
        {
            # The signed-in user's profile, updated and still linked.
            ("imported", "alice"): ({"alice": ALICE_SUB}, SIGN_IN_FIRST),
            ("imported", UNCLAIMED): ({"alice": None}, IMPORT_FIRST),
            (CREATED_MEANWHILE, "alice"): ({"alice": ALICE_SUB}, INTERLEAVED),
        },
    ),
    "another username for the same subject": (
        {"username": "alias", "sub": ALICE_SUB, "stats": STATS},
        {
            ("imported", "alias"): ({"alias": ALICE_SUB}, IMPORT_FIRST),  # imported before the sign-in looked
            ("imported", SUBJECT_MOVED): ({"alias": ALICE_SUB}, INTERLEAVED),
            (LINKED_MEANWHILE, "alice"): ({"alice": ALICE_SUB}, INTERLEAVED),
            (IMPORT_REASONS[3], "alice"): ({"alice": ALICE_SUB}, SIGN_IN_FIRST),
        },
    ),
    "the same username and subject": (
        {"username": "alice", "sub": ALICE_SUB, "stats": STATS},
        {
            ("imported", "alice"): ({"alice": ALICE_SUB}, EITHER),
            (CREATED_MEANWHILE, "alice"): ({"alice": ALICE_SUB}, INTERLEAVED),
        },
    ),
}
STEP = 0.0005  # seconds the import's start moves after each round


def sign_in_and_import(app, client, path, keys: KeysFetched, delay: float):
    """Alice's first real sign-in (from the callback on) and `flask users import path`, started `delay`
    seconds after the sign-in has the provider's keys (a new app fetches them at its first sign-in), or
    -`delay` seconds before the sign-in goes on with them."""
    callback = oidc_driver.login_at_idp(requests.Session(), start_login(client), "alice", PASSWORD)
    runner = app.test_cli_runner()
    keys.event.clear()
    keys.hold = max(0.0, -delay)

    def import_then():
        keys.event.wait(timeout=10)
        time.sleep(max(0.0, delay))
        return runner.invoke(args=["users", "import", str(path)])

    return at_once(lambda: client.get(callback_path(callback)), import_then)


def told(text: str, known) -> str:
    """Which of the `known` messages `text` says (the whole text when none)."""
    return next((message for message in known if message in text), text)


@pytest.mark.parametrize(("record", "outcomes"), list(RACES.values()), ids=list(RACES))
def test_flask_users_import_racing_alices_first_real_sign_in_leaves_one_subject_per_profile(
    fresh_apps, redis, tmp_path, slow_redis_network, keys_fetched, record, outcomes
):
    path = tmp_path / "users.json"
    path.write_text(json.dumps([record]))
    seen, delay = Counter(), 0.0
    for _ in range(ROUNDS):
        app = fresh_apps()
        prefix, client = app.config["REDIS_KEY_PREFIX"], app.test_client()
        signed_in, imported = sign_in_and_import(app, client, path, keys_fetched, delay + random.uniform(-STEP, STEP))
        owners, _ = one_subject_one_profile(redis, prefix)
        page = signed_in.get_data(as_text=True).replace("&#39;", "'")
        user = client.get("/auth/session").json.get("user") if signed_in.status_code == 302 else None
        outcome = (
            "imported" if imported.exit_code == 0 else told(imported.output, IMPORT_REASONS),
            user or told(page, (TAKEN, UNCLAIMED, SUBJECT_MOVED)),
        )
        seen[outcome] += 1
        assert outcome in outcomes, (outcome, imported.output)
        assert imported.exit_code == 0 or "record 0: field " in imported.output
        assert signed_in.status_code in (302, 403)
        expected, first = outcomes[outcome]
        assert owners == expected
        delay += STEP * (random.choice((-1, 1)) if first is EITHER else first)
        stats = stats_in(redis, prefix)
        written = [key for key, value in stats.items() if value == STATS]
        assert written == ([record["username"]] if imported.exit_code == 0 else [])
    print(f"{record}: {dict(seen)}; the import last started {delay * 1000:+.1f} ms from the keys")
